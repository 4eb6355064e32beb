import FoundationEssentials

/// What the credential policy asks of the run it serves: the run's
/// `Session`, or a test's double. Read only when a credential needs it (the
/// config behind `minValid` and the refresher is read only when one expires).
public protocol AccessRun: AnyObject {
    /// The refresher of this run; asked for only when a credential expires.
    func refresher() throws -> Refresher
    /// `min_valid` in seconds: `option` (a command's `--min-valid`), else the config's.
    func minValid(_ option: Int?) throws -> Int64
    /// `warn_before` in seconds (0: never warn).
    var warnBeforeSeconds: Int64 { get }
    /// Where the run's notices go.
    var notices: Notices { get }
    /// The error for a credential that is not stored (exit 3, with the next step).
    func notFound(_ id: CredentialID) throws -> TokenVaultError
    /// Tells the run's hooks and desktop (docs/agent.md, "Events").
    func emit(_ event: Event, _ id: CredentialID, reason: String)
    /// Renewing `c` failed with `error`, which is thrown next.
    func renewalFailed(_ error: Error, _ c: Credential)
    /// The first token of `id` when its provider's grant needs no person
    /// (client credentials, an assertion, an exchange), fetched and stored
    /// now; nil when it needs a login.
    func firstToken(_ id: CredentialID) throws -> Credential?
}

extension AccessRun {
    public func firstToken(_ id: CredentialID) throws -> Credential? { nil }
}

/// The credential policy of a command that hands out a credential
/// (docs/design.md, "Where each decision lives"): whether the record is
/// renewed first, when it is handed out as it is, and when the user is
/// warned that its refresh token dies. On the store, HTTP and clock
/// protocols and the run it serves (`AccessRun`), so that it is driven by
/// unit tests.
public struct CredentialAccess {
    public var vault: CredentialVault
    public var clock: Clock
    /// The run it serves.
    public let run: AccessRun
    /// A command's `--min-valid`, else the config's `min_valid`.
    public var minValidOption: Int?

    public init(vault: CredentialVault, clock: Clock, run: AccessRun, minValid option: Int? = nil) {
        self.vault = vault
        self.clock = clock
        self.run = run
        self.minValidOption = option
    }

    private func refresher() throws -> Refresher { try run.refresher() }
    private func minValid() throws -> Int64 { try run.minValid(minValidOption) }
    private func notFound(_ id: CredentialID) throws -> TokenVaultError { try run.notFound(id) }
    private func failed(_ error: Error, _ c: Credential) { run.renewalFailed(error, c) }
    private func warn(_ line: String) { run.notices.warning(line) }

    /// The credential whose access token a command hands out (raw `get`,
    /// `header`, `exec`, `refresh`): renewed first when its state is
    /// refreshable (always, with `force`); exit 4 when a login is required, 3
    /// when nothing is stored. Without `refresh`, a stale token that could be
    /// renewed is still a login-required error only when it can no longer be used.
    public func usable(_ id: CredentialID, refresh: Bool = true, force: Bool = false) throws -> Credential {
        let c = try renewedIfNeeded(id, refresh: refresh, force: force)
        warnIfRefreshTokenDying(c)
        return c
    }

    /// What is stored under `id`; for a grant that needs no person with
    /// nothing stored yet, its first token, fetched now (docs/providers.md).
    private func loaded(_ id: CredentialID, refresh: Bool) throws -> Credential? {
        if let stored = try vault.load(id) { return stored }
        return refresh ? try run.firstToken(id) : nil
    }

    private func renewedIfNeeded(_ id: CredentialID, refresh: Bool, force: Bool) throws -> Credential {
        guard let first = try loaded(id, refresh: refresh) else { throw try notFound(id) }
        if first.expiresAt == nil, first.refusal == nil, !force { return first }
        let refresher = try refresher()
        let minValid = try minValid()
        guard refresh else {
            let status = refresher.status(of: first, minValid: minValid)
            guard status.canHandOut else { throw status.loginRequiredError(for: first) }
            return first
        }
        do {
            guard let c = try refresher.usable(id, minValid: minValid, force: force, loaded: first) else {
                throw try notFound(id)
            }
            return c
        } catch {
            failed(error, first)
            throw error
        }
    }

    /// The stored record as it is, for `get --format json` and `--field`:
    /// handed out whatever the access token's state. With `refresh`, a
    /// refreshable credential is renewed first when it can be; when it
    /// cannot, the stored record is handed out all the same, with a warning.
    public func stored(_ id: CredentialID, refresh: Bool) throws -> Credential {
        guard let found = try vault.locate(id)?.credential ?? loaded(id, refresh: refresh) else {
            throw try notFound(id)
        }
        guard refresh, found.expiresAt != nil, found.refusal == nil else { return found }
        let refresher = try refresher()
        let minValid = try minValid()
        guard refresher.status(of: found, minValid: minValid).state == .refreshable else { return found }
        do {
            return try refresher.usable(id, minValid: minValid, loaded: found) ?? found
        } catch let error as TokenVaultError {
            failed(error, found)
            // Whatever the provider (or its config) did, what is stored is still handed out.
            warn("\(error.errorText); printing what is stored")
            return try vault.load(id) ?? found
        }
    }

    /// When `c`'s refresh token dies within `warnBefore` seconds of `now`:
    /// that moment; nil when it does not, or nobody knows. `warnBefore` (the
    /// config) is read only for a credential whose refresh token has an end.
    public static func refreshTokenDies(
        _ c: Credential, within warnBefore: @autoclosure () -> Int64, now: Int64
    ) -> Int64? {
        guard c.refreshToken != nil, let at = c.refreshExpiresAt else { return nil }
        let window = warnBefore()
        return window > 0 && at - now < window ? at : nil
    }

    /// Warns, once a day per credential (a mark in the runtime directory),
    /// when its refresh token dies within `warn_before` (docs/providers.md).
    public func warnIfRefreshTokenDying(_ c: Credential) {
        let now = clock.now
        guard let at = Self.refreshTokenDies(c, within: run.warnBeforeSeconds, now: now) else { return }
        let mark = vault.lockPath("warned", c.id)
        if OnceMark.seen(mark, within: 86400, now: now) { return }
        let when =
            at > now
            ? "dies in \(Format.ago(at - now)) (\(Format.date(at)))"
            : "may have died \(Format.ago(now - at)) ago (\(Format.date(at)))"
        warn(
            "the refresh token for \(c.id) \(when); log in again before then: \(c.loginHint.replacing("run: ", with: ""))"
        )
        run.emit(.refreshTokenExpiring, c.id, reason: "the refresh token \(when)")
        try? PrivateDirectory.ensure(vault.runtimeDirectory)
        OnceMark.mark(mark, at: now)  // the day starts again
    }
}
