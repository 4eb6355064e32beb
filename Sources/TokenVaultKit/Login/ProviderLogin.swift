import FoundationEssentials
import Glibc

/// What a person sees and does in a login: the command line's terminal, or
/// a test's script. Everything else a login decides is `ProviderLogin`'s.
public struct LoginPresenter {
    /// Opens a browser on the authorization URL.
    public var openBrowser: (String) -> Void
    /// A line the user types or pastes (the redirected URL or the code; an
    /// OAuth 1.0a PIN); nil at the end of input.
    public var readLine: () -> String?
    /// The device flow's URL drawn for a phone, where it can be.
    public var showDeviceURL: (String) -> Void
    /// Waits that many seconds between the device flow's polls.
    public var pause: (Double) -> Void
    /// Whether someone is there to wait for another pending login (a terminal).
    public var canWait: Bool

    public init(
        openBrowser: @escaping (String) -> Void, readLine: @escaping () -> String?,
        showDeviceURL: @escaping (String) -> Void, pause: @escaping (Double) -> Void, canWait: Bool
    ) {
        self.openBrowser = openBrowser
        self.readLine = readLine
        self.showDeviceURL = showDeviceURL
        self.pause = pause
        self.canWait = canWait
    }
}

/// A login to a named provider, OAuth 2.0 or 1.0a (docs/providers.md): one
/// owner per service, the store made ready before anyone is asked, one
/// login per credential at a time (another waits for it and uses its
/// result), the flow that can work here, and the credential stored with
/// Ctrl-C held (docs/security.md, "Interrupted").
public struct ProviderLogin {
    /// What the command line asked for.
    public struct Options: Sendable {
        public var asked: LoginFlow.Asked?
        /// `--scope`: asked for besides the provider's.
        public var scopes: [String] = []
        /// `--port`: the redirect listener's.
        public var port: Int?
        /// Seconds to wait for the browser, the device approval, or another login.
        public var timeout = 300
        /// `--force`: replace a credential another provider stored under the same id.
        public var force = false

        public init() {}
    }

    /// How a login ended: the credential stored, by this login or by
    /// another process's login of the same credential that finished while
    /// this one waited (its result is used; nobody was asked again).
    public struct Outcome {
        public var credential: Credential
        public var provider: String
        public var byAnotherLogin = false
    }

    let session: Session
    let transport: HTTPTransport
    let presenter: LoginPresenter
    let options: Options

    public init(session: Session, transport: HTTPTransport, presenter: LoginPresenter, options: Options) {
        self.session = session
        self.transport = transport
        self.presenter = presenter
        self.options = options
    }

    /// An OAuth 2.0 login by the flow that fits, then `keep` (what the
    /// login adds besides the credential) and the store, with Ctrl-C held.
    /// `scopes`: exactly these; nil: the provider's and --scope.
    public func oauth2(
        _ p: OAuth2Provider, account: String, scopes asked: [String]?, keep: () throws -> Void = {}
    ) throws -> Outcome {
        let id = CredentialID(service: p.service, account: account)
        let (flow, said) = LoginFlow.choose(
            asked: options.asked, grant: p.grant, hasDevice: p.deviceAuthorizationURL != nil,
            settings: session.settings)
        if let said { session.notices.notice(said) }
        sayNothingStored(id, provider: p.name, before: try checkOwner(id, provider: p.name))
        // The answer must be kept: the store is made ready before anything is sent or
        // shown (a one-use assertion is not spent, nor a device approval given, for nothing:
        // a new vault's passphrase is asked now). Client credentials involve nobody: no login lock.
        try session.vault().prepareToWrite()
        var held: LoginLock?
        if flow != .clientCredentials {
            switch try pendingLogin(id, provider: p.name) {
            case .held(let lock): held = lock
            case .finished(let other): return Outcome(credential: other, provider: p.name, byAnotherLogin: true)
            }
        }
        defer { held?.release() }
        var login = OAuth2Login(provider: p, transport: transport, clock: session.clock, notify: userinfoNotice(p))
        login.nonces = session.nonces
        // A key of the credential's own, made for this login (docs/security.md, "Sender-constrained tokens").
        if p.dpop { login.dpop = try DPoPKey.generate(algorithm: DPoPKey.algorithm(for: p.dpopAlgorithms)) }
        let wanted = asked ?? login.scopes(adding: options.scopes)
        let timeout = Double(options.timeout)
        var credential: Credential
        switch flow {
        case .device:
            credential = try login.device(id: id, scopes: wanted, timeout: timeout, show: presenter.showDeviceURL) {
                presenter.pause(min(max($0, 0), 600))
            }
        case .clientCredentials:
            credential = try login.clientCredentials(id: id, scopes: wanted, subjects: try session.refresher())
        case .paste:
            credential = try login.paste(id: id, scopes: wanted, readLine: presenter.readLine)
        case .browser:
            credential = try login.loopback(
                id: id, scopes: wanted, port: options.port, timeout: timeout, openBrowser: presenter.openBrowser)
        }
        credential = login.withUserInfo(credential)
        try Interruption.holding {
            try keep()
            try store(credential, provider: p.name)
        }
        if credential.refreshToken == nil, let expires = credential.expiresAt, !p.grant.fetchesAgain {
            let offline = (credential.scope ?? "").split(separator: " ").contains("offline_access")
            session.notices.warning(
                "\(p.name) gave no refresh token: the token \(Format.expires(expires, now: session.clock.now)) and cannot be renewed; log in again then"
                    + (offline ? "" : " (some servers give one only for --scope offline_access)"))
        }
        return Outcome(credential: credential, provider: p.name)
    }

