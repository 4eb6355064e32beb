import Dispatch
import FoundationEssentials
import Glibc

/// The largest input `set` reads, and the largest provider response accepted.
public let maxTokenInputBytes = 1 << 20

/// Parses what `set` reads from stdin (and, later, a token endpoint's answer):
/// a token-endpoint JSON object or one bare token line (docs/reference.md `set`).
public enum TokenInput {
    /// Builds the credential for `id` from `data`, received at `now`.
    public static func parse(_ data: Data, id: CredentialID, now: Int64) throws -> Credential {
        guard data.count <= maxTokenInputBytes else {
            throw TokenVaultError.badInput("the input is larger than 1 MiB")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw TokenVaultError.badInput("the input is not UTF-8 text")
        }
        let trimmed = text.trimmedWhitespace()
        if trimmed.isEmpty {
            throw TokenVaultError.badInput("no token on stdin: give a token-endpoint JSON object or one token line")
        }
        if trimmed.hasPrefix("{") || trimmed.hasPrefix("[") || trimmed.hasPrefix("\"") {
            return try parseJSON(Data(trimmed.utf8), id: id, now: now)
        }
        if trimmed == "null" || trimmed == "undefined" {
            throw TokenVaultError.badInput("the input is '\(trimmed)', not a token (did jq find no access_token?)")
        }
        // Neither JSON nor one token line: say where the JSON went wrong.
        if trimmed.contains(where: { $0.isNewline }) || (try? checkToken(trimmed, field: "token")) == nil {
            let where_ =
                JSONSyntax.firstProblem(trimmed).map { "line \($0.line), column \($0.column): \($0.what)" } ?? "?"
            throw TokenVaultError.badInput(
                "the input is not JSON (\(where_)), nor one token line (a token has no white space or control characters)"
            )
        }
        return Credential(service: id.service, account: id.account, type: .token, accessToken: trimmed, updatedAt: now)
    }

    static func parseJSON(_ data: Data, id: CredentialID, now: Int64) throws -> Credential {
        guard data.count <= maxTokenInputBytes else { throw TokenVaultError.badInput("the input is larger than 1 MiB") }
        let value: JSONValue
        do {
            value = try JSONSyntax.parse(data)
        } catch let problem as JSONSyntax.Problem {
            throw TokenVaultError.badInput(
                "the input is not JSON (line \(problem.line), column \(problem.column): \(problem.what))")
        }
        guard case .object(let o) = value else {
            throw TokenVaultError.badInput("the input must be a JSON object, not another JSON value")
        }
        return try credential(from: o, id: id, now: now)
    }

    /// A token endpoint's fields (JSON, or form-encoded as strings) as a credential received at `now`.
    public static func credential(from object: [String: JSONValue], id: CredentialID, now: Int64) throws -> Credential {
        var o = object
        if let err = o["error"]?.string {
            throw TokenVaultError.badInput("the input is an error response (\(safe(err))), not a token")
        }
        var c = try tokens(taking: &o, id: id)
        // Shown by `status`: cleaned here, where they enter.
        if let t = o.removeValue(forKey: "token_type"), t != .null { c.tokenType = OutsideText.line(t.text, limit: 64) }
        if let s = o.removeValue(forKey: "scope"), s != .null {
            let text: String
            if case .array(let items) = s { text = items.map(\.text).joined(separator: " ") } else { text = s.text }
            c.scope = OutsideText.line(text, limit: 4096)
        }
        try readExpiries(taking: &o, into: &c, now: now)
        for key in ["provider", "service", "account", "type", "version", "updated_at", "issuer"] {
            o.removeValue(forKey: key)
        }
        for key in Credential.displayKeys {
            if case .string(let v)? = o[key] { o[key] = .string(OutsideText.line(v)) }
        }
        c.extra = o
        c.updatedAt = now
        return c
    }

