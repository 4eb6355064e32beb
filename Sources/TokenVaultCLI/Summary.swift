import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

/// The secret-free view of a credential that `list` and `status` print.
enum Summary {
    static func displayName(_ c: Credential) -> String? {
        for key in Credential.displayKeys {
            if let v = c.extra[key]?.string, !v.isEmpty { return OutsideText.line(v) }
        }
        let claims = idTokenClaims(c)
        return claims["name"] ?? claims["email"]
    }

    /// `sub`, `email` and `name` of the id_token, decoded and not verified:
    /// shown, never trusted for anything else (docs/providers.md).
    static func idTokenClaims(_ c: Credential) -> [String: String] {
        guard let token = c.extra["id_token"]?.string, let claims = JWT.claims(of: token) else { return [:] }
        var out: [String: String] = [:]
        for key in ["sub", "email", "name"] {
            // Decoded here from a token a provider sent: cleaned where it enters.
            if let v = claims[key]?.string, !v.isEmpty { out[key] = OutsideText.line(v) }
        }
        return out
    }

    static func json(_ s: StoredCredential, status: CredentialStatus) -> JSONValue {
        let c = s.credential
        if let why = c.unusable {
            return .object([
                "service": .string(c.service.description), "account": .string(c.account),
                "backend": .string(s.backend), "state": .string("unusable"), "unusable": .string(why),
            ])
        }
        var o: [String: JSONValue] = [
            "service": .string(c.service.description),
            "account": .string(c.account),
            "type": .string(c.type.rawValue),
            "backend": .string(s.backend),
            "state": .string(status.state.rawValue),
            "can_refresh": .bool(status.canRenew),
        ]
        if let r = status.refusal { o["refused"] = .object(["reason": .string(r.reason), "at": .integer(r.at)]) }
        o["expires_at"] = c.expiresAt.map { .integer($0) } ?? .null
        o["refresh_expires_at"] = c.refreshToken == nil ? .null : c.refreshExpiresAt.map { .integer($0) } ?? .null
        o["provider"] = c.provider.map { .string($0) } ?? .null
        if let name = displayName(c) { o["user"] = .string(name) }
        let claims = idTokenClaims(c)
        if !claims.isEmpty { o["id_token_claims"] = .object(claims.mapValues { .string($0) }) }
        for key in ["uid", "user_id", "user_nsid"] { if let v = c.extra[key] { o[key] = .string(v.text) } }
        if c.dpopKey != nil {
            o["token_type"] = .string(c.tokenType ?? "DPoP")
            o["dpop_jkt"] = c.dpopThumbprint.map { .string($0) } ?? .null
        }
        return .object(o)
    }

    /// A table on stdout: the first row is the header. On a terminal narrower
    /// than the table, the columns of `dropping` go first, in that order; with
    /// `colour`, a cell's paint (rows after the header) when `painted`.
    /// The run's settings: where the terminal's width comes from when it does not say.
    static func printTable(
        _ rows: [[String]], context: Session, dropping: [Int] = [], painted: Bool = false,
        colour: (_ row: Int, _ column: Int) -> Terminal.Paint? = { _, _ in nil }
    ) {
        let widths = rows[0].indices.map { i in rows.map { $0[i].count }.max() ?? 0 }
        var columns = Array(rows[0].indices)
        func total() -> Int { columns.map { widths[$0] }.reduce(0, +) + 2 * (columns.count - 1) }
        if let available = Terminal.width(context.settings, stdout: context.output.stdout) {
            for d in dropping where total() > available && columns.count > 1 { columns.removeAll { $0 == d } }
        }
        for (r, row) in rows.enumerated() {
            let line = columns.enumerated().map { k, i in
                let cell = k == columns.count - 1 ? row[i] : row[i].padded(to: widths[i])
                return Terminal.paint(cell, r == 0 ? nil : colour(r, i), on: painted)
            }.joined(separator: "  ")
            context.output.value(line)
        }
    }
}
