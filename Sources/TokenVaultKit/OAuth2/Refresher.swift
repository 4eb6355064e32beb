import Dispatch
import FoundationEssentials
import Glibc

/// Refresh on read (docs/providers.md, docs/reference.md): hands out a credential whose access token
/// may be used, renewing it first when its state is `refreshable`. Across
/// processes exactly one renews: each takes the credential's refresh lock,
/// re-reads the stored record, and renews only if it is still stale; the
/// others then find the new record. The new record is stored (only if the
/// record is still the one that was read) before it is returned, so a rotated
/// refresh token is never lost and a `set` or `delete` made meanwhile wins.
/// Where a renewal finds a provider by its name (docs/design.md, "Where each
/// decision lives"): the run's `Session` (presets, the config, discovery),
/// or a test's table.
public protocol ProviderLookup {
    func oauth2Provider(_ name: String) throws -> OAuth2Provider
    /// Its grant from its table alone (no discovery, no secrets), for the
    /// state of a credential; nil when not known.
    func grant(of name: String) -> OAuth2Provider.Grant?
}

extension ProviderLookup {
    public func grant(of name: String) -> OAuth2Provider.Grant? { try? oauth2Provider(name).grant }
}

public struct Refresher: GrantSubjects {
    public var vault: CredentialVault
    public var transport: HTTPTransport
    public var clock: Clock
    /// Where a provider is found by its name: the run's `Session`, or a test's table.
    public var providers: ProviderLookup
    /// Notices for stderr.
    public var warn: (String) -> Void
    /// Told when a renewal was refused (a login is needed) or failed for now (docs/agent.md, "Events").
    public var events: ((Event, CredentialID, String) -> Void)?
    /// Told when the provider was asked and answered with a new token.
    public var exchanged: ((CredentialID) -> Void)?
    /// Seconds between two asks when the server says it does not know the
    /// client it registered: one `invalid_client` can be a blip.
    public var invalidClientPause: Double = 2
    /// The servers' latest DPoP nonces: the run's.
    public var nonces = DPoPNonces()

    public init(
        vault: CredentialVault, transport: HTTPTransport, clock: Clock,
        providers: ProviderLookup, warn: @escaping (String) -> Void
    ) {
        self.vault = vault
        self.transport = transport
        self.clock = clock
        self.providers = providers
        self.warn = warn
    }

    /// The provider `name` resolves to (presets, config, discovery).
    func provider(_ name: String) throws -> OAuth2Provider { try providers.oauth2Provider(name) }

    /// A provider's stored credential of `account`, renewed first when it
    /// needs to be, and checked like its own refresh (its issuer): a token
    /// exchange's subject (docs/providers.md). What fails here is the
    /// subject's (`SubjectFailure`): the exchange is not blamed for it.
    public func subjectCredential(_ name: String, account: String) throws -> Credential? {
        try SubjectFailure.blaming {
            let p = try provider(name)
            let held = try usable(CredentialID(service: p.service, account: account), minValid: 60)
            if let held { try p.checkIssued(held) }
            return held
        }
    }

    /// The state of `c` now (docs/reference.md).
    public func status(of c: Credential, minValid: Int64) -> CredentialStatus {
        CredentialStatus(of: c, now: clock.now, minValid: minValid, grant: { providers.grant(of: $0) })
    }

    /// The stored credential with an access token that may be handed out,
    /// renewed first when its state is `refreshable` (or always, with `force`,
    /// which also asks again after a refusal). Nil when nothing is stored;
    /// exit 4 when a login is required. `loaded` is the record the caller
    /// already read, to spare a second lookup.
    public func usable(
        _ id: CredentialID, minValid: Int64, force: Bool = false, loaded: Credential? = nil
    ) throws -> Credential? {
        guard let first = try loaded ?? vault.load(id) else { return nil }
        let before = status(of: first, minValid: minValid)
        if force {
            guard before.renewal.isPossible else { throw before.loginRequiredError(for: first) }
        } else {
            switch before.state {
            case .valid, .expiring: return first
            case .loginRequired: throw before.loginRequiredError(for: first)
            case .refreshable: break
            }
        }
        // A sibling renewed (or someone stored a new record) while we waited:
        // use its result, even when the provider's lifetime is shorter than
        // min_valid (one refresh, not 32).
        func settled(_ current: Credential) throws -> Credential? {
            guard current != first else { return nil }
            let now = status(of: current, minValid: minValid)
            if now.state == .loginRequired, !force { throw now.loginRequiredError(for: current) }
            return !current.isExpired(at: clock.now) && current.refusal == nil ? current : nil
        }
        return try vault.withRenewalLock(
            id,
            settled: { () throws -> Credential?? in
                guard let current = try vault.load(id) else { return .some(nil) }
                return try settled(current).map { .some($0) }
            }
        ) {
            guard let current = try vault.load(id) else { return nil }
            if let done = try settled(current) { return done }
            return try renew(current, minValid: minValid, force: force)
        }
    }