    /// The tokens: OAuth 1.0a's token and secret, or OAuth 2.0's access token
    /// and refresh token, taken out of `o`.
    private static func tokens(taking o: inout [String: JSONValue], id: CredentialID) throws -> Credential {
        var c: Credential
        if let token = o.removeValue(forKey: "oauth_token") {
            guard let t = token.string, !t.isEmpty else {
                throw TokenVaultError.badInput("oauth_token must be a non-empty string")
            }
            guard let s = o.removeValue(forKey: "oauth_token_secret")?.string, !s.isEmpty else {
                throw TokenVaultError.badInput("an OAuth 1.0a token needs oauth_token_secret")
            }
            try checkToken(t, field: "oauth_token")
            try checkToken(s, field: "oauth_token_secret")
            c = Credential(service: id.service, account: id.account, type: .oauth1, accessToken: t, tokenSecret: s)
        } else {
            guard let t = o.removeValue(forKey: "access_token") else {
                throw TokenVaultError.badInput("the JSON object has no access_token (nor oauth_token)")
            }
            guard let token = t.string, !token.isEmpty else {
                throw TokenVaultError.badInput("access_token must be a non-empty string")
            }
            try checkToken(token, field: "access_token")
            c = Credential(service: id.service, account: id.account, type: .oauth2, accessToken: token)
        }
        if let r = o.removeValue(forKey: "refresh_token"), r != .null {
            guard let s = r.string, !s.isEmpty else {
                throw TokenVaultError.badInput("refresh_token must be a non-empty string")
            }
            try checkToken(s, field: "refresh_token")
            c.refreshToken = s
        }
        return c
    }

    /// When the access token and the refresh token die, taken out of `o`:
    /// `expires_at` or `expires_in`; GitHub Apps send
    /// `refresh_token_expires_in`, Keycloak `refresh_expires_in` (0 there means "no limit").
    private static func readExpiries(taking o: inout [String: JSONValue], into c: inout Credential, now: Int64) throws {
        let expiresIn = o.removeValue(forKey: "expires_in")
        let expiresAt = o.removeValue(forKey: "expires_at")
        if let e = expiresAt, e != .null {
            c.expiresAt = try parseTime(e)
        } else if let e = expiresIn, e != .null {
            guard let seconds = seconds(e, in: 0...maxLifetime) else {
                throw TokenVaultError.badInput(
                    "expires_in must be a whole number of seconds from 0 to \(maxLifetime), got \(safe(e.text))")
            }
            c.expiresAt = now + seconds
        }
        if let e = o.removeValue(forKey: "refresh_expires_at"), e != .null {
            c.refreshExpiresAt = try parseTime(e)
        }
        for key in ["refresh_token_expires_in", "refresh_expires_in"] {
            guard let e = o.removeValue(forKey: key), e != .null, c.refreshExpiresAt == nil else { continue }
            guard let seconds = seconds(e, in: 0...maxLifetime) else {
                throw TokenVaultError.badInput(
                    "\(key) must be a whole number of seconds from 0 to \(maxLifetime), got \(safe(e.text))")
            }
            if seconds > 0 { c.refreshExpiresAt = now + seconds }
        }
    }

    /// The longest lifetime accepted (100 years), and the latest expiry (the end of 9999).
    public static let maxLifetime: Int64 = 100 * 365 * 86400
    public static let maxTime: Int64 = 253_402_300_799

    /// A whole number from outside (a JSON number, or a string of one, as
    /// providers send both) within `range`; nil for anything else: NaN,
    /// infinities, fractions, and values that would not fit.
    public static func seconds(_ v: JSONValue, in range: ClosedRange<Int64>) -> Int64? {
        let d: Double
        switch v {
        case .integer(let i): return range.contains(i) ? i : nil
        case .number(let n): d = n
        case .string(let s):
            let t = s.trimmedSpaces()
            if let i = Int64(t) { return range.contains(i) ? i : nil }
            guard let n = Double(t) else { return nil }
            d = n
        default: return nil
        }
        guard d.isFinite, d == d.rounded(), d >= Double(range.lowerBound), d <= Double(range.upperBound) else {
            return nil
        }
        return Int64(d)
    }

    /// Unix seconds (number or digits) or an RFC 3339 time, up to the end of 9999.
    static func parseTime(_ v: JSONValue) throws -> Int64 {
        if case .string(let s) = v, s.contains("-") || s.contains(":") {
            // An RFC 3339 time, below.
        } else if let i = seconds(v, in: 0...maxTime) {
            return i
        }
        if let s = v.string {
            if let t = RFC3339.parse(s), t.isFinite, t >= 0, t <= Double(maxTime) { return Int64(t) }
        }
        throw TokenVaultError.badInput(
            "expires_at must be unix seconds or an RFC 3339 time up to 9999, got \(safe(v.text))")
    }

    /// Tokens go into headers and `export` lines: refuse what would break them.
    static func checkToken(_ s: String, field: String) throws {
        if s.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F }) {
            throw TokenVaultError.badInput("\(field) contains white space or control characters")
        }
    }

    /// A value quoted for a message: short, and never a control character.
    static func safe(_ s: String) -> String {
        Quoted.text(s)
    }
}
