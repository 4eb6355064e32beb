import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct Login: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "login",
            abstract: "Log in to a provider and store the credential under its service.",
            discussion: """
                OAuth 2.0: authorization code with PKCE (S256) and a checked state, through a \
                one-shot listener on 127.0.0.1 (an ephemeral port, or the port of a fixed \
                redirect_uri). The browser is $BROWSER (the URL appended as last argument) or \
                xdg-open; the URL is always printed on stderr too. --no-browser prints the URL and \
                reads the redirected URL (or the bare code) from stdin, for SSH sessions. \
                --device runs the device flow (RFC 8628) and draws its URL as a QR code for a phone \
                when stderr is a terminal (--no-qr: not). Where no browser can open (an SSH \
                session without a display, or neither $BROWSER nor DISPLAY/WAYLAND_DISPLAY), the \
                device flow is used when the provider has one, else paste mode; --browser opens one \
                anyway. One login per service and account runs at a time: another one waits for it \
                on a terminal and uses its result, and without a terminal exits 75. Providers with grant = \
                "client_credentials" fetch a token directly. OAuth 1.0a providers (twitter, \
                flickr) use a loopback oauth_callback, or oob and a typed PIN with --no-browser.

                A URL in place of the provider logs in to a protected resource (a remote MCP server) \
                knowing nothing else: its resource metadata (RFC 9728) names the authorization \
                server (--issuer picks another it names), whose metadata must offer PKCE with S256; \
                tokenvault registers itself there (RFC 7591) unless a provider in the config has \
                that issuer, keeps the registration in the backend, asks for the resource (RFC \
                8707) with the scopes of --scope, else the server's, and checks the redirect's iss \
                (RFC 9207). The credential is stored under the resource (host/path) and the \
                provider kept in providers.toml under --name, else a name derived from the URL.

                  tokenvault login weibo
                  tokenvault login google --no-browser
                  tokenvault login github --device
                  tokenvault login --issuer https://idp.example.com/realms/ops --client-id cli
                  tokenvault login https://mcp.example.com/mcp
                """)

        @Argument(
            help: ArgumentHelp(
                "A built-in or configured provider (see tokenvault providers), or a protected resource's URL; with --issuer, the name to keep it under.",
                valueName: "provider|url"),
            completion: .custom(Completions.providers))
        var provider: String?

        @Option(
            help: ArgumentHelp(
                "An OpenID Connect issuer to log in to without a config entry (with --client-id); kept in providers.toml beside the config. With a URL: which of its authorization servers.",
                valueName: "url"))
        var issuer: String?

        @Option(
            name: .customLong("client-id"), help: ArgumentHelp("The client id registered at --issuer.", valueName: "id")
        )
        var clientID: String?

        @Option(
            help: ArgumentHelp(
                "With --issuer or a URL: the provider name to keep it under (default: one derived from its host, port and path).",
                valueName: "name"))
        var name: String?

        @Option(
            help:
                "Which of several logins to the service (default: $\(EnvironmentVariable.account.name), else default).")
        var account: String?

        @Option(
            name: .customLong("scope"),
            help: ArgumentHelp("A scope to ask for besides the provider's (repeatable).", valueName: "scope"))
        var scopes: [String] = []

        /// How the user takes part, when they say; else the one that can work here.
        enum Mode: String, EnumerableFlag {
            case browser, noBrowser, device

            static func name(for value: Mode) -> NameSpecification {
                value == .noBrowser ? .customLong("no-browser") : .long
            }

            /// The flow it asks for.
            var asked: LoginFlow.Asked {
                switch self {
                case .browser: .browser
                case .noBrowser: .noBrowser
                case .device: .device
                }
            }

            static func help(for value: Mode) -> ArgumentHelp? {
                switch value {
                case .browser: "Open a browser even where none seems able to open (over SSH, no display)."
                case .noBrowser: "Print the URL and read the redirected URL or code from stdin."
                case .device: "Use the device flow (RFC 8628): show a code to enter on another device, and poll."
                }
            }
        }

        @Flag(exclusivity: .exclusive)
        var mode: Mode?

        @Flag(name: .customLong("no-qr"), help: "Do not draw the device flow's URL as a QR code.")
        var noQR = false

        @Flag(help: "Replace a credential another provider stored under the same service and account.")
        var force = false

        @Flag(
            name: .customLong("register-again"),
            help: "With a URL: register tokenvault at the authorization server anew, as when it forgot the client.")
        var registerAgain = false

        @Flag(help: "Print the result as JSON: service, account, provider, user, expires_at, stored_in.")
        var json = false

        @Flag(help: "With a URL: say on stderr each step of finding its authorization server.")
        var verbose = false

        @Option(help: ArgumentHelp("Listen for the redirect on this port of 127.0.0.1.", valueName: "port"))
        var port: Int?

        @Option(help: ArgumentHelp("Seconds to wait for the browser (default 300).", valueName: "seconds"))
        var timeout: Int = 300

        func validate() throws {
            if let port, !(1...65535).contains(port) { throw ValidationError("--port must be from 1 to 65535") }
            if timeout <= 0 { throw ValidationError("--timeout must be a positive number of seconds") }
            if provider == nil, issuer == nil {
                throw ValidationError("name a provider or a resource's URL, or give --issuer and --client-id")
            }
            if resourceURL != nil {
                if clientID != nil {
                    throw ValidationError(
                        "--client-id goes with --issuer alone; for a resource's URL, configure the client in a provider with its issuer"
                    )
                }
            } else {
                if (issuer == nil) != (clientID == nil) {
                    throw ValidationError("--issuer and --client-id go together")
                }
                if name != nil, issuer == nil {
                    throw ValidationError(
                        "--name names the provider of --issuer or of a URL; otherwise, give the provider itself")
                }
                if let name, let provider, name.lowercased() != provider.lowercased() {
                    throw ValidationError("give the provider's name once: as the argument or as --name")
                }
            }
            // A name kept in providers.toml and typed in commands: one plain word.
            if issuer != nil || resourceURL != nil,
                let given = (name ?? (resourceURL == nil ? provider : nil))?.lowercased(),
                given.isEmpty || given.count > 63
                    || !given.unicodeScalars.allSatisfy({
                        ("a"..."z").contains($0) || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0)
                    })
            {
                throw ValidationError("a provider name is 1 to 63 letters, digits, '.', '_' or '-'")
            }
            if let bad = scopes.first(where: { $0.isEmpty || $0.contains(where: { $0.isWhitespace || $0.isNewline }) })
            {
                throw ValidationError("invalid scope \("\"\(bad)\""): one scope per --scope, without spaces")
            }
        }

        /// The provider argument when it is a URL: a protected resource to log in to.
        var resourceURL: String? { provider.flatMap { $0.contains("://") ? $0 : nil } }

        func run(in context: Session) throws {
            let account = try AccountChoice(option: self.account, settings: context.settings).name
            if let resourceURL {
                try loginResource(resourceURL, account: account, context: context)
                return
            }
            let providerName = try issuerProvider(context) ?? (provider ?? "").lowercased()
            let table = try ProviderConfig.table(
                for: providerName, config: try context.config,
                configPath: context.settings.configPath)
            if table.type == "oauth1" {
                try loginOAuth1(providerName, account: account, context: context)
                return
            }
            let p = try context.oauth2Provider(providerName)
            try loginOAuth2(p, account: account, scopes: nil, context: context) {
                if let issuer, let clientID {
                    // Kept once the login worked, so `providers`, `get NAME` and refresh find it.
                    try DiscoveredProviders.add(
                        name: providerName, issuer: issuer, clientID: clientID, settings: context.settings)
                    Interruption.say(
                        "the provider \(providerName) was kept in providers.toml, but no credential was stored under \(CredentialID(service: p.service, account: account))"
                    )
                }
            }
        }

        /// An OAuth 2.0 login by the flow that fits, then `keep` (what the
        /// login adds besides the credential) and the store, with Ctrl-C held.
        /// `scopes`: exactly these; nil: the provider's and --scope.
        func loginOAuth2(
            _ p: OAuth2Provider, account: String, scopes asked: [String]?, context: Session, keep: () throws -> Void
        ) throws {
            let id = CredentialID(service: p.service, account: account)
            let (flow, said) = LoginFlow.choose(
                asked: mode?.asked, grant: p.grant, hasDevice: p.deviceAuthorizationURL != nil,
                settings: context.settings)
            if let said { context.notices.notice(said) }
            sayNothingStored(id, provider: p.name, before: try checkOwner(id, provider: p.name, context: context))
            // The answer must be kept: the store is made ready before anything is sent or
            // shown (a one-use assertion is not spent, nor a device approval given, for nothing:
            // a new vault's passphrase is asked now). Client credentials involve nobody: no login lock.
            try context.vault().prepareToWrite()
            var held: LoginLock?
            if flow != .clientCredentials {
                guard let h = try pendingLogin(id, provider: p.name, context: context) else { return }
                held = h
            }
            defer { held?.release() }
            var login = OAuth2Login(
                provider: p, transport: CurlTransport(timeout: try context.httpTimeout, proxies: context.proxies),
                clock: context.clock,
                notify: { line in
                    // That userinfo wants a scope not asked for is said once per provider, not at every login.
                    guard line.hasPrefix(OAuth2Login.userinfoNotShown) else { return Output.notice(line) }
                    let mark =
                        context.settings.runtimeDirectory + "/said-userinfo-"
                        + String(p.name.filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }.prefix(64))
                    if OnceMark.seen(mark, within: 365 * 86400, now: context.clock.now) { return }
                    try? PrivateDirectory.ensure(context.settings.runtimeDirectory)
                    OnceMark.mark(mark)
                    Output.notice(line)
                })
            // A key of the credential's own, made for this login (docs/security.md, "Sender-constrained tokens").
            if p.dpop { login.dpop = try DPoPKey.generate(algorithm: DPoPKey.algorithm(for: p.dpopAlgorithms)) }
            let wanted = asked ?? login.scopes(adding: scopes)
            var credential: Credential
            switch flow {
            case .device:
                credential = try login.device(id: id, scopes: wanted, timeout: Double(timeout), show: drawQR) {
                    seconds in
                    Posix.sleep(min(max(seconds, 0), 600))
                }
            case .clientCredentials:
                credential = try login.clientCredentials(
                    id: id, scopes: wanted, subjects: try context.refresher())
            case .paste:
                credential = try login.paste(id: id, scopes: wanted) { Swift.readLine() }
            case .browser:
                credential = try login.loopback(id: id, scopes: wanted, port: port, timeout: Double(timeout)) { url in
                    Browser.open(url, settings: context.settings, notices: context.notices)
                }
            }
            credential = login.withUserInfo(credential)
            try Interruption.holding {
                try keep()
                try store(credential, provider: p.name, context: context)
            }
            announce(credential, provider: p.name, context: context)
            if credential.refreshToken == nil, let expires = credential.expiresAt, !p.grant.fetchesAgain {
                let offline = (credential.scope ?? "").split(separator: " ").contains("offline_access")
                Output.warning(
                    "\(p.name) gave no refresh token: the token \(Format.expires(expires, now: context.clock.now)) and cannot be renewed; log in again then"
                        + (offline ? "" : " (some servers give one only for --scope offline_access)"))
            }
        }

        /// `--issuer URL --client-id ID`: the provider it stands for, added to
        /// this run's config (and kept in providers.toml after a login that
        /// worked). A name is never taken from another issuer.
        func issuerProvider(_ context: Session) throws -> String? {
            guard let issuer, let clientID else { return nil }
            let chosen = try DiscoveredProviders.choose(
                given: (name ?? provider)?.lowercased(), issuer: issuer, clientID: clientID,
                config: try context.config)
            // A table kept from before (same issuer and client) stays as the user left it.
            if try context.config.providers[chosen] == nil {
                var table = ProviderConfig()
                table.issuer = issuer
                table.client_id = clientID
                try context.addProvider(chosen, table)
            }
            return chosen
        }

        /// "logged in to PROVIDER as NAME; stored under ID in BACKEND" on stderr.
        func announce(_ credential: Credential, provider: String, prefix: String = "", context: Session) {
            let name = Summary.displayName(credential)
            let who = name.map { " as \($0)" } ?? ""
            let backend = (try? context.store().writesTo) ?? "the vault"
            context.result(
                "\(prefix)logged in to \(provider)\(who); stored under \(credential.id) in \(backend)", json: json,
                [
                    "service": .string(credential.service.description), "account": .string(credential.account),
                    "provider": .string(provider), "user": name.map { .string($0) } ?? .null,
                    "expires_at": credential.expiresAt.map { .integer($0) } ?? .null,
                    "stored_in": .string(backend),
                ])
        }

        /// The device flow's URL as a QR code on stderr, when stderr is a terminal
        /// and --no-qr was not given; a QR code that cannot be drawn is only a notice.
        func drawQR(_ url: String) {
            guard !noQR, isatty(2) == 1 else { return }
            do {
                let lines = try QRCode(url).terminalLines()
                Posix.write(2, lines.joined(separator: "\n") + "\n")
            } catch let error as TokenVaultError {
                Output.notice(error.errorText)
            } catch {}
        }

        /// One owner per service: a credential another provider stored under
        /// `id` is not replaced without --force (64, before anyone is asked).
        /// Returns what is stored under `id` now.
        func checkOwner(_ id: CredentialID, provider: String, context: Session) throws -> Credential? {
            let stored = try context.vault().load(id)
            if !force,
                let conflict = stored?.ownerConflict(with: provider, command: "login \(ShellWord.word(provider))")
            {
                throw conflict
            }
            return stored
        }

        /// Ctrl-C from here until the store says that nothing was stored, and
        /// what `id` holds meanwhile (docs/security.md, "Interrupted").
        func sayNothingStored(_ id: CredentialID, provider: String, before: Credential?) {
            let kept =
                before == nil ? "\(id) still has no credential" : "the credential stored under \(id) is unchanged"
            Interruption.say("nothing was stored: the login to \(provider) did not finish, and \(kept)")
        }

        /// Writes the new credential with Ctrl-C held back, so what Ctrl-C
        /// says afterwards is known: it is stored.
        func store(_ credential: Credential, provider: String, context: Session) throws {
            try Interruption.holding {
                try context.vault().write(credential)
                Interruption.say(
                    "the login to \(provider) had finished: its credential is stored under \(credential.id)")
            }
        }

        /// The login lock for `id`, or nil when another process's login
        /// for it finished while this one waited (its result is used). Without a
        /// terminal a pending login is a temporary failure (75): no second browser.
        func pendingLogin(_ id: CredentialID, provider: String, context: Session) throws -> LoginLock? {
            let vault = try context.vault()
            let before = try vault.load(id)
            if let held = try LoginLock.attempt(vault, id) { return held }
            let pid = LoginLock.holder(vault, id).map { " (process \($0))" } ?? ""
            guard isatty(0) == 1 || isatty(2) == 1 else {
                throw TokenVaultError.temporary(
                    "a login to \(provider) for \(id) is already pending\(pid); finish it there, then try again")
            }
            Output.notice("a login to \(provider) for \(id) is already pending\(pid); waiting for it (Ctrl-C to stop)")
            Interruption.say("this command stored nothing; the other login\(pid) goes on")
            let bound = Double(timeout)
            guard
                let held = try WaitLine.during(
                    { "waiting for the other login\(pid): \(WaitLine.left(bound, $0)) (Ctrl-C to stop)" },
                    {
                        try LoginLock.wait(vault, id, until: Date().timeIntervalSince1970 + bound)
                    })
            else {
                throw TokenVaultError.temporary(
                    "the login to \(provider) for \(id) was still pending after \(timeout) s")
            }
            if let after = try vault.load(id), after != before {
                held.release()
                announce(after, provider: provider, prefix: "the other login finished: ", context: context)
                return nil
            }
            Output.notice("the other login did not store anything; starting this one")
            return held
        }
    }
}
