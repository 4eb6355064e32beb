import Dispatch
import FoundationEssentials
import Glibc

/// What kind of credential a record holds; also the `type` attribute in the Secret Service.
public enum CredentialType: String, Codable, Sendable, CaseIterable {
    case oauth2, oauth1, token
}

/// Which stored credential: a service and an account.
public struct CredentialID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let service: ServiceKey
    public let account: String

    public init(service: ServiceKey, account: String = Credential.defaultAccount) {
        self.service = service
        self.account = account
    }

    public static func < (a: CredentialID, b: CredentialID) -> Bool {
        (a.service.description, a.account) < (b.service.description, b.account)
    }

    public var description: String { "\(service) (\(account))" }

    /// The longest account name, in UTF-8 bytes: limits count bytes, not
    /// characters (one character can carry thousands of combining marks).
    public static let maxAccountBytes = 256

    /// The start of the account a client registration is kept under
    /// (docs/reference.md): no user can name it, and no listing shows it.
    public static let registrationAccount = "tokenvault:client"

    /// A client registration kept for an authorization server, not a credential.
    public var isRegistration: Bool { account.hasPrefix(Self.registrationAccount + ":") }

    /// Validates an `--account` value: one printable line, 1 to 256 bytes of UTF-8,
    /// not starting with the reserved `tokenvault:`.
    public static func validateAccount(_ account: String) throws {
        if account.hasPrefix("tokenvault:") {
            throw TokenVaultError.usage(
                "invalid account \(Quoted.text(account)): names starting with 'tokenvault:' are tokenvault's own")
        }
        if account.isEmpty || account.utf8.count > maxAccountBytes
            || account.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
            || account != account.trimmedSpaces()
        {
            throw TokenVaultError.usage(
                "invalid account \(Quoted.text(account)): use 1 to \(maxAccountBytes) bytes of printable characters")
        }
    }
}

/// One stored credential: the JSON record that is the Secret Service item's
/// secret, or one entry of the file vault.
public struct Credential: Equatable, Sendable {
    public static let defaultAccount = "default"

    public var service: ServiceKey
    public var account: String
    public var type: CredentialType
    public var provider: String?
    public var accessToken: String
    public var refreshToken: String?
    /// OAuth 1.0a token secret.
    public var tokenSecret: String?
    public var tokenType: String?
    public var scope: String?
    /// Unix seconds; nil when the token does not expire.
    public var expiresAt: Int64?
    /// When the refresh token dies (docs/providers.md): told by the provider
    /// (`refresh_token_expires_in`) or estimated from its `refresh_token_lifetime`
    /// / `refresh_token_idle`; nil when unknown.
    public var refreshExpiresAt: Int64?
    /// Fields the provider sent that have no place above (`uid`, `screen_name`, …).
    public var extra: [String: JSONValue]
    /// Unix seconds of the last write, so a stale copy never wins over a newer one.
    public var updatedAt: Int64
    /// Counts the writes of this record, and never repeats for a service and
    /// account: a new record starts at its creation time in microseconds, so a
    /// record made after a delete never takes an old record's number
    /// (docs/security.md).
    public var generation: Int64 = 0
    /// Where the credential was obtained: its provider's `issuer`, else the
    /// origin of its token endpoint. A refresh token goes nowhere else.
    public var issuer: String?
    /// The provider refused the last renewal (docs/reference.md): remembered until a
    /// login, a `set` or a successful `refresh` writes a new record.
    public var refusal: Refusal?
    /// The private key a DPoP-bound token is bound to (PKCS#8 PEM; docs/security.md,
    /// "Sender-constrained tokens"): kept with the tokens, never printed.
    public var dpopKey: String?
    /// Set only on a listing's stand-in for a stored record that cannot be
    /// read (docs/reference.md, "Credential state"): why. Never stored.
    public var unusable: String?
    /// Set only on a record read from a Secret Service item that is not
    /// tokenvault's (another schema: one stored by hand with `secret-tool`,
    /// another application's): read where tokenvault has none, never changed or
    /// deleted (docs/security.md, "Other applications' secrets"). Never stored.
    public var foreignItem = false

