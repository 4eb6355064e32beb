import FoundationEssentials

/// What a protected resource says of itself (RFC 9728): which authorization
/// servers issue tokens for it, and the scopes it knows. An MCP server is one.
public struct ProtectedResourceMetadata: Equatable, Sendable {
    /// The resource identifier, as the document states it.
    public var resource: String
    /// The issuers of the authorization servers it trusts, in its order.
    public var authorizationServers: [String]
    public var scopesSupported: [String]
    /// The resource takes DPoP-bound tokens (RFC 9728 §2: it requires them,
    /// or lists the proof algorithms it takes).
    public var asksForDPoP = false

    /// The documents to ask for `resource`, in order (RFC 9728 §3.1): the
    /// well-known name inserted between the origin and the path, then the
    /// origin's own (the fallback MCP clients use).
    public static func wellKnownURLs(for resource: String) -> [String] {
        guard let scheme = resource.firstRange(of: "://") else { return [] }
        let rest = resource[scheme.upperBound...]
        let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let origin = String(resource[..<slash])
        var path = String(rest[slash...].prefix { $0 != "?" && $0 != "#" })
        while path.hasSuffix("/") { path.removeLast() }
        let root = origin + "/.well-known/oauth-protected-resource"
        return path.isEmpty ? [root] : [root + path, root]
    }

    /// Reads the document fetched for `resource` and checks it (RFC 9728
    /// §3.3): its `resource` must be the one asked about or a same-origin
    /// path prefix of it (a server that publishes its metadata at the root
    /// for all it serves, as MCP's authorization spec allows and the SDKs
    /// accept), or a server could send this client's tokens for another
    /// resource (78); the stated value is what RFC 8707's `resource` names. It must
    /// name an authorization server; every URL must be https (or loopback
    /// http, for tests and local servers).
    public static func parse(_ body: Data, for resource: String) throws -> ProtectedResourceMetadata {
        let shown = OutsideText.line(resource, limit: 200)
        guard case .object(let o)? = JSONValue.parsed(body) else {
            throw TokenVaultError.badInput("the resource metadata of \(shown) is not a JSON object")
        }
        guard let stated = o["resource"]?.string else {
            throw TokenVaultError.badInput("the resource metadata of \(shown) names no resource")
        }
        guard covers(stated, resource) else {
            throw TokenVaultError.config(
                "the resource metadata of \(shown) describes another resource (\(OutsideText.line(stated, limit: 200))); nothing was sent to it",
                hint: "check the URL: it must be the resource itself, as its server publishes it")
        }
        guard case .array(let servers)? = o["authorization_servers"], !servers.isEmpty else {
            throw TokenVaultError.badInput("the resource metadata of \(shown) names no authorization server")
        }
        let issuers = try servers.map { value -> String in
            guard let issuer = value.string, OAuth2Provider.isSafeEndpoint(issuer, reachedFrom: resource) else {
                throw TokenVaultError.badInput(
                    "the resource metadata of \(shown) names an authorization server that is not an https URL or is on this machine: \(OutsideText.line(value.text, limit: 200))"
                )
            }
            return issuer
        }
        var scopes: [String] = []
        if case .array(let items)? = o["scopes_supported"] { scopes = Self.scopeTokens(items) }
        var metadata = ProtectedResourceMetadata(
            resource: stated, authorizationServers: issuers, scopesSupported: scopes)
        if o["dpop_bound_access_tokens_required"] == .bool(true) { metadata.asksForDPoP = true }
        if case .array(let algs)? = o["dpop_signing_alg_values_supported"], !algs.isEmpty {
            metadata.asksForDPoP = true
        }
        return metadata
    }

    /// The scope tokens of a `scopes_supported` list (RFC 6749 §3.3): an
    /// item with spaces is several scopes, what is no scope token (a control
    /// character, a quote, a backslash) is dropped, each scope once, in order
    /// — so a server's `"admin openid"` cannot make every login ask for more.
    public static func scopeTokens(_ items: [JSONValue]) -> [String] {
        var seen: Set<String> = []
        var out: [String] = []
        for item in items {
            for word in (item.string ?? "").split(separator: " ") {
                let scope = String(word)
                guard scope.utf8.count <= 200,
                    scope.utf8.allSatisfy({ $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) }),
                    seen.insert(scope).inserted
                else { continue }
                out.append(scope)
            }
        }
        return out
    }

    /// Whether the resource identifier `stated` covers `resource`: the same
    /// scheme and authority (without case), and a path that is `resource`'s
    /// or a whole-segment prefix of it (`/a` covers `/a/mcp`, not `/ab`).
    static func covers(_ stated: String, _ resource: String) -> Bool {
        if sameResource(stated, resource) { return true }
        func parts(_ s: String) -> (origin: String, path: String)? {
            guard let scheme = s.firstRange(of: "://"), !s.contains("?"), !s.contains("#") else { return nil }
            let rest = s[scheme.upperBound...]
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            var path = String(rest[slash...])
            if !path.hasSuffix("/") { path += "/" }
            return (s[..<scheme.upperBound].lowercased() + rest[..<slash].lowercased(), path)
        }
        guard let a = parts(stated), let b = parts(resource), a.origin == b.origin else { return false }
        return b.path.hasPrefix(a.path)
    }

    /// Whether two resource identifiers are the same: scheme and host compare
    /// without case, a trailing slash of the path does not count, the rest
    /// exactly.
    static func sameResource(_ a: String, _ b: String) -> Bool {
        func canonical(_ s: String) -> String? {
            guard let scheme = s.firstRange(of: "://") else { return nil }
            let rest = s[scheme.upperBound...]
            let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            var tail = String(rest[slash...])
            if tail.hasSuffix("/") { tail.removeLast() }
            return s[..<scheme.upperBound].lowercased() + rest[..<slash].lowercased() + tail
        }
        guard let x = canonical(a), let y = canonical(b) else { return false }
        return x == y
    }
}
