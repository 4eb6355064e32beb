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
                announce(try providerLogin(context).oauth1(providerName, account: account), context: context)
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

        /// The login the library runs, with this terminal as what a person sees.
        func providerLogin(_ context: Session) throws -> ProviderLogin {
            var options = ProviderLogin.Options()
            (options.asked, options.scopes, options.port) = (mode?.asked, scopes, port)
            (options.timeout, options.force) = (timeout, force)
            let presenter = LoginPresenter(
                openBrowser: { Browser.open($0, settings: context.settings, notices: context.notices) },
                readLine: { Swift.readLine() }, showDeviceURL: { drawQR($0, output: context.output) },
                pause: { Posix.sleep($0) },
                canWait: isatty(0) == 1 || isatty(2) == 1)
            return ProviderLogin(
                session: context, transport: CurlTransport(timeout: try context.httpTimeout, proxies: context.proxies),
                presenter: presenter, options: options)
        }

        /// An OAuth 2.0 login (`ProviderLogin.oauth2`), then what it did, said.
        /// `scopes`: exactly these; nil: the provider's and --scope.
        func loginOAuth2(
            _ p: OAuth2Provider, account: String, scopes asked: [String]?, context: Session, keep: () throws -> Void
        ) throws {
            announce(
                try providerLogin(context).oauth2(p, account: account, scopes: asked, keep: keep), context: context)
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

        /// "logged in to PROVIDER as NAME; stored under ID in BACKEND" on
        /// stderr, or what another login that finished meanwhile stored.
        func announce(_ outcome: ProviderLogin.Outcome, context: Session) {
            let (credential, provider) = (outcome.credential, outcome.provider)
            let prefix = outcome.byAnotherLogin ? "the other login finished: " : ""
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
        func drawQR(_ url: String, output: RunOutput) {
            guard !noQR, isatty(2) == 1 else { return }
            do {
                let lines = try QRCode(url).terminalLines()
                Posix.write(2, lines.joined(separator: "\n") + "\n")
            } catch let error as TokenVaultError {
                output.notice(error.errorText)
            } catch {}
        }
    }
}