    public var id: CredentialID { CredentialID(service: service, account: account) }

    public init(
        service: ServiceKey, account: String = Credential.defaultAccount, type: CredentialType,
        provider: String? = nil, accessToken: String, refreshToken: String? = nil,
        tokenSecret: String? = nil, tokenType: String? = nil, scope: String? = nil,
        expiresAt: Int64? = nil, extra: [String: JSONValue] = [:], updatedAt: Int64 = 0
    ) {
        self.service = service
        self.account = account
        self.type = type
        self.provider = provider
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.tokenSecret = tokenSecret
        self.tokenType = tokenType
        self.scope = scope
        self.expiresAt = expiresAt
        self.extra = extra
        self.updatedAt = updatedAt
    }

    /// Seconds of validity left at `now`; nil when it never expires.
    public func secondsLeft(at now: Int64) -> Int64? { expiresAt.map { $0 - now } }

    public func isExpired(at now: Int64) -> Bool { (expiresAt ?? Int64.max) <= now }

    /// Names this exact record (every field, generation included): a write
    /// computed from a read lands only while the stored record still has the
    /// fingerprint of the one read (`WriteCondition`).
    public var fingerprint: [UInt8] { Sodium.hash(Array(recordJSON()), bytes: 32) }

    /// Of two copies of one credential, the one written last.
    public func isNewer(than other: Credential) -> Bool {
        (updatedAt, generation) > (other.updatedAt, other.generation)
    }

    /// Extra fields that name who logged in, in the order `status` prefers
    /// them; cleaned for the terminal where they enter (`OutsideText.line`).
    public static let displayKeys = [
        "screen_name", "name", "login", "username", "fullname", "preferred_username", "email",
    ]

    /// The `--field` names that stand for the access token itself.
    public static let accessTokenFields: Set<String> = ["access_token", "token", "oauth_token"]

    /// The names `get --field` accepts for this record.
    public var fieldNames: [String] {
        var names = ["access_token", "service", "account", "type"]
        if refreshToken != nil { names.append("refresh_token") }
        if tokenSecret != nil { names.append("token_secret") }
        if tokenType != nil { names.append("token_type") }
        if scope != nil { names.append("scope") }
        if expiresAt != nil { names.append("expires_at") }
        if refreshExpiresAt != nil { names.append("refresh_expires_at") }
        if provider != nil { names.append("provider") }
        if dpopKey != nil { names.append("dpop_jkt") }
        return names + extra.keys.sorted()
    }

    /// The value of one field as `get --field` prints it, or nil when absent.
    public func field(_ name: String) -> String? {
        switch name {
        case "access_token", "token", "oauth_token": return accessToken
        case "refresh_token": return refreshToken
        case "token_secret", "oauth_token_secret": return tokenSecret
        case "token_type": return tokenType
        case "scope": return scope
        case "expires_at": return expiresAt.map { String($0) }
        case "refresh_expires_at": return refreshExpiresAt.map { String($0) }
        case "provider": return provider
        case "service": return service.description
        case "account": return account
        case "type": return type.rawValue
        case "dpop_jkt": return dpopThumbprint
        case "dpop_key": return nil
        default: return extra[name]?.text
        }
    }
}

// MARK: - The record's JSON form (the secret in the Secret Service, an entry in the vault)

extension Credential {
    private static let knownKeys: Set<String> = [
        "version", "service", "account", "type", "provider", "access_token", "refresh_token",
        "token_secret", "token_type", "scope", "expires_at", "refresh_expires_at", "extra", "updated_at", "generation",
        "refused", "issuer", "dpop_key",
    ]

