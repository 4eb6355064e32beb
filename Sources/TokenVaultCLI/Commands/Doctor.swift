import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct Doctor: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "doctor",
            abstract: "Check the setup, one line per check, each with what to fix.",
            discussion: """
                Works whatever state the setup is in, a broken config included, and never \
                prompts. Checks the config (each provider table), the backend choice, the D-Bus \
                session and the Secret Service (reachable, locked, how long it took), the file \
                vault (path, permissions, format, key cached), the runtime and cache \
                directories, the etcd cluster when one is configured, the shell completions, \
                and the stored credentials (a login required, a refresh token that dies soon). \
                --network also asks each configured provider's token endpoint (or issuer) and \
                compares the clock of its Date header with this one. Exits 0 when all is \
                well, 2 when a check failed.
                """)

        @Flag(help: "Also reach each configured provider, and compare its clock with this one.")
        var network = false

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var colour: ColorOptions

        enum Status: String { case ok, failed, info }

        struct Check {
            var name: String
            var status: Status
            var detail: String
            var fix: String?
        }

        func run(in context: Context) throws {
            let settings = context.settings
            var checks: [Check] = []
            func add(_ name: String, _ status: Status, _ detail: String, fix: String? = nil) {
                checks.append(Check(name: name, status: status, detail: detail, fix: fix))
            }

            // The config: read here, not through a context, so a broken one is a line, not the end.
            let configPath = settings.configPath
            var config: Config?
            do {
                let c = try Config.load(settings)
                config = c
                let exists = FileManager.default.fileExists(atPath: configPath)
                add("config", .ok, exists ? "\(configPath), \(c.providers.count) provider table\(c.providers.count == 1 ? "" : "s")"
                    : "\(configPath) does not exist: the defaults apply")
                for (name, error) in c.brokenProviders.sorted(by: { $0.key < $1.key }) {
                    add("provider \(name)", .failed, error.errorText, fix: "fix that line; until then only provider \(name) cannot be used")
                }
                if let problem = c.etcdProblem { add("[etcd]", .failed, problem.errorText, fix: "fix that line of the [etcd] table") }
            } catch {
                add("config", .failed, error.errorText, fix: (error as? TokenVaultError)?.hint ?? "edit \(configPath)")
            }
            var backends = Backends(settings: settings)
            backends.interactive = false
            backends.config = { config ?? Config() }

            // The backend choice.
            let choice: BackendChoice?
            do {
                let (c, chosenBy) = try settings.backend { config ?? Config() }
                choice = c
                add("backend", .ok, "\(c.rawValue) (set by \(chosenBy.rawValue))")
            } catch {
                choice = nil
                add("backend", .failed, error.errorText, fix: (error as? TokenVaultError)?.hint)
            }
            let usesSecretService = choice == .auto || choice == .secretService

            // D-Bus and the Secret Service.
            if let missing = SecretServiceStore.missingBus(settings) {
                add("d-bus", usesSecretService && choice == .secretService ? .failed : .info, missing,
                    fix: usesSecretService ? "the file vault is used; for the Secret Service, run in a desktop session (or dbus-run-session)" : nil)
            } else {
                add("d-bus", .ok, "session bus \(settings.sessionBus ?? "at \(settings.runtimeBus)")")
                let started = DispatchTime.now()
                let probe = SecretServiceStore.probe(settings, timeout: (try? settings.dbusTimeout) ?? 3, detailed: true)
                let ms = (DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000
                if !probe.available {
                    add("secret service", choice == .secretService ? .failed : .info, "\(probe.detail) (\(ms) ms)",
                        fix: choice == .secretService ? "start gnome-keyring (or another Secret Service), or set backend = \"file\"" : nil)
                } else if probe.locked == true {
                    add("secret service", usesSecretService ? .failed : .info, "\(probe.detail), default collection locked (\(ms) ms)",
                        fix: usesSecretService ? "unlock the keyring (log in to the desktop, or seahorse)" : nil)
                } else {
                    add("secret service", .ok, "\(probe.detail), \(probe.locked == false ? "default collection unlocked" : "collection state unknown") (\(ms) ms)")
                }
            }

            // The file vault.
            do {
                let vault = try backends.fileVault()
                let health = vault.health()
                if let problem = health.problem {
                    add("file vault", .failed, problem.errorText, fix: problem.hint)
                } else if !health.exists {
                    add("file vault", .info, "\(vault.path): not created yet")
                } else {
                    let ttl = try settings.keyTTL
                    let key = ttl == 0 ? "key not cached (\(EnvironmentVariable.keyTTL.name)=0)" : health.keyCached ? "key cached" : "key not cached"
                    add("file vault", .ok, "\(vault.path), format \(health.formatVersion ?? 0), private, \(key)")
                }
            } catch {
                add("file vault", .failed, error.errorText, fix: (error as? TokenVaultError)?.hint)
            }

            // Directories tokenvault keeps locks, the spool and the discovery cache in.
            for (name, path) in [("runtime directory", settings.runtimeDirectory),
                                 ("discovery cache", Discovery.defaultDirectory(settings))] {
                if let problem = PrivateDirectory.problem(path) {
                    add(name, .failed, problem, fix: "run: chmod 700 \(ShellWord.word(path)) (and make it yours), or remove it")
                } else {
                    add(name, .ok, path)
                }
            }

            // etcd, when configured.
            if choice == .etcd || config?.etcd != nil {
                do {
                    let store = try backends.etcdStore()
                    for e in store.endpointReport() {
                        add("etcd \(e.endpoint)", e.reached ? .ok : .failed, e.state,
                            fix: e.reached ? nil : "check the endpoint, the network and ca_file in [etcd]")
                    }
                    add("etcd auth", .info, store.settings.username.map { "user \($0)" } ?? "none")
                } catch {
                    add("etcd", .failed, error.errorText, fix: (error as? TokenVaultError)?.hint)
                }
            }

            // Shell completions (information: a missing one breaks nothing).
            let home = settings.home
            let completions: [(String, [String])] = [
                ("bash", ["/usr/local/share/bash-completion/completions/tokenvault", "/usr/share/bash-completion/completions/tokenvault",
                          home + "/.local/share/bash-completion/completions/tokenvault"]),
                ("zsh", ["/usr/local/share/zsh/site-functions/_tokenvault", "/usr/share/zsh/vendor-completions/_tokenvault"]),
                ("fish", ["/usr/local/share/fish/vendor_completions.d/tokenvault.fish", "/usr/share/fish/vendor_completions.d/tokenvault.fish",
                          home + "/.config/fish/completions/tokenvault.fish"]),
            ]
            for (shell, paths) in completions {
                if let found = paths.first(where: { FileManager.default.fileExists(atPath: $0) }) {
                    add("\(shell) completion", .ok, found)
                } else {
                    add("\(shell) completion", .info, "not installed",
                        fix: "make install, or: tokenvault --generate-completion-script \(shell) > FILE")
                }
            }

            // The stored credentials: only where they can be read without a prompt.
            if let choice {
                checkCredentials(choice, backends: backends, config: config ?? Config(), add: add)
            }

            if network, let config {
                checkProviders(config, add: add)
            }

            let failed = checks.filter { $0.status == .failed }.count
            if json {
                Output.json(.object([
                    "ok": .bool(failed == 0),
                    "checks": .array(checks.map { c in
                        var o: [String: JSONValue] = ["check": .string(c.name), "status": .string(c.status.rawValue), "detail": .string(c.detail)]
                        o["fix"] = c.fix.map { .string($0) } ?? .null
                        return .object(o)
                    }),
                ]))
            } else {
                for c in checks {
                    let mark = Terminal.paint(c.status == .ok ? "✓" : c.status == .failed ? "✗" : "-",
                                              c.status == .ok ? .green : c.status == .failed ? .red : nil, on: colour.enabled)
                    Output.value("\(mark) \(c.name): \(c.detail)" + (c.fix.map { " — fix: \($0)" } ?? ""))
                }
                Output.value(failed == 0 ? "all is well" : "\(failed) check\(failed == 1 ? "" : "s") failed")
            }
            if failed > 0 { throw ExitCode(2) }
        }

        /// Credentials that need a login now or soon.
        func checkCredentials(_ choice: BackendChoice, backends: Backends, config: Config,
                              add: (String, Status, String, String?) -> Void) {
            let rows: [StoredCredential]
            do {
                rows = try backends.open(choice).listLocated()
            } catch {
                add("credentials", .info, "not checked: \(error.errorText)", nil)
                return
            }
            let directory = ProviderDirectory(config: config)
            let now = SystemClock().now
            let minValid = config.minValidSeconds
            let warnBefore = config.warnBeforeSeconds
            var bad = 0
            for r in rows {
                let c = r.credential
                let status = CredentialStatus(of: c, now: now, minValid: minValid, grant: { directory.grant(of: $0) })
                if status.state == .loginRequired {
                    bad += 1
                    add("credential \(c.id)", .failed, "login required" + (c.refusal.map { ": \($0.reason)" } ?? ""),
                        c.loginHint.replacing("run: ", with: ""))
                } else if c.refreshToken != nil, let at = c.refreshExpiresAt, warnBefore > 0, at - now < warnBefore {
                    bad += 1
                    add("credential \(c.id)", .failed, "its refresh token dies \(at > now ? "in \(Format.ago(at - now))" : "now")",
                        c.loginHint.replacing("run: ", with: ""))
                }
            }
            if bad == 0 { add("credentials", .ok, "\(rows.count) stored, none needs a login", nil) }
        }

        /// Each configured provider's token endpoint (or issuer) reached, and its clock compared.
        func checkProviders(_ config: Config, add: (String, Status, String, String?) -> Void) {
            let transport = CurlTransport(timeout: config.httpTimeout)
            for (name, table) in config.providers.sorted(by: { $0.key < $1.key }) {
                guard let url = table.issuer.map({ Discovery.urls($0)[0] }) ?? table.token_url ?? table.access_token_url else { continue }
                let started = DispatchTime.now()
                do {
                    let r = try transport.send(HTTPRequest(method: "GET", url: url, headers: []))
                    let ms = (DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000
                    guard let at = r.dateSeconds else {
                        add("provider \(name)", .ok, "\(url) answered HTTP \(r.status) in \(ms) ms (no Date header to compare clocks)", nil)
                        continue
                    }
                    let skew = at - SystemClock().now
                    if abs(skew) > 60 {
                        add("provider \(name)", .failed, "\(url)'s clock differs from this one by \(skew) s", "set the clock (timedatectl set-ntp true)")
                    } else {
                        add("provider \(name)", .ok, "\(url) answered HTTP \(r.status) in \(ms) ms; clocks agree within \(abs(skew)) s", nil)
                    }
                } catch {
                    add("provider \(name)", .failed, error.errorText, "check the network and the provider's URLs in \(Settings().configPath)")
                }
            }
        }
    }
}
