import Dispatch
import FoundationEssentials
import Glibc

/// `doctor`'s checks, each one line: what it found, and the fix. None of them
/// stops the others, and none prompts.
public final class DoctorChecks {
    public enum Status: String, Sendable { case ok, failed, info }

    public struct Check: Sendable {
        public var name: String
        public var status: Status
        public var detail: String
        public var fix: String?
    }

    let settings: Settings
    /// What the run decided once: the agent, the backend, the bus.
    let plan: Plan
    /// Where what the agent printed while it answered goes.
    let notices: Notices
    public private(set) var checks: [Check] = []
    /// The Secret Service answered with an unlocked default collection: a credential can be stored there.
    private var secretServiceStores = false

    public init(plan: Plan, notices: Notices) {
        self.plan = plan
        self.notices = notices
        settings = plan.settings
    }

    func add(_ name: String, _ status: Status, _ detail: String, fix: String? = nil) {
        checks.append(Check(name: name, status: status, detail: detail, fix: fix))
    }

    /// The config, read here and not through a context, so a broken one is a line, not the end.
    public func checkConfig() -> Config? {
        let configPath = settings.configPath
        do {
            let c = try Config.load(settings)
            let exists = FileManager.default.fileExists(atPath: configPath)
            // config.toml's own tables; those kept by logins live in providers.toml beside it.
            let own = c.providers.keys.filter { !c.discoveredProviders.contains($0) }.count
            let kept = c.discoveredProviders.count
            let keptText =
                kept == 0 ? "" : "; \(Format.count(kept, "provider")) kept in \(settings.discoveredProvidersPath)"
            add(
                "config", .ok,
                (exists
                    ? "\(configPath), \(Format.count(own, "provider table"))"
                    : "\(configPath) does not exist: the defaults apply") + keptText)
            // Every mistake of a table on a line of its own.
            for (name, error) in c.brokenProviders.sorted(by: { $0.key < $1.key }) {
                for mistake in error.mistakes {
                    add(
                        "provider \(name)", .failed, mistake,
                        fix: "fix that line; until then only provider \(name) cannot be used")
                }
            }
            if let problem = c.etcdProblem {
                for mistake in problem.mistakes {
                    add("[etcd]", .failed, mistake, fix: "fix that line of the [etcd] table")
                }
            }
            return c
        } catch {
            let hint = (error as? TokenVaultError)?.hint ?? "edit \(configPath)"
            for mistake in (error as? TokenVaultError)?.mistakes ?? [error.errorText] {
                add("config", .failed, mistake, fix: hint)
            }
            return nil
        }
    }

    /// The backend and who chose it; nil when the choice itself is wrong.
    public func checkBackend(_ config: Config?) -> BackendChoice? {
        do {
            let (choice, chosenBy) = try plan.backend { config ?? Config() }
            add("backend", .ok, "\(choice.rawValue) (set by \(chosenBy.rawValue))")
            return choice
        } catch {
            add("backend", .failed, error.errorText, fix: (error as? TokenVaultError)?.hint)
            return nil
        }
    }

