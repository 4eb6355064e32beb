import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List stored credentials: service, account, provider, type, state, expiry. Never a secret.",
            discussion: "RT EXPIRES is when the refresh token dies: \"unknown\" when the provider did not say, \"-\" without a refresh token.")

        @Flag(help: "Print a JSON array.")
        var json = false

        func run() throws {
            let context = Context()
            let rows = try context.vault().listLocated()
            context.flushWarnings()
            let now = context.clock.now
            if json {
                Output.json(.array(rows.map { Summary.json($0, status: context.status(of: $0.credential)) }))
                return
            }
            guard !rows.isEmpty else {
                Output.notice("no credentials stored")
                return
            }
            // RT EXPIRES: when the refresh token dies; "unknown" when there is one and nobody said.
            var table = [["SERVICE", "ACCOUNT", "PROVIDER", "TYPE", "STATE", "EXPIRES", "RT EXPIRES", "BACKEND"]]
            for r in rows {
                let c = r.credential
                let rt = c.refreshToken == nil ? "-" : Format.refreshExpiry(c, now: now) ?? "unknown"
                table.append([c.service.description, c.account, c.provider ?? "-", c.type.rawValue, context.status(of: c).state.rawValue,
                              Format.expiry(c, now: now), rt, r.backend])
            }
            Summary.printTable(table)
        }
    }
}

/// The secret-free view of a credential that `list` and `status` print.
enum Summary {
    /// Whether tokenvault may renew it now without the user.
    static func canRefresh(_ s: CredentialStatus) -> Bool { s.renewal.isPossible && s.refusal == nil }

    static func displayName(_ c: Credential) -> String? {
        for key in Credential.displayKeys {
            if let v = c.extra[key]?.string, !v.isEmpty { return OutsideText.line(v) }
        }
        let claims = idTokenClaims(c)
        return claims["name"] ?? claims["email"]
    }

    /// `sub`, `email` and `name` of the id_token, decoded and not verified:
    /// shown, never trusted for anything else (SPEC §13).
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
        var o: [String: JSONValue] = [
            "service": .string(c.service.description),
            "account": .string(c.account),
            "type": .string(c.type.rawValue),
            "backend": .string(s.backend),
            "state": .string(status.state.rawValue),
            "can_refresh": .bool(canRefresh(status)),
        ]
        if let r = status.refusal { o["refused"] = .object(["reason": .string(r.reason), "at": .integer(r.at)]) }
        o["expires_at"] = c.expiresAt.map { .integer($0) } ?? .null
        o["refresh_expires_at"] = c.refreshToken == nil ? .null : c.refreshExpiresAt.map { .integer($0) } ?? .null
        o["provider"] = c.provider.map { .string($0) } ?? .null
        if let name = displayName(c) { o["user"] = .string(name) }
        let claims = idTokenClaims(c)
        if !claims.isEmpty { o["id_token_claims"] = .object(claims.mapValues { .string($0) }) }
        for key in ["uid", "user_id", "user_nsid"] { if let v = c.extra[key] { o[key] = .string(v.text) } }
        return .object(o)
    }

    static func printTable(_ rows: [[String]]) {
        let widths = rows[0].indices.map { i in rows.map { $0[i].count }.max() ?? 0 }
        for row in rows {
            let line = row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell.padded(to: widths[i])
            }.joined(separator: "  ")
            Output.value(line)
        }
    }
}