    /// The record as stored: a JSON object with sorted keys.
    public func recordJSON() -> Data {
        var o: [String: JSONValue] = [
            "version": .integer(1),
            "service": .string(service.description),
            "account": .string(account),
            "type": .string(type.rawValue),
            "access_token": .string(accessToken),
            "updated_at": .integer(updatedAt),
        ]
        if let provider { o["provider"] = .string(provider) }
        if let refreshToken { o["refresh_token"] = .string(refreshToken) }
        if let tokenSecret { o["token_secret"] = .string(tokenSecret) }
        if let tokenType { o["token_type"] = .string(tokenType) }
        if let scope { o["scope"] = .string(scope) }
        if let expiresAt { o["expires_at"] = .integer(expiresAt) }
        if let refreshExpiresAt { o["refresh_expires_at"] = .integer(refreshExpiresAt) }
        if !extra.isEmpty { o["extra"] = .object(extra) }
        if generation != 0 { o["generation"] = .integer(generation) }
        if let issuer { o["issuer"] = .string(issuer) }
        if let refusal {
            var r: [String: JSONValue] = ["reason": .string(refusal.reason), "at": .integer(refusal.at)]
            if let input = refusal.input { r["input"] = .string(input) }
            o["refused"] = .object(r)
        }
        if let dpopKey { o["dpop_key"] = .string(dpopKey) }
        return (try? JSONEncoder.sorted.encode(JSONValue.object(o))) ?? Data()
    }

    /// The record as `get --format json` prints it: a DPoP key only by its
    /// thumbprint (`dpop_jkt`), never itself.
    public func shownJSON() -> Data {
        guard dpopKey != nil, case .object(var o)? = JSONValue.parsed(recordJSON()) else { return recordJSON() }
        o["dpop_key"] = nil
        o["dpop_jkt"] = dpopThumbprint.map { .string($0) } ?? .string("unreadable")
        return (try? JSONEncoder.sorted.encode(JSONValue.object(o))) ?? Data()
    }

    /// The thumbprint of the record's DPoP key (RFC 7638), the `jkt` its token is bound to.
    public var dpopThumbprint: String? {
        dpopKey.flatMap { try? DPoPKey(pem: SecureBytes(Array($0.utf8))).thumbprint }
    }

    /// Reads a stored record. `id` is where it was found: it wins over what
    /// the record says, and a bare token (an item stored by `secret-tool store`)
    /// becomes a `token` record. A record is checked as `set` checks its input,
    /// whoever wrote it: a token with a line break or a control character would
    /// inject a header line or an extra output line (65, naming the item).
    /// `decoded`: the agent's record of what it decoded already (a record is
    /// decoded once per exact bytes); nil in a command.
    public static func fromRecord(_ data: Data, id: CredentialID, decoded: DecodedRecords? = nil) throws -> Credential {
        if let decoded { return try decoded.decode(data, id: id) { try checkedRecord($0, id: $1) } }
        return try checkedRecord(data, id: id)
    }

    /// A stored record for a listing: the credential, or, when the record
    /// cannot be read, a stand-in that says why (`unusable`), so that one bad
    /// record never takes a whole listing down.
    public static func listed(_ data: Data, id: CredentialID, decoded: DecodedRecords? = nil) -> Credential {
        do {
            return try fromRecord(data, id: id, decoded: decoded)
        } catch {
            return unusableRecord(id, why: error.errorText)
        }
    }

    /// The stand-in for the stored record of `id` that cannot be read.
    public static func unusableRecord(_ id: CredentialID, why: String) -> Credential {
        var c = Credential(service: id.service, account: id.account, type: .token, accessToken: "")
        c.unusable = why
        return c
    }

    private static func checkedRecord(_ data: Data, id: CredentialID) throws -> Credential {
        let c = try decodeRecord(data, id: id)
        do {
            // Times and counts that arithmetic is done on: a record another tool
            // wrote with an absurd number is refused, never a crash.
            for (field, value) in [
                ("expires_at", c.expiresAt), ("refresh_expires_at", c.refreshExpiresAt), ("updated_at", c.updatedAt),
                ("refused.at", c.refusal?.at),
            ] {
                if let value, !(0...TokenInput.maxTime).contains(value) {
                    throw TokenVaultError.badInput("\(field) is \(value), not a time from 1970 to 9999")
                }
            }
            if c.generation < 0 || c.generation == .max {
                throw TokenVaultError.badInput("generation is \(c.generation)")
            }
            try TokenInput.checkToken(c.accessToken, field: "access_token")
            if let r = c.refreshToken { try TokenInput.checkToken(r, field: "refresh_token") }
            if let s = c.tokenSecret { try TokenInput.checkToken(s, field: "token_secret") }
        } catch let TokenVaultError.badInput(why) {
            throw TokenVaultError.badInput("the stored record for \(id) is unusable: \(why)")
        }
        return c
    }