    /// D-Bus and the Secret Service: failures only where the backend needs them.
    public func checkSecretService(_ choice: BackendChoice?) {
        let usesSecretService = choice == .auto || choice == .secretService
        if let missing = plan.missingBus {
            add(
                "d-bus", choice == .secretService ? .failed : .info, missing,
                fix: choice == .secretService
                    ? "start a Secret Service on a session bus, or set backend = \"file\" (docs/headless.md)"
                    : usesSecretService
                        ? (settings.desktop
                            ? "the file vault is used; for the Secret Service, run in a desktop session (or dbus-run-session)"
                            : "the file vault is used, as on any machine without a keyring; tokenvault init makes that the recorded choice (docs/headless.md)")
                        : nil)
            return
        }
        add("d-bus", .ok, "session bus \(settings.sessionBus ?? "at \(settings.runtimeBus)")")
        let started = DispatchTime.now()
        let probe = SecretServiceStore.probe(settings, timeout: (try? settings.dbusTimeout) ?? 3, detailed: true)
        let ms = (DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000
        if !probe.available, usesSecretService, probe.detail.contains(SecretServiceStore.notRunning) {
            // A bus that answers, and nobody on it keeps the credentials: nothing can store one
            // (auto never writes to the file vault in its place: docs/config.md, "A provider that quit").
            add(
                "secret service", .failed,
                "\(probe.detail): the keyring quit, or was never started (\(ms) ms)",
                fix:
                    "start the program that keeps your credentials (KeePassXC, gnome-keyring, KWallet); on a machine without one: tokenvault init (the file vault, recorded as the backend)"
            )
        } else if !probe.available {
            add(
                "secret service", choice == .secretService ? .failed : .info, "\(probe.detail) (\(ms) ms)",
                fix: choice == .secretService
                    ? "start gnome-keyring (or another Secret Service), or set backend = \"file\"" : nil)
        } else if probe.locked == nil {
            // No collection the `default` alias names: a write has nowhere to go.
            add(
                "secret service", usesSecretService ? .failed : .info,
                "\(probe.detail) answers, but no collection is its default one (\(ms) ms)",
                fix: usesSecretService ? (probe.provider ?? .other("its application")).defaultCollectionHint : nil)
        } else if probe.locked == true {
            add(
                "secret service", usesSecretService ? .failed : .info,
                "\(probe.detail), default collection locked (\(quoted(probe.collection)), \(ms) ms)",
                fix: usesSecretService
                    ? (probe.provider ?? .gnomeKeyring).unlockHint(desktop: settings.desktop)
                    : nil)
        } else {
            secretServiceStores = true
            add(
                "secret service", .ok,
                "\(probe.detail), default collection unlocked (\(quoted(probe.collection)), \(ms) ms)")
        }
    }

    /// A collection's label as messages show it.
    private func quoted(_ label: String?) -> String {
        // KeePassXC names a collection after its database, which may have no name.
        label.flatMap { $0.isEmpty ? nil : "\u{201C}\(OutsideText.line($0, limit: 80))\u{201D}" } ?? "(unnamed)"
    }

    /// The file vault: permissions, format, whether its key is cached; and,
    /// where it is where credentials go and is not created yet, whether
    /// anything here could create it (a passphrase source, a terminal):
    /// else nothing can store a credential, and the next `set` fails.
    public func checkFileVault(_ backends: Backends, choice: BackendChoice? = nil) {
        do {
            let vault = try backends.fileVault()
            let health = vault.health()
            if let problem = health.problem {
                add("file vault", .failed, problem.errorText, fix: problem.hint)
            } else if !health.exists {
                let writesHere = choice == .file || (choice == .auto && !secretServiceStores)
                if writesHere, !Posix.hasControllingTerminal, !PassphraseSource(settings: settings).isNonInteractive {
                    add(
                        "file vault", .failed,
                        "\(vault.path): not created yet, and nothing here can create it (no passphrase source, no terminal)"
                            + (choice == .auto
                                ? ", and no Secret Service stores credentials: nothing can store one" : ""),
                        fix: PassphraseSource.noVaultHint)
                } else {
                    add("file vault", .info, "\(vault.path): not created yet")
                }
            } else {
                var key =
                    try settings.keyTTL == 0
                    ? "key never cached (\(settings.keyTTLSource) 0)"
                    : health.keyCached ? "key cached" : "key not cached"
                if health.sealed { key += ", key sealed by the TPM" }
                add("file vault", .ok, "\(vault.path), format \(health.formatVersion ?? 0), private, \(key)")
            }
        } catch {
            add("file vault", .failed, error.errorText, fix: (error as? TokenVaultError)?.hint)
        }
    }

    /// The directories tokenvault keeps locks, the spool and the discovery cache in.
    public func checkDirectories() {
        for (name, path) in [
            ("runtime directory", settings.runtimeDirectory), ("discovery cache", Discovery.defaultDirectory(settings)),
        ] {
            if let problem = PrivateDirectory.problem(path) {
                add(
                    name, .failed, problem,
                    fix: "run: chmod 700 \(ShellWord.word(path)) (and make it yours), or remove it")
            } else {
                add(name, .ok, path)
            }
        }
    }

    /// Each etcd endpoint's answer, and the auth in use.
    public func checkEtcd(_ backends: Backends) {
        do {
            let store = try backends.etcdStore()
            for e in store.endpointReport() {
                add(
                    "etcd \(e.endpoint)", e.reached ? .ok : .failed, e.state,
                    fix: e.reached ? nil : "check the endpoint, the network and ca_file in [etcd]")
            }
            add("etcd auth", .info, store.settings.username.map { "user \($0)" } ?? "none")
        } catch {
            add("etcd", .failed, error.errorText, fix: (error as? TokenVaultError)?.hint)
        }
    }

    /// Shell completions (information: a missing one breaks nothing).
    public func checkCompletions() {
        let home = settings.home
        // Where bash-completion and fish look: XDG_DATA_HOME, then every directory of XDG_DATA_DIRS.
        let dataDirs =
            [settings[.xdgDataHome] ?? home + "/.local/share"]
            + (settings[.xdgDataDirs] ?? "/usr/local/share:/usr/share").split(separator: ":").map(String.init)
        let completions: [(String, [String])] = [
            ("bash", dataDirs.map { $0 + "/bash-completion/completions/tokenvault" }),
            (
                "zsh",
                dataDirs.flatMap {
                    [$0 + "/zsh/site-functions/_tokenvault", $0 + "/zsh/vendor-completions/_tokenvault"]
                }
            ),
            (
                "fish",
                [home + "/.config/fish/completions/tokenvault.fish"]
                    + dataDirs.map { $0 + "/fish/vendor_completions.d/tokenvault.fish" }
            ),
        ]
        for (shell, paths) in completions {
            if let found = paths.first(where: { FileManager.default.fileExists(atPath: $0) }) {
                add("\(shell) completion", .ok, found)
            } else {
                add(
                    "\(shell) completion", .info, "not installed",
                    fix: "make install, or: tokenvault --generate-completion-script \(shell) > FILE")
            }
        }
    }

    /// The agent (docs/agent.md): running for this setup, for another, gone, or not started.
    public func checkAgent() {
        let socket = AgentSocket.path(settings)
        let start = "tokenvault agent, or: systemctl --user enable --now tokenvault-agent.socket"
        guard settings.agentAllowed else {
            add(
                "agent", .info,
                "not asked (\(EnvironmentVariable.agent.name)=off): commands open the backend themselves")
            return
        }
        guard plan.agentAnswers else {
            if !settings.agentStartsOnUse {
                let why =
                    settings.isCI
                    ? "\(EnvironmentVariable.ci.name)=true: a CI job leaves no process behind"
                    : "\(EnvironmentVariable.agent.name)=manual"
                add(
                    "agent", .info,
                    "not running, and not started on first use (\(why)): commands open the backend themselves",
                    fix: start)
            } else if let config = try? Config.load(settings), !config.startsAgent {
                add(
                    "agent", .info,
                    "not running, and not started on first use (agent = false in \(settings.configPath)): commands open the backend themselves",
                    fix: start)
            } else {
                add(
                    "agent", .info, "not running: the next get, header, status or list starts it (started on first use)"
                )
            }
            return
        }
        guard let status = try? AgentClient.ask("status", [:], plan: plan, seconds: 2, notices: notices) else {
            add(
                "agent", .failed, "\(socket) is left by an agent that is gone: commands go direct",
                fix: "start it again: \(start)")
            return
        }
        let running =
            "running (process \(status["pid"]?.text ?? "?")\(status["started_on_use"] == .bool(true) ? ", started on first use" : "")), keeping \(Format.count(Int(status["kept"]?.text ?? "") ?? 0, "credential")) renewed, \(Format.count(Int(status["renewals"]?.text ?? "") ?? 0, "renewal"))"
        if status["same_scope"] == .bool(false) {
            let keys: [String] = {
                guard case .array(let a)? = status["differences"] else { return [] }
                return a.compactMap(\.string)
            }()
            let variables = keys.flatMap { Self.scopeVariables[$0] ?? [$0] }
            add(
                "agent", .failed,
                "\(running), but for another setup (\(differing(status))): this shell's commands go direct",
                fix:
                    "start the agent from this shell, so that it has this shell's \(variables.isEmpty ? "TOKENVAULT_* and XDG_* settings" : Format.list(variables)): tokenvault agent stop; tokenvault agent"
                    + (keys == ["bus"] ? " (an agent whose session bus has ended is replaced by the next get)" : "")
            )
            return
        }
        add("agent", .ok, running)
    }

    /// The variables each part of the agent's setup comes from.
    static let scopeVariables: [String: [String]] = [
        "bus": [EnvironmentVariable.dbusSessionBusAddress.name],
        "config": [EnvironmentVariable.config.name, EnvironmentVariable.xdgConfigHome.name],
        "vault": [EnvironmentVariable.vault.name, EnvironmentVariable.xdgDataHome.name],
        "cache": [EnvironmentVariable.xdgCacheHome.name],
        "key_ttl": [EnvironmentVariable.keyTTL.name],
    ]

    /// What differs between this shell's setup and the agent's, in words.
    private func differing(_ status: JSONValue) -> String {
        let names: [String: String] = [
            "config": "the config file", "vault": "the vault file", "cache": "the cache directory",
            "bus": "the session bus (\(EnvironmentVariable.dbusSessionBusAddress.name))",
            "key_ttl": EnvironmentVariable.keyTTL.name,
        ]
        guard case .array(let keys)? = status["differences"], !keys.isEmpty else {
            return "backend, files or session bus"
        }
        let differing = keys.compactMap(\.string).map { names[$0] ?? $0 }
        return Format.list(differing) + (differing.count == 1 ? " differs" : " differ")
    }

    /// Credentials that need a login now or soon.
    public func checkCredentials(_ choice: BackendChoice, backends: Backends, config: Config) {
        let rows: [StoredCredential]
        do {
            rows = try backends.open(choice).listLocated()
        } catch {
            add("credentials", .info, "not checked: \(error.errorText)")
            return
        }
        let directory = ProviderDirectory(config: config)
        let now = SystemClock().now
        var bad = 0
        // A record that cannot be read, a kept client registration too: the command that removes it.
        for c in rows.map(\.credential) where c.unusable != nil {
            bad += 1
            add(
                "record \(c.id)", .failed, "unusable: \(c.unusable ?? "")",
                fix: c.foreignItem
                    // Another application's item: tokenvault never deletes it (docs/security.md).
                    ? "it is another application's item: \(c.id.foreignItemRemoval)"
                    : "remove it: tokenvault delete \(ShellWord.word(c.service.description)) --account \(ShellWord.word(c.account))"
            )
        }
        let credentials = rows.filter { !$0.credential.id.isRegistration && $0.credential.unusable == nil }
        for c in credentials.map(\.credential) {
            let status = CredentialStatus(
                of: c, now: now, minValid: config.minValidSeconds, grant: { directory.grant(of: $0) })
            let fix = c.loginHint.replacing("run: ", with: "")
            if status.state == .loginRequired {
                bad += 1
                add(
                    "credential \(c.id)", .failed, "login required" + (c.refusal.map { ": \($0.reason)" } ?? ""),
                    fix: fix)
            } else if let at = CredentialAccess.refreshTokenDies(c, within: config.warnBeforeSeconds, now: now) {
                bad += 1
                add(
                    "credential \(c.id)", .failed,
                    "its refresh token dies \(at > now ? "in \(Format.ago(at - now))" : "now")", fix: fix)
            }
        }
        if bad == 0 { add("credentials", .ok, "\(credentials.count) stored, none needs a login") }
    }

    /// Each configured provider's token endpoint (or issuer) reached, and its clock compared.
    /// Each resource logged in to by its URL: its client, and how that client
    /// authenticates at the token endpoint (ClientAuthChoice, decided at login;
    /// a configured provider's `client_auth` wins).
    public func checkResourceClients(_ config: Config) {
        for name in config.discoveredProviders.sorted() {
            guard let table = config.providers[name], let resource = table.resource, let issuer = table.issuer else {
                continue
            }
            let own = ResourceClient.configured(issuer: issuer, resource: resource, config: config)
            let client = own?.table.client_id ?? table.client_id ?? "the newest registration kept for it"
            let how = ClientAuthChoice.described(own?.table.client_auth ?? table.client_auth)
            add(
                "login URL \(name)", .ok,
                "client \(OutsideText.line(client, limit: 80))\(own.map { " ([providers.\(Config.tableKey($0.name))] of \(settings.configPath))" } ?? "") at \(OutsideText.line(issuer, limit: 200)), authenticating with \(how)"
            )
        }
    }

}