    /// OAuth 1.0a: a loopback callback, or `oob` and a typed PIN (--no-browser,
    /// or where no browser can open).
    public func oauth1(_ name: String, account: String) throws -> Outcome {
        if options.asked == .device {
            throw TokenVaultError.usage("OAuth 1.0a has no device flow; use --no-browser for the PIN")
        }
        if !options.scopes.isEmpty {
            throw TokenVaultError.usage("OAuth 1.0a has no scopes (Flickr: set perms in the config)")
        }
        let p = try session.oauth1Provider(name)
        let login = OAuth1Login(
            provider: p, transport: transport, clock: session.clock, notify: { session.notices.notice($0) })
        let id = CredentialID(service: p.service, account: account)
        var pin = options.asked == .noBrowser
        if options.asked == nil, let why = Browser.unavailable(session.settings) {
            session.notices.notice(
                "no browser can open here (\(why)): type the PIN the provider shows instead (--browser opens one anyway)"
            )
            pin = true
        }
        sayNothingStored(id, provider: p.name, before: try checkOwner(id, provider: p.name))
        let held: LoginLock
        switch try pendingLogin(id, provider: p.name) {
        case .held(let lock): held = lock
        case .finished(let other): return Outcome(credential: other, provider: p.name, byAnotherLogin: true)
        }
        defer { held.release() }
        let credential =
            pin
            ? try login.pin(id: id, readLine: presenter.readLine)
            : try login.loopback(
                id: id, port: options.port, timeout: Double(options.timeout), openBrowser: presenter.openBrowser)
        try store(credential, provider: p.name)
        return Outcome(credential: credential, provider: p.name)
    }

    /// That userinfo wants a scope not asked for is said once per provider,
    /// not at every login; every other line as it comes.
    func userinfoNotice(_ p: OAuth2Provider) -> (String) -> Void {
        let session = session
        return { line in
            guard line.hasPrefix(OAuth2Login.userinfoNotShown) else { return session.notices.notice(line) }
            let runtime = session.settings.runtimeDirectory
            let mark =
                runtime + "/said-userinfo-"
                + String(p.name.filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }.prefix(64))
            if OnceMark.seen(mark, within: 365 * 86400, now: session.clock.now) { return }
            try? PrivateDirectory.ensure(runtime)
            OnceMark.mark(mark)
            session.notices.notice(line)
        }
    }

    /// One owner per service: a credential another provider stored under
    /// `id` is not replaced without --force (64, before anyone is asked).
    /// Returns what is stored under `id` now.
    func checkOwner(_ id: CredentialID, provider: String) throws -> Credential? {
        let stored = try session.vault().load(id)
        if !options.force,
            let conflict = stored?.ownerConflict(with: provider, command: "login \(ShellWord.word(provider))")
        {
            throw conflict
        }
        return stored
    }

    /// Ctrl-C from here until the store says that nothing was stored, and
    /// what `id` holds meanwhile (docs/security.md, "Interrupted").
    func sayNothingStored(_ id: CredentialID, provider: String, before: Credential?) {
        let kept = before == nil ? "\(id) still has no credential" : "the credential stored under \(id) is unchanged"
        Interruption.say("nothing was stored: the login to \(provider) did not finish, and \(kept)")
    }

    /// Writes the new credential with Ctrl-C held back, so what Ctrl-C
    /// says afterwards is known: it is stored.
    func store(_ credential: Credential, provider: String) throws {
        try Interruption.holding {
            try session.vault().write(credential)
            Interruption.say("the login to \(provider) had finished: its credential is stored under \(credential.id)")
        }
    }

    enum Pending {
        case held(LoginLock)
        case finished(Credential)
    }

    /// The login lock for `id`, or the credential another process's login
    /// for it stored while this one waited. Where nobody can wait, a pending
    /// login is a temporary failure (75): no second browser.
    func pendingLogin(_ id: CredentialID, provider: String) throws -> Pending {
        let vault = try session.vault()
        let before = try vault.load(id)
        if let held = try LoginLock.attempt(vault, id) { return .held(held) }
        let pid = LoginLock.holder(vault, id).map { " (process \($0))" } ?? ""
        guard presenter.canWait else {
            throw TokenVaultError.temporary(
                "a login to \(provider) for \(id) is already pending\(pid); finish it there, then try again")
        }
        session.notices.notice(
            "a login to \(provider) for \(id) is already pending\(pid); waiting for it (Ctrl-C to stop)")
        Interruption.say("this command stored nothing; the other login\(pid) goes on")
        let bound = Double(options.timeout)
        guard
            let held = try WaitLine.during(
                { "waiting for the other login\(pid): \(WaitLine.left(bound, $0)) (Ctrl-C to stop)" },
                { try LoginLock.wait(vault, id, until: Date().timeIntervalSince1970 + bound) })
        else {
            throw TokenVaultError.temporary(
                "the login to \(provider) for \(id) was still pending after \(options.timeout) s")
        }
        if let after = try vault.load(id), after != before {
            held.release()
            return .finished(after)
        }
        session.notices.notice("the other login did not store anything; starting this one")
        return .held(held)
    }
}