    private static func decodeRecord(_ data: Data, id: CredentialID) throws -> Credential {
        let object: [String: JSONValue]
        if let decoded = JSONValue.parsed(data), case .object(let o) = decoded {
            object = o
        } else {
            let text = String(decoding: data, as: UTF8.self).trimmedWhitespace()
            guard !text.isEmpty, !text.contains(where: { $0.isNewline }) else {
                throw TokenVaultError.badInput(
                    "the stored record for \(id) is unusable: it is neither a JSON record nor one token line")
            }
            return Credential(service: id.service, account: id.account, type: .token, accessToken: text)
        }
        guard let access = object["access_token"]?.string, !access.isEmpty else {
            throw TokenVaultError.vault("the stored record for \(id) has no access token")
        }
        var c = Credential(
            service: id.service, account: id.account,
            type: object["type"]?.string.flatMap(CredentialType.init(rawValue:)) ?? .token,
            accessToken: access)
        c.provider = object["provider"]?.string
        c.refreshToken = object["refresh_token"]?.string
        c.tokenSecret = object["token_secret"]?.string
        c.tokenType = object["token_type"]?.string
        c.scope = object["scope"]?.string
        c.expiresAt = object["expires_at"]?.int64
        c.refreshExpiresAt = object["refresh_expires_at"]?.int64
        c.updatedAt = object["updated_at"]?.int64 ?? 0
        c.generation = object["generation"]?.int64 ?? 0
        c.issuer = object["issuer"]?.string
        c.dpopKey = object["dpop_key"]?.string
        if case .object(let r)? = object["refused"], let reason = r["reason"]?.string {
            c.refusal = Refusal(reason: reason, at: r["at"]?.int64 ?? 0, input: r["input"]?.string)
        }
        if case .object(let extra)? = object["extra"] { c.extra = extra }
        // Fields written by hand at the top level are kept, not lost.
        for (k, v) in object where !knownKeys.contains(k) { c.extra[k] = v }
        return c
    }
}

extension Credential {
    /// One owner per service (README, "Exit status"): a `login` or
    /// `set --provider` for `provider` that would
    /// replace this record, which another provider stored, is a usage error
    /// (64) naming both and the ways out; nil when it may go ahead. `command`
    /// is how the user asked, for the hints (`login NAME`, `set SERVICE --provider NAME`).
    public func ownerConflict(with provider: String, command: String) -> TokenVaultError? {
        guard let owner = self.provider, owner != provider else { return nil }
        let acct = account == Credential.defaultAccount ? "" : " --account \(ShellWord.word(account))"
        return .usage(
            "\(id) holds a credential of provider \(owner); \(provider) would replace it",
            hint: "keep both: tokenvault \(command) --account NAME; replace it: tokenvault \(command)\(acct) --force")
    }
}

/// A renewal the provider refused (`invalid_grant`, `access_denied`,
/// `expired_token`): why, and when (unix seconds).
public struct Refusal: Equatable, Sendable {
    public var reason: String
    public var at: Int64
    /// For a grant that needs no person: a fingerprint of what the refused
    /// request was made from (its assertion, subject token, client secret and
    /// table). The refusal holds only while that is unchanged: a rotated
    /// assertion file or a subject that works again is tried at the next use
    /// (docs/reference.md, "Credential state"). Nil: a login ends it.
    public var input: String?

    public init(reason: String, at: Int64, input: String? = nil) {
        self.reason = reason
        self.at = at
        self.input = input
    }
}
