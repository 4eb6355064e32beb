/// An access token as it is presented to a resource: its value and the key
/// it is bound to, taken whole from one credential (docs/adapters.md, "MCP
/// servers"). The bridge carries one through every request path (a message,
/// a tool listing, a resumed or listening stream, the end of the session),
/// so a DPoP-bound token is never sent with the scheme of another
/// credential; one whose key cannot be read is not sent. `header` and a
/// login's userinfo request word their `Authorization` line with it too.
public struct PresentedToken: Sendable {
    public var value: String
    /// The key it is bound to (DPoP); nil for a bearer token.
    public var key: DPoPKey?

    public init(_ value: String, key: DPoPKey? = nil) {
        self.value = value
        self.key = key
    }

    /// What authorizes one request with it (docs/security.md,
    /// "Sender-constrained tokens"): `Authorization: Bearer TOKEN`; for a
    /// DPoP-bound token, `Authorization: DPoP TOKEN` and a fresh proof of this
    /// request (`method`, `url`, the server's latest `nonce`). A bound token is
    /// never sent as Bearer. The one place the header is worded for `header`,
    /// the bridge and a login's userinfo.
    public func authorization(method: String, url: String, nonce: String? = nil, now: Int64) throws -> [String] {
        guard let key else { return [header] }
        return [header, "DPoP: \(try key.proof(method: method, url: url, accessToken: value, nonce: nonce, now: now))"]
    }

    /// The `Authorization` line alone, in the token's scheme.
    public var header: String { "Authorization: \(key == nil ? "Bearer" : "DPoP") \(value)" }
}