    /// One renewal of `current`, holding the refresh lock. With `force` (an
    /// explicit `tokenvault refresh`) a renewal that did not happen is an
    /// error even while the old token is still valid.
    private func renew(_ current: Credential, minValid: Int64, force: Bool) throws -> Credential? {
        let id = current.id
        let read = WriteCondition.computed(from: current)
        // A grant that needs no person: its refusal holds only while what it was made from is unchanged.
        if let held = try whileRefused(current, force: force) { return held }
        let fresh: Credential
        do {
            fresh = try exchangeTwiceIfForgotten(current)
        } catch let failure as SubjectFailure {
            // The subject's failure (its login, its issuer): the subject is blamed, not this credential.
            throw failure.error
        } catch let salvage as SalvagedRefresh {
            // The answer is malformed, but its new refresh token is readable: the
            // provider has rotated, so keep it (the access token counts as expired).
            try store(salvage.record, read: read)
            throw salvage.error
        } catch let error as TokenVaultError {
            switch error {
            case .loginRequired:
                // invalid_grant after something outside our lock rotated the token: re-read.
                if let again = try vault.load(id), again.refreshToken != current.refreshToken,
                    !again.isExpired(at: clock.now)
                {
                    return again
                }
                // Remembered (docs/reference.md): no command asks the provider again until a
                // login, a set or an explicit `tokenvault refresh` (for a grant that needs no
                // person: until what it is made from changes).
                throw refused(current, error, read: read)
            case .temporary where !current.isExpired(at: clock.now) && !force:
                events?(.refreshFailed, id, error.errorText)
                let left = (current.expiresAt ?? clock.now) - clock.now
                warn(
                    "could not refresh the token for \(id) (\(error.errorText)); using the current one, valid \(left) s more"
                )
                return current
            case .temporary:
                events?(.refreshFailed, id, error.errorText)
                throw error
            default:
                throw error
            }
        }
        exchanged?(id)
        return try store(fresh, read: read)
    }

    /// Writes a renewal's result if the record is still the one it was computed
    /// from; else whoever wrote meanwhile (a `set`, a `delete`) wins and their
    /// record is returned. A result the store cannot take goes to the spool.
    @discardableResult
    private func store(_ fresh: Credential, read: WriteCondition) throws -> Credential? {
        do {
            if let written = try vault.write(fresh, if: read) { return written }
            return try vault.load(fresh.id)
        } catch let error as TokenVaultError {
            guard vault.keepInSpool(fresh, computedFrom: read) else { throw error }
            warn(
                "could not store the renewed token for \(fresh.id) (\(error.errorText)); it is kept in \(vault.runtimeDirectory)/spool and will be stored by the next run"
            )
            return fresh
        }
    }

    /// An exchange whose `invalid_client`, for a client tokenvault registered
    /// itself, is asked once more after a pause before the registration is
    /// taken for forgotten (a server restarted with its clients in memory): it
    /// is then marked forgotten, so that `login URL` registers again, and the
    /// renewal is a login required. Nothing is deleted: the refresh token and
    /// the old registration stay until a new login has succeeded.
    func exchangeTwiceIfForgotten(_ current: Credential) throws -> Credential {
        func isInvalidClient(_ error: Error) -> Bool {
            if case TokenVaultError.providerRefused(let code, _, _) = error { return code == "invalid_client" }
            return false
        }
        do {
            return try exchange(current)
        } catch let error where isInvalidClient(error) {
            guard let p = try? provider(current.provider ?? ""), p.registeredClient else { throw error }
            Posix.sleep(invalidClientPause)
            do {
                return try exchange(current)
            } catch let again where isInvalidClient(again) {
                if let issuer = p.issuer, var kept = try? vault.registration(for: issuer, clientID: p.clientID) {
                    kept.forgottenAt = clock.now
                    try? vault.keep(kept)
                }
                let server = OutsideText.line(p.issuer ?? p.tokenURL, limit: 200)
                throw TokenVaultError.loginRequired(
                    "\(server) no longer knows the client tokenvault registered there (invalid_client, twice)",
                    hint:
                        "log in to register again: tokenvault login \(ShellWord.word(p.resource ?? current.service.description))"
                )
            }
        }
    }

