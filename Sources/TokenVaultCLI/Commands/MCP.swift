import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct MCP: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "mcp",
            abstract: "Serve a remote MCP server on stdio, with the vault's token.",
            discussion: """
                A stdio MCP server for an MCP client (an editor, a desktop assistant, an agent) \
                that forwards every JSON-RPC message to the remote MCP server at URL over \
                Streamable HTTP, with the token stored for URL (see tokenvault login URL): \
                renewed before it expires, one refresh for every bridge and every other \
                tokenvault process, and renewed once and the message sent again when the server \
                answers 401. When the server asks for more scopes (403 insufficient_scope), or \
                when no credential is usable, a login runs where a browser can open (one at a \
                time); otherwise the client gets a JSON-RPC error and stderr one line. stdout \
                carries only MCP messages.

                  tokenvault mcp https://mcp.example.com/mcp --print-config
                  {"command": "tokenvault", "args": ["mcp", "https://mcp.example.com/mcp"]}
                """)

        @Argument(help: ArgumentHelp("The remote MCP server's URL.", valueName: "url"))
        var url: String

        @Option(
            help:
                "Which of several logins to the server (default: $\(EnvironmentVariable.account.name), else default).")
        var account: String?

        @Flag(name: .customLong("print-config"), help: "Print the MCP client configuration that runs this bridge.")
        var printConfig = false

        func run(in context: Context) throws {
            guard url.contains("://") else {
                throw TokenVaultError.usage(
                    "\(Quoted.text(url)) is not a URL", hint: "give the MCP server's URL: https://HOST/PATH")
            }
            let account = try AccountChoice(option: self.account, settings: context.settings)
            if printConfig {
                var args: [JSONValue] = [.string("mcp"), .string(url)]
                if account.reason == "--account" { args += [.string("--account"), .string(account.name)] }
                Output.value(JSONValue.object(["command": .string("tokenvault"), "args": .array(args)]).text)
                return
            }
            // The stored resource that holds URL; with none, URL's own key (where `login URL` stores).
            var id = CredentialID(service: try context.serviceKey(url), account: account.name)
            if id.service.path == nil, try context.vault().load(id) == nil {
                id = CredentialID(service: try ServiceKey(resource: url), account: account.name)
            }
            let host = BridgeHost(context: context, id: id, url: url)
            let bridge = try MCPBridge(url: url, transport: CurlTransport(timeout: try context.httpTimeout), host: host)
            bridge.run()
        }
    }
}

/// The bridge's side of the vault: the token, kept in memory until it is
/// about to expire; renewal through the one refresh path of every command;
/// a login where a browser can open (docs/adapters.md, "MCP servers").
final class BridgeHost: MCPBridgeHost, @unchecked Sendable {
    let context: Context
    let id: CredentialID
    let url: String
    private let lock = PosixLock()
    private var current: Credential?
    private var login: pid_t = 0

    init(context: Context, id: CredentialID, url: String) {
        self.context = context
        self.id = id
        self.url = url
    }

    func token() throws -> String {
        try lock.withLock {
            if let c = current, let minValid = try? context.minValid(nil),
                c.expiresAt.map({ $0 - context.clock.now > minValid }) ?? true
            {
                return c.accessToken
            }
            return try usable(force: false)
        }
    }

    func renewed(after rejected: String) throws -> String {
        try lock.withLock {
            // Another process may have renewed it already: the stored token is then the one to use.
            if let stored = try context.vault().load(id), stored.accessToken != rejected,
                !stored.isExpired(at: context.clock.now)
            {
                current = stored
                return stored.accessToken
            }
            return try usable(force: true)
        }
    }

    private func usable(force: Bool) throws -> String {
        do {
            let c = try context.usable(id, minValid: nil, force: force)
            current = c
            return c.accessToken
        } catch let error as TokenVaultError {
            current = nil
            switch error {
            case .loginRequired, .notFound:
                if startLogin(scopes: []) {
                    throw TokenVaultError.loginRequired(
                        "\(error.errorText); a login was started in the browser: try again once it is done")
                }
                throw TokenVaultError.loginRequired(error.errorText, hint: "run: tokenvault login \(loginWords)")
            default:
                throw error
            }
        }
    }

    var loginWords: String {
        ShellWord.word(url)
            + (id.account == Credential.defaultAccount ? "" : " --account \(ShellWord.word(id.account))")
    }

    func stepUp(_ scopes: [String]) throws -> Bool {
        guard Browser.unavailable(context.settings) == nil else { return false }
        // Named scopes go with the ones held; none named: the login takes the resource's own list with the ones held.
        let held = (try? context.vault().load(id))?.scope?.split(separator: " ").map(String.init) ?? []
        let all = scopes.isEmpty ? [] : held + scopes.filter { !held.contains($0) }
        let (status, _) = try Posix.spawn(
            loginArguments(scopes: all), env: context.settings.environment, capture: false, showErrors: true,
            wait: true)
        lock.withLock { current = nil }
        guard status == 0 else {
            throw TokenVaultError.loginRequired(
                "the login for more scopes did not finish (exit \(status))",
                hint: "run: tokenvault login \(loginWords)\(all.map { " --scope \(ShellWord.word($0))" }.joined())")
        }
        return true
    }

    /// `tokenvault login URL` in the background, its output on stderr; one
    /// at a time. False where no browser can open.
    private func startLogin(scopes: [String]) -> Bool {
        guard Browser.unavailable(context.settings) == nil else { return false }
        if login > 0, kill(login, 0) == 0 {
            var status: Int32 = 0
            if waitpid(login, &status, WNOHANG) == 0 { return true }
        }
        guard let pid = try? Posix.startInBackground(loginArguments(scopes: scopes), env: context.settings.environment)
        else { return false }
        login = pid
        return true
    }

    private func loginArguments(scopes: [String]) -> [String] {
        var args = ["/proc/self/exe", "login", url, "--account", id.account]
        for s in scopes { args += ["--scope", s] }
        return args
    }

    func say(_ line: String) { Output.error(line, hint: nil) }
}
