import FoundationEssentials
import Glibc

/// `grant = "token_exchange"` (RFC 8693; docs/providers.md, "Credentials
/// from an identity"): a subject token the user or the machine already has
/// (a CI job's OIDC token, another system's access token) traded at this
/// provider's token endpoint for a token of its own; renewed by trading
/// again, with the subject token read afresh.
struct TokenExchange: Sendable {
    static let grantType = "urn:ietf:params:oauth:grant-type:token-exchange"

    /// Where the subject token is read; nil: from `subjectProvider`'s stored credential.
    var subject: SecretSource?
    /// The provider whose stored credential holds the subject token.
    var subjectProvider: String?
    /// Where the subject token is read, as messages name it.
    var shown: String
    var subjectType: String
    var requestedType: String?

    /// The providers whose credentials are subjects of one another's
    /// exchanges end somewhere: a loop (A's subject B, B's subject A) would
    /// have each renewal wait for the other's, and is refused (78).
    static func checkChain(from name: String, config: Config, configPath: String) throws {
        var seen = [name]
        var next = config.providers[name].flatMap { $0.subject_provider ?? $0.idp }
        while let current = next {
            guard !seen.contains(current) else {
                throw TokenVaultError.config(
                    "provider \(name): subject_provider (or idp) goes round in a loop (\((seen + [current]).joined(separator: " → ")))",
                    hint: "let one of them take its subject token from a file or a command, in \(configPath)")
            }
            seen.append(current)
            next = config.providers[current].flatMap { $0.subject_provider ?? $0.idp }
        }
    }

    /// The token type URIs of RFC 8693 §3 by their short names.
    static func typeURI(_ name: String) -> String? {
        switch name {
        case "access_token", "id_token", "refresh_token", "jwt": "urn:ietf:params:oauth:token-type:\(name)"
        case let uri where uri.hasPrefix("urn:"): uri
        default: nil
        }
    }

    init(_ p: ProviderConfig, provider name: String, configPath: String, in child: ChildContext) throws {
        let table = "[providers.\(Config.tableKey(name))]"
        let given = [p.subject_token_file, p.subject_token_command, p.subject_provider].compactMap { $0 }
        guard given.count == 1 else {
            throw TokenVaultError.config(
                given.isEmpty
                    ? "provider \(name): grant = \"token_exchange\" needs the subject token: subject_token_file, subject_token_command or subject_provider"
                    : "provider \(name): set one of subject_token_file, subject_token_command and subject_provider",
                hint: "set one of them in \(table) of \(configPath)")
        }
        if let file = p.subject_token_file {
            (subject, shown) = (.file(file), file)
        } else if let command = p.subject_token_command {
            let setting = "the subject_token_command of \(table)"
            (subject, shown) = (.command(command, child, setting: setting), setting)
        } else if let other = p.subject_provider {
            guard other != name else {
                throw TokenVaultError.config("provider \(name): subject_provider names the provider itself")
            }
            (subjectProvider, shown) = (other, "the credential of \(other)")
        } else {
            throw TokenVaultError.internal("no subject")
        }
        let kinds = "access_token, id_token, refresh_token, jwt or a urn: token type"
        guard let type = Self.typeURI(p.subject_token_type ?? "access_token") else {
            throw TokenVaultError.config(
                "provider \(name): subject_token_type must be \(kinds), not \(Quoted.text(p.subject_token_type ?? ""))")
        }
        subjectType = type
        if let asked = p.requested_token_type {
            guard let uri = Self.typeURI(asked) else {
                throw TokenVaultError.config(
                    "provider \(name): requested_token_type must be \(kinds), not \(Quoted.text(asked))")
            }
            requestedType = uri
        }
    }

    /// The token request (RFC 8693 §2.1); the subject token read now. One
    /// that is missing, empty or (a JWT) expired is refused before anything is sent.
    /// The field of a stored credential that is a subject token of `subjectType`.
    var subjectField: String {
        for name in ["id_token", "refresh_token"] where subjectType == Self.typeURI(name) { return name }
        return "access_token"
    }

    /// `stored`: the subject provider's credential, valid (renewed first where
    /// it needed to be), when the subject comes from one.
    func fields(
        scopes: [String], audience: String?, resource: [(String, String)], now: Int64, stored: Credential? = nil
    ) throws -> (fields: [(String, String)], subject: String) {
        let token: String
        let what = "the subject token"
        if let subject {
            token = try ForeignToken.read(subject, what: what)
        } else {
            let other = ShellWord.word(subjectProvider ?? "")
            guard let stored else {
                throw TokenVaultError.loginRequired(
                    "the subject token comes from \(shown), and none is stored; nothing was sent",
                    hint: "run: tokenvault login \(other)")
            }
            guard let value = stored.field(subjectField) else {
                throw TokenVaultError.loginRequired(
                    "\(shown) has no \(subjectField) to exchange; nothing was sent",
                    hint:
                        "run: tokenvault login \(other)\(subjectField == "id_token" ? " (with the openid scope)" : "")")
            }
            token = value
        }
        _ = try ForeignToken.checked(token, what: what, shown: shown, now: now, renewedBy: "its issuer replaces it")
        var fields = [
            ("grant_type", Self.grantType), ("subject_token", token), ("subject_token_type", subjectType),
        ]
        if let requestedType { fields.append(("requested_token_type", requestedType)) }
        if let audience { fields.append(("audience", audience)) }
        if !scopes.isEmpty { fields.append(("scope", scopes.joined(separator: " "))) }
        fields += resource
        return (fields, token)
    }
}

/// A token another issuer made, which tokenvault sends on (a workload's JWT,
/// a token exchange's subject): read afresh where it is told to find it,
/// and refused before anything is sent when it is empty or, being a JWT,
/// past its `exp`, naming where it was read.
enum ForeignToken {
    /// What `source` holds, without surrounding whitespace; the bytes wiped.
    static func read(_ source: SecretSource, what: String) throws -> String {
        var bytes = try source.bytes(what: what) { TokenVaultError.config($0) }
        defer { Sodium.wipe(&bytes) }
        return String(decoding: bytes, as: UTF8.self).trimmedWhitespace()
    }

    /// `token` checked: not empty, and not expired when it is a JWT (whose
    /// claims are returned; nil: not a JWT). `renewedBy`: who replaces it.
    static func checked(
        _ token: String, what: String, shown: String, now: Int64, renewedBy: String
    ) throws -> [String: JSONValue]? {
        guard !token.isEmpty else {
            throw TokenVaultError.config("\(what) read from \(shown) is empty; nothing was sent")
        }
        let claims = JWT.claims(of: token)
        if let exp = claims?["exp"]?.int64, exp <= now {
            throw TokenVaultError.temporary(
                "\(what) read from \(shown) expired \(now - exp) s ago; nothing was sent",
                hint: "\(renewedBy): check that it still does, then try again")
        }
        return claims
    }
}