    /// One token-endpoint exchange: refresh_token, or the grant the client
    /// makes on its own (client_credentials, jwt_bearer) again.
    func exchange(_ current: Credential) throws -> Credential {
        let p = try provider(current.provider ?? "")
        let fields: [(String, String)]
        let client: OAuth2Provider.ClientAuthentication
        let sent: [String]
        if let refreshToken = current.refreshToken {
            try p.checkIssued(current)
            fields = [("grant_type", "refresh_token"), ("refresh_token", refreshToken)] + p.resourceFields
            client = try p.clientCredentials(now: clock.now)
            sent = [refreshToken] + (client.secret.map { [$0] } ?? [])
        } else {
            (fields, client, sent) = try p.ownTokenRequest(
                scopes: p.scopes, now: clock.now, subjects: self, account: current.id.account)
        }
        // A bound credential renews with its own key (docs/security.md, "Sender-constrained tokens").
        let request = HTTPRequest.form(p.tokenURL, fields + client.fields, headers: client.headers)
        let response =
            try current.dpopKey.map { try DPoPKey(pem: SecureBytes(Array($0.utf8))) }.map {
                try $0.send(request, via: transport, now: clock.now, nonces: nonces)
            } ?? transport.send(request)
        let host = p.tokenHost
        let object = try TokenResponse.successFields(
            response, host: host, provider: p.name, sentSecrets: sent, configPath: p.configPath,
            clientTable: p.clientTable, refusesWithoutWords: current.refreshToken != nil)
        var fresh: Credential
        do {
            fresh = try TokenInput.credential(from: object, id: current.id, now: clock.now)
        } catch let error as TokenVaultError {
            guard let rotated = object["refresh_token"]?.string, rotated != current.refreshToken,
                (try? TokenInput.checkToken(rotated, field: "refresh_token")) != nil
            else { throw error }
            var kept = current
            kept.issuer = p.issuedBy
            kept.refreshToken = rotated
            kept.expiresAt = min(current.expiresAt ?? clock.now, clock.now)
            kept.refusal = nil
            kept.updatedAt = clock.now
            throw SalvagedRefresh(record: kept, error: error)
        }
        // Google and others send no new refresh token: keep the old one.
        fresh.refreshToken = fresh.refreshToken ?? current.refreshToken
        fresh.scope = fresh.scope ?? current.scope
        fresh.tokenType = fresh.tokenType ?? current.tokenType
        fresh.dpopKey = current.dpopKey
        fresh.extra = current.extra.merging(fresh.extra) { $1 }
        return p.issued(fresh, previous: current, now: clock.now)
    }
}

/// A renewal whose answer was malformed but carried a readable new refresh token.
struct SalvagedRefresh: Error {
    var record: Credential
    var error: TokenVaultError
}

/// A failure of what a grant trades (a token exchange's subject, an IdP's
/// login): that credential's, said as its own, and never recorded as a
/// refusal of the credential that trades it.
struct SubjectFailure: Error {
    var error: TokenVaultError

    static func blaming<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let failure as SubjectFailure {
            throw failure
        } catch let error as TokenVaultError {
            throw SubjectFailure(error: error)
        }
    }
}

/// Where the grants that trade what the user already holds find it: another
/// provider's stored credential (a token exchange's subject) and an IdP's
/// identity assertion grant (docs/providers.md, "Credentials from an identity").
public protocol GrantSubjects {
    /// A provider's stored credential of `account`, renewed first when it needs to be.
    func subjectCredential(_ name: String, account: String) throws -> Credential?
    /// An ID-JAG for `p` (grant = "id_jag") from its IdP's login of `account`.
    func identityAssertion(for p: OAuth2Provider, scopes: [String], account: String) throws -> String
    /// A provider's stored record of `account` as it is (no renewal), for a refusal's input.
    func storedSubject(_ name: String, account: String, field: String) -> String?
}
