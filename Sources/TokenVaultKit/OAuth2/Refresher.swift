import Foundation

/// Refresh on read (SPEC §7): hands out a credential with at least `minValid`
/// seconds left, refreshing it first when it can. Across processes exactly one
/// refreshes: each takes the credential's lock, re-reads the stored record, and
/// refreshes only if it is still stale; the others then find the new record.
/// The new record is stored before it is returned, so a rotated refresh token
/// is never lost.
public struct Refresher {
    public var store: CredentialStore
    public var transport: HTTPTransport
    public var clock: Clock
    /// Resolves a provider name (presets + config).
    public var provider: (String) throws -> OAuth2Provider
    /// Where the per-credential lock files live.
    public var lockDirectory: String
    /// Notices for stderr.
    public var warn: (String) -> Void

    public init(store: CredentialStore, transport: HTTPTransport, clock: Clock,
                provider: @escaping (String) throws -> OAuth2Provider, lockDirectory: String,
                warn: @escaping (String) -> Void) {
        self.store = store
        self.transport = transport
        self.clock = clock
        self.provider = provider
        self.lockDirectory = lockDirectory
        self.warn = warn
    }

    /// The stored credential, refreshed first when fewer than `minValid` seconds
    /// remain (or always, with `force`). Nil when nothing is stored. `loaded` is
    /// the record the caller already read, to spare a second lookup.
    public func usable(_ id: CredentialID, minValid: Int64, force: Bool = false, loaded: Credential? = nil) throws -> Credential? {
        guard let first = try loaded ?? store.load(id) else { return nil }
        guard force || needsRefresh(first, minValid: minValid) else { return first }
        guard try canRefresh(first) else {
            if force || first.isExpired(at: clock.now) { throw cannotRefresh(first) }
            return first
        }
        let lock = try FileLock(path: try lockPath(for: id))
        defer { lock.release() }
        guard let current = try store.load(id) else { return nil }
        // A sibling refreshed while we waited for the lock: use its result, even
        // when the provider's lifetime is shorter than min_valid (one refresh, not 32).
        if current != first, !current.isExpired(at: clock.now) { return current }
        if !force, !needsRefresh(current, minValid: minValid) { return current }
        do {
            let fresh = try exchange(current)
            try store.save(fresh)
            return fresh
        } catch let error as TokenVaultError {
            switch error {
            case .loginRequired:
                // invalid_grant after something outside our lock rotated the token: re-read.
                if let again = try store.load(id), again.refreshToken != current.refreshToken, !again.isExpired(at: clock.now) {
                    return again
                }
                throw TokenVaultError.loginRequired(
                    "cannot refresh the token for \(id): \(error.localizedDescription); the stored record is kept",
                    hint: current.provider.map { "run: tokenvault login \($0)" })
            case .temporary where !current.isExpired(at: clock.now):
                let left = (current.expiresAt ?? clock.now) - clock.now
                warn("could not refresh the token for \(id) (\(error.localizedDescription)); using the current one, valid \(left) s more")
                return current
            default:
                throw error
            }
        }
    }

    func needsRefresh(_ c: Credential, minValid: Int64) -> Bool {
        guard let left = c.secondsLeft(at: clock.now) else { return false }
        return left < minValid
    }

    /// A refresh token and a provider, or a client-credentials provider.
    func canRefresh(_ c: Credential) throws -> Bool {
        guard c.type == .oauth2, let name = c.provider else { return false }
        if c.refreshToken != nil { return true }
        // Without a refresh token only a client-credentials provider can help; one
        // that is not (fully) configured cannot, and that is "log in again", not 78.
        return (try? provider(name))?.grant == .clientCredentials
    }

    func cannotRefresh(_ c: Credential) -> TokenVaultError {
        let why = c.provider == nil ? "it is tied to no provider (tokenvault set --provider)" : "there is no refresh token"
        let state = c.isExpired(at: clock.now) ? "expired" : "expiring"
        return .loginRequired("the token for \(c.id) is \(state) and cannot be refreshed: \(why)", hint: c.loginHint)
    }

    /// One token-endpoint exchange: refresh_token, or client_credentials again.
    func exchange(_ current: Credential) throws -> Credential {
        let p = try provider(current.provider ?? "")
        var fields: [(String, String)]
        if let refreshToken = current.refreshToken {
            fields = [("grant_type", "refresh_token"), ("refresh_token", refreshToken)]
        } else {
            fields = [("grant_type", "client_credentials")]
            if !p.scopes.isEmpty { fields.append(("scope", p.scopes.joined(separator: " "))) }
        }
        let client = try p.clientCredentials()
        let response = try transport.send(.form(p.tokenURL, fields + client.fields, headers: client.headers))
        let host = (try? ServiceKey(parsing: p.tokenURL).description) ?? p.tokenURL
        var fresh = try TokenResponse.credential(from: response, id: current.id, provider: p.name, host: host, now: clock.now)
        // Google and others send no new refresh token: keep the old one.
        fresh.refreshToken = fresh.refreshToken ?? current.refreshToken
        fresh.scope = fresh.scope ?? current.scope
        fresh.tokenType = fresh.tokenType ?? current.tokenType
        fresh.extra = current.extra.merging(fresh.extra) { $1 }
        return fresh
    }

    func lockPath(for id: CredentialID) throws -> String {
        try PrivateDirectory.ensure(lockDirectory)
        let name = Sodium.hash(Array("\(id.service)\n\(id.account)".utf8)).map { String($0, radix: 16).leftPadded(2) }.joined()
        return lockDirectory + "/refresh-" + name + ".lock"
    }
}

extension Credential {
    /// The hint for a credential the user must log in to again.
    public var loginHint: String {
        let acct = account == Credential.defaultAccount ? "" : " --account \(account)"
        if let provider { return "run: tokenvault login \(provider)\(acct)" }
        return "store a new token: tokenvault set \(service)\(acct) < token.json"
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// A directory only this user can enter: created 0700, refused when someone
/// else owns it or it is open to others (a lock another user could hold).
public enum PrivateDirectory {
    static func ensure(_ path: String) throws {
        var st = stat()
        if lstat(path, &st) != 0 {
            try? FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
                throw TokenVaultError.vault("cannot create \(path): \(String(cString: strerror(errno)))")
            }
            _ = chmod(path, 0o700)
            guard lstat(path, &st) == 0 else { throw TokenVaultError.vault("cannot read \(path)") }
        }
        guard st.st_mode & S_IFMT == S_IFDIR, st.st_uid == geteuid(), st.st_mode & 0o077 == 0 else {
            throw TokenVaultError.permission("\(path) is not a private directory of yours (0700, owned by you)",
                                             hint: "remove it, or set XDG_RUNTIME_DIR to a private directory")
        }
    }

    /// `$XDG_RUNTIME_DIR/tokenvault`, else `/tmp/tokenvault-UID`.
    public static func runtime(environment env: [String: String]) -> String {
        if let r = env["XDG_RUNTIME_DIR"], r.hasPrefix("/"), access(r, W_OK) == 0 { return r + "/tokenvault" }
        return "/tmp/tokenvault-\(geteuid())"
    }
}
