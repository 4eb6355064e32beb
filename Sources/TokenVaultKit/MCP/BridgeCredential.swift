import FoundationEssentials
import Glibc

/// The bridge's side of the vault: the token, kept in memory until it is
/// about to expire; renewal through the one refresh path of every command;
/// a login where a browser can open (docs/adapters.md, "MCP servers"). Each
/// attempt opens the vault afresh, so a request after `tokenvault unlock` or
/// a login succeeds where the one before it got the error.
public final class BridgeCredential: BridgeTokenSource, @unchecked Sendable {
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
        /// The token a renewal after a refusal gave: refused too, it is not
        /// renewed again for the next message (one renewal per refusal, as
        /// one login per bridge).
        var renewedAfterRefusal: String?
    }
    private let state = Locked(Shared())
    /// Lines on stderr, from whichever of the bridge's threads says one.
    private let sayLine: @Sendable (String) -> Void

    /// The credential for `url` and `account`, in runs of `session`'s settings;
    /// `say` writes a line on stderr from any thread.
    public init(session: Session, account: String, url: String, say: @escaping @Sendable (String) -> Void) {
        self.context = session
        self.account = account
        self.url = url
        self.sayLine = say
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

    public func token() throws -> PresentedToken {
        try state.withLock { s in
            // Fresh by the one rule every command uses (the renewal margin, docs/reference.md).
            if let c = s.current, context.status(of: c).state == .valid { return try sent(c, &s) }
            return try usable(force: false, &s)
        }
    }

    public func renewed(after rejected: PresentedToken) throws -> PresentedToken {
        try state.withLock { s in
            // The token just renewed after a refusal is refused too: the server refuses what it is
            // given, and trading again for every message would only spend grants.
            if let last = s.renewedAfterRefusal, last == rejected.value {
                throw TokenVaultError.loginRequired(
                    "\(OutsideText.line(url, limit: 200)) refuses even the token renewed for it (HTTP 401); it is not renewed again for every message",
                    hint:
                        "check the server's access for this client; to renew now: tokenvault refresh \(ShellWord.word(url))"
                )
            }
            // Another process may have renewed it already: the stored token is then the one to use.
            let fresh = context.fresh()
            defer { fresh.flushWarnings() }
            if let stored = try fresh.load(try credentialID(&s)), stored.accessToken != rejected.value,
                !stored.isExpired(at: fresh.clock.now)
            {
                s.current = stored
                return try sent(stored, &s)
            }
            let renewed = try usable(force: true, &s)
            s.renewedAfterRefusal = renewed.value
            return renewed
        }
    }

    /// `c` as the bridge sends it: its token with the key it is bound to,
    /// both taken under the same lock; a bound token whose key cannot be
    /// read is an error, never sent (as Bearer or at all).
    private func sent(_ c: Credential, _ s: inout Shared) throws -> PresentedToken {
        guard let pem = c.dpopKey else { return PresentedToken(c.accessToken) }
        if let kept = s.key, kept.pem == pem { return PresentedToken(c.accessToken, key: kept.key) }
        let key = try DPoPKey(pem: SecureBytes(Array(pem.utf8)))
        s.key = (pem, key)
        return PresentedToken(c.accessToken, key: key)
    }

    private func usable(force: Bool, _ s: inout Shared) throws -> PresentedToken {
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
                    // The request that found it waits for the login (bounded by the login's own
                    // timeout), then is answered with what it stored (docs/adapters.md, "MCP servers").
                    let again = context.fresh()
                    again.interactive = false
                    if loginEnded(&s), let c = try? again.usable(try credentialID(&s), minValid: nil) {
                        s.current = c
                        return try sent(c, &s)
                    }
                    throw TokenVaultError.loginRequired(
                        "\(error.errorText); the login started in the browser did not finish",
                        hint: "run: tokenvault login \(loginWords)")
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

    public func stepUp(_ scopes: [String]) throws -> Bool {
        guard Browser.unavailable(context.settings) == nil else { return false }
        // Named scopes go with the ones held; none named: the login takes the resource's own list with the ones held.
        let stored = state.withLock { $0.resolved }.flatMap { try? context.fresh().vault().load($0) }
        // A grant that needs no person gets the scopes its configuration gives: the resource asks,
        // the user decides (the message names the login with them; docs/security.md).
        if let name = stored?.provider, context.fresh().grant(of: name)?.fetchesAgain == true { return false }
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
    public static let loginPause: Int64 = 600

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

    /// Seconds the login the bridge started may take: its own browser timeout, and some.
    static let loginWait = 310.0

    /// Waits for the login the bridge started to end (at most `loginWait`
    /// seconds); true when it stored a credential.
    private func loginEnded(_ s: inout Shared) -> Bool {
        guard s.login > 0 else { return false }
        let until = Date().addingTimeInterval(Self.loginWait)
        var status: Int32 = 0
        while Date() < until {
            let ended = waitpid(s.login, &status, WNOHANG)
            if ended == s.login {
                s.login = 0
                if Posix.exitStatus(status) == 4 { s.loginRefused = true }
                return Posix.exitStatus(status) == 0
            }
            if ended < 0 { break }
            Posix.sleep(0.1)
        }
        return false
    }

    private func loginArguments(scopes: [String]) -> [String] {
        var args = [context.settings.executable, "login", url, "--account", account]
        for s in scopes { args += ["--scope", s] }
        return args
    }

    public func say(_ line: String) { sayLine(line) }
}
