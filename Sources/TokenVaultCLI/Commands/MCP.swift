import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct MCP: SessionCommand {
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

                MCP clients usually start it with only HOME, PATH, SHELL and TERM: it then finds \
                the runtime directory (/run/user/UID) and the session bus in it as a login does. \
                Where your session keeps them elsewhere, or TOKENVAULT_* settings or XDG \
                directories differ from their defaults, --print-config adds the env entry the \
                client must pass. The command is this binary's absolute path, as setup mcp \
                writes it.

                  tokenvault mcp https://mcp.example.com/mcp --print-config
                  {"command": "/usr/bin/tokenvault", "args": ["mcp", "https://mcp.example.com/mcp"]}
                """)

        @Argument(help: ArgumentHelp("The remote MCP server's URL.", valueName: "url"))
        var url: String

        @Option(
            help:
                "Which of several logins to the server (default: $\(EnvironmentVariable.account.name), else default).")
        var account: String?

        @Flag(name: .customLong("print-config"), help: "Print the MCP client configuration that runs this bridge.")
        var printConfig = false

        func run(in context: Session) throws {
            guard url.contains("://") else {
                throw TokenVaultError.usage(
                    "\(Quoted.text(url)) is not a URL", hint: "give the MCP server's URL: https://HOST/PATH")
            }
            let account = try AccountChoice(option: self.account, settings: context.settings)
            if printConfig {
                var args: [JSONValue] = [.string("mcp"), .string(url)]
                if account.source == .option { args += [.string("--account"), .string(account.name)] }
                // The binary's absolute path, as `setup mcp` writes it: clients start servers
                // with a PATH of their own, which may not hold where tokenvault is.
                var entry: [String: JSONValue] = ["command": .string(Tool.selfPath), "args": .array(args)]
                let env = Self.clientEnvironment(context.settings)
                if !env.isEmpty { entry["env"] = .object(env.mapValues { .string($0) }) }
                Output.value(JSONValue.object(entry).text)
                return
            }
            // Nothing that needs the vault or the config stops the bridge before it
            // serves: each request that meets a failure gets it as its JSON-RPC error.
            let host = BridgeHost(context: context, account: account.name, url: url)
            let timeout = (try? context.httpTimeout) ?? Config().httpTimeout
            let bridge = try MCPBridge(
                url: url, transport: CurlTransport(timeout: timeout, proxies: context.proxies), host: host,
                writeLine: Output.lineWriter())
            bridge.run()
        }
    }
}

extension TokenVault.MCP {
    /// What an MCP client must pass for the bridge to find this session, when
    /// it passes only HOME, PATH, SHELL and TERM: the variables set here that
    /// it would not find on its own (docs/adapters.md). Never a passphrase source.
    static func clientEnvironment(_ settings: Settings) -> [String: String] {
        var env: [String: String] = [:]
        let runtime = settings[.xdgRuntimeDir]
        if let runtime, runtime != Settings.systemRuntimeDirectory() {
            env[EnvironmentVariable.xdgRuntimeDir.name] = runtime
        }
        if let bus = settings[.dbusSessionBusAddress],
            bus != (runtime ?? Settings.systemRuntimeDirectory()).flatMap(Settings.busAddress(in:))
        {
            env[EnvironmentVariable.dbusSessionBusAddress.name] = bus
        }
        let home = settings.home
        for (v, fallback) in [
            (EnvironmentVariable.xdgConfigHome, home + "/.config"), (.xdgDataHome, home + "/.local/share"),
            (.xdgCacheHome, home + "/.cache"),
        ] {
            if let value = settings[v], value != fallback { env[v.name] = value }
        }
        // What decides where the credential is (a new vault's KDF cost does not).
        for v in [
            EnvironmentVariable.backend, .config, .vault, .keyTTL, .dbusTimeout, .unlockTimeout, .etcdEndpoints,
            .etcdPrefix,
        ] {
            if let value = settings[v] { env[v.name] = value }
        }
        if !settings.agentAllowed { env[EnvironmentVariable.agent.name] = settings[.agent] }
        return env
    }
}

/// The bridge's side of the vault: the token, kept in memory until it is
/// about to expire; renewal through the one refresh path of every command;
/// a login where a browser can open (docs/adapters.md, "MCP servers"). Each
/// attempt opens the vault afresh, so a request after `tokenvault unlock` or
/// a login succeeds where the one before it got the error.
final class BridgeHost: MCPBridgeHost, @unchecked Sendable {
    let context: Session
    let account: String
    let url: String
    /// What the bridge's threads share; a token is asked for and renewed
    /// under its lock, one request at a time.
    private struct Shared {
        var current: Credential?
        /// The login started in the background, if any.
        var login: pid_t = 0
        /// When the bridge last started one, and how the last one ended.
        var loginStarted: Int64?
        var loginRefused = false
        var resolved: CredentialID?
        /// The DPoP key of `current`, read from its PEM once.
        var key: (pem: String, key: DPoPKey)?
    }
    private let state = Locked(Shared())
    /// Lines on stderr, from whichever of the bridge's threads says one.
    private let sayLine = Output.errorWriter()

    init(context: Session, account: String, url: String) {
        self.context = context
        self.account = account
        self.url = url
    }

    /// The credential that holds URL: the stored resource that holds it, else
    /// URL's own key (where `login URL` stores). Looked for again until found,
    /// in a context of its own (one that opened the backend would not ask the agent).
    private func credentialID(_ s: inout Shared) throws -> CredentialID {
        if let resolved = s.resolved { return resolved }
        let context = self.context.fresh()
        defer { context.flushWarnings() }
        var id = CredentialID(service: try context.serviceKey(url), account: account)
        if id.service.path == nil, try context.vault().load(id) == nil {
            id = CredentialID(service: try ServiceKey(resource: url), account: account)
        }
        s.resolved = id
        return id
    }

    func token() throws -> BridgeToken {
        try state.withLock { s in
            // Fresh by the one rule every command uses (the renewal margin, docs/reference.md).
            if let c = s.current, context.status(of: c).state == .valid { return try sent(c, &s) }
            return try usable(force: false, &s)
        }
    }

    func renewed(after rejected: BridgeToken) throws -> BridgeToken {
        try state.withLock { s in
            // Another process may have renewed it already: the stored token is then the one to use.
            let fresh = context.fresh()
            defer { fresh.flushWarnings() }
            if let stored = try fresh.load(try credentialID(&s)), stored.accessToken != rejected.value,
                !stored.isExpired(at: fresh.clock.now)
            {
                s.current = stored
                return try sent(stored, &s)
            }
            return try usable(force: true, &s)
        }
    }

    /// `c` as the bridge sends it: its token with the key it is bound to,
    /// both taken under the same lock; a bound token whose key cannot be
    /// read is an error, never sent (as Bearer or at all).
    private func sent(_ c: Credential, _ s: inout Shared) throws -> BridgeToken {
        guard let pem = c.dpopKey else { return BridgeToken(c.accessToken) }
        if let kept = s.key, kept.pem == pem { return BridgeToken(c.accessToken, key: kept.key) }
        let key = try DPoPKey(pem: SecureBytes(Array(pem.utf8)))
        s.key = (pem, key)
        return BridgeToken(c.accessToken, key: key)
    }

    private func usable(force: Bool, _ s: inout Shared) throws -> BridgeToken {
        let fresh = context.fresh()
        fresh.interactive = false  // the bridge never prompts: a failure is the request's JSON-RPC error
        defer { fresh.flushWarnings() }
        do {
            let c = try fresh.usable(try credentialID(&s), minValid: nil, force: force)
            s.current = c
            return try sent(c, &s)
        } catch let error as TokenVaultError {
            s.current = nil
            switch error {
            case .loginRequired, .notFound:
                if startLogin(&s) {
                    throw TokenVaultError.loginRequired(
                        "\(error.errorText); a login was started in the browser: try again once it is done")
                }
                let refused = s.loginRefused ? " (the login the bridge started was refused)" : ""
                throw TokenVaultError.loginRequired(
                    error.errorText + refused, hint: "run: tokenvault login \(loginWords)")
            default:
                throw error
            }
        }
    }

    var loginWords: String {
        ShellWord.word(url)
            + (account == Credential.defaultAccount ? "" : " --account \(ShellWord.word(account))")
    }

    func stepUp(_ scopes: [String]) throws -> Bool {
        guard Browser.unavailable(context.settings) == nil else { return false }
        // Named scopes go with the ones held; none named: the login takes the resource's own list with the ones held.
        let stored = state.withLock { $0.resolved }.flatMap { try? context.fresh().vault().load($0) }
        let held = stored?.scope?.split(separator: " ").map(String.init) ?? []
        // The grant holds every scope named already: another login would get the same refusal.
        if !scopes.isEmpty, scopes.allSatisfy(held.contains) { return false }
        let all = scopes.isEmpty ? [] : held + scopes.filter { !held.contains($0) }
        let (status, _) = try Posix.spawn(
            loginArguments(scopes: all), env: context.settings.environment, capture: false, showErrors: true,
            wait: true)
        state.withLock { $0.current = nil }
        guard status == 0 else {
            throw TokenVaultError.loginRequired(
                "the login for more scopes did not finish (exit \(status))",
                hint: "run: tokenvault login \(loginWords)\(all.map { " --scope \(ShellWord.word($0))" }.joined())")
        }
        return true
    }

    /// Seconds after a login the bridge started before it starts another.
    static let loginPause: Int64 = 600

    /// `tokenvault login URL` in the background, its output on stderr: one
    /// at a time, at most one per `loginPause`, and none again once one was
    /// refused (the provider said access_denied: exit 4) — a server that
    /// fails logins fast never has the bridge open a window per message.
    /// False where no browser can open, or no login is started now; the
    /// request's error then names `tokenvault login URL`.
    private func startLogin(_ s: inout Shared) -> Bool {
        guard Browser.unavailable(context.settings) == nil else { return false }
        if s.login > 0 {
            var status: Int32 = 0
            let ended = waitpid(s.login, &status, WNOHANG)
            if ended == 0 { return true }  // under way
            if ended == s.login, Posix.exitStatus(status) == 4 { s.loginRefused = true }
            s.login = 0
        }
        let now = context.clock.now
        guard !s.loginRefused, s.loginStarted.map({ now - $0 >= Self.loginPause }) ?? true else { return false }
        guard let pid = try? Posix.startInBackground(loginArguments(scopes: []), env: context.settings.environment)
        else { return false }
        (s.login, s.loginStarted) = (pid, now)
        return true
    }

    private func loginArguments(scopes: [String]) -> [String] {
        var args = [context.settings.executable, "login", url, "--account", account]
        for s in scopes { args += ["--scope", s] }
        return args
    }

    func say(_ line: String) { sayLine(line) }
}
