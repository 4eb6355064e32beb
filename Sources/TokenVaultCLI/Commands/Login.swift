import ArgumentParser
import Foundation
import TokenVaultKit

extension TokenVault {
    struct Login: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "login",
            abstract: "Log in to a provider and store the credential under its service.",
            discussion: """
                OAuth 2.0: authorization code with PKCE (S256) and a checked state, through a \
                one-shot listener on 127.0.0.1 (an ephemeral port, or the port of a fixed \
                redirect_uri). The browser is $BROWSER (the URL appended as last argument) or \
                xdg-open; the URL is always printed on stderr too. --no-browser prints the URL and \
                reads the redirected URL (or the bare code) from stdin, for SSH sessions. \
                --device runs the device flow (RFC 8628). Providers with grant = \
                "client_credentials" fetch a token directly. OAuth 1.0a providers (twitter, \
                flickr) use a loopback oauth_callback, or oob and a typed PIN with --no-browser.

                  tokenvault login weibo
                  tokenvault login google --no-browser
                  tokenvault login github --device
                """)

        @Argument(help: ArgumentHelp("A built-in or configured provider (see tokenvault providers).", valueName: "provider"),
                  completion: .custom(Completions.providers))
        var provider: String

        @Option(help: "Which of several logins to the service.")
        var account: String = Credential.defaultAccount

        @Option(name: .customLong("scope"), help: ArgumentHelp("A scope to ask for besides the provider's (repeatable).", valueName: "scope"))
        var scopes: [String] = []

        @Flag(name: .customLong("no-browser"), help: "Print the URL and read the redirected URL or code from stdin.")
        var noBrowser = false

        @Flag(help: "Use the device flow (RFC 8628): show a code to enter on another device, and poll.")
        var device = false

        @Option(help: ArgumentHelp("Listen for the redirect on this port of 127.0.0.1.", valueName: "port"))
        var port: Int?

        @Option(help: ArgumentHelp("Seconds to wait for the browser (default 300).", valueName: "seconds"))
        var timeout: Int = 300

        func validate() throws {
            if let port, !(1...65535).contains(port) { throw ValidationError("--port must be from 1 to 65535") }
            if timeout <= 0 { throw ValidationError("--timeout must be a positive number of seconds") }
            if noBrowser && device { throw ValidationError("--no-browser and --device do not go together") }
            if let bad = scopes.first(where: { $0.isEmpty || $0.contains(where: { $0.isWhitespace || $0.isNewline }) }) {
                throw ValidationError("invalid scope \("\"\(bad)\""): one scope per --scope, without spaces")
            }
        }

        func run() throws {
            let context = Context()
            try CredentialID.validateAccount(account)
            let name = provider.lowercased()
            let table = try ProviderConfig.table(for: name, config: try context.config,
                                                 configPath: Config.path(environment: context.environment))
            if table.type == "oauth1" {
                try loginOAuth1(name, context: context)
                return
            }
            let p = try context.oauth2Provider(name)
            let login = OAuth2Login(provider: p, transport: CurlTransport(timeout: try context.config.timeout ?? 30),
                                    clock: context.clock, notify: { Output.notice($0) })
            let id = CredentialID(service: p.service, account: account)
            let wanted = login.scopes(adding: scopes)
            var credential: Credential
            if device {
                credential = try login.device(id: id, scopes: wanted, timeout: Double(timeout)) { seconds in
                    Thread.sleep(forTimeInterval: min(max(seconds, 0), 600))
                }
            } else if p.grant == .clientCredentials {
                credential = try login.clientCredentials(id: id, scopes: wanted)
            } else if noBrowser {
                credential = try login.paste(id: id, scopes: wanted) { Swift.readLine() }
            } else {
                credential = try login.loopback(id: id, scopes: wanted, port: port, timeout: Double(timeout)) { url in
                    Browser.open(url, environment: context.environment)
                }
            }
            credential = login.withUserInfo(credential)
            try context.vault().write(credential)
            context.flushWarnings()
            let who = Summary.displayName(credential).map { " as \($0)" } ?? ""
            Output.notice("logged in to \(p.name)\(who); stored under \(id)")
        }

        /// OAuth 1.0a: loopback callback, or `oob` and a PIN with --no-browser.
        private func loginOAuth1(_ name: String, context: Context) throws {
            if device { throw TokenVaultError.usage("OAuth 1.0a has no device flow; use --no-browser for the PIN") }
            if !scopes.isEmpty { throw TokenVaultError.usage("OAuth 1.0a has no scopes (Flickr: set perms in the config)") }
            let p = try context.oauth1Provider(name)
            let login = OAuth1Login(provider: p, transport: CurlTransport(timeout: try context.config.timeout ?? 30),
                                    clock: context.clock, notify: { Output.notice($0) })
            let id = CredentialID(service: p.service, account: account)
            let credential = noBrowser
                ? try login.pin(id: id) { Swift.readLine() }
                : try login.loopback(id: id, port: port, timeout: Double(timeout)) { Browser.open($0, environment: context.environment) }
            try context.vault().write(credential)
            context.flushWarnings()
            let who = Summary.displayName(credential).map { " as \($0)" } ?? ""
            Output.notice("logged in to \(p.name)\(who); stored under \(id)")
        }
    }
}

/// Opens a URL for the user: `$BROWSER` (the URL as its last argument), else xdg-open.
enum Browser {
    static func open(_ url: String, environment env: [String: String]) {
        let p = Process()
        if let browser = env["BROWSER"], !browser.isEmpty {
            // $BROWSER may carry arguments ("firefox --new-window"): the shell splits it.
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            p.arguments = ["-c", "exec $BROWSER \"$1\"", "sh", url]
        } else if let xdg = ["/usr/bin/xdg-open", "/usr/local/bin/xdg-open"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
            p.executableURL = URL(fileURLWithPath: xdg)
            p.arguments = [url]
        } else {
            Output.notice("no browser to open (set BROWSER, or install xdg-utils): open the URL above yourself")
            return
        }
        p.environment = ChildEnvironment.scrubbed(env)
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { Output.warning("cannot start the browser: \(error.localizedDescription)") }
    }
}
