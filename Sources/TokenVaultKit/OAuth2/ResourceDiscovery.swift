import FoundationEssentials

/// Everything a login needs to know about a protected resource, found from
/// its URL alone (docs/providers.md): the resource's metadata (RFC 9728),
/// then its authorization server's (RFC 8414).
public struct ResourceServer: Equatable, Sendable {
    /// The resource, as its metadata states it.
    public var resource: String
    /// The authorization server's issuer, checked against its metadata.
    public var issuer: String
    public var authorizeURL: String
    public var tokenURL: String
    /// Where to register as a client (RFC 7591); nil when the server has no registration.
    public var registrationURL: String?
    public var revokeURL: String?
    /// The scopes to ask for: the challenge's, else the ones the resource lists.
    public var scopes: [String]
    /// Every scope the resource lists (`scopes_supported`).
    public var scopesSupported: [String] = []
    /// The server promises RFC 9207's `iss` on every authorization response.
    public var issParameterRequired = false
    /// The authorization server lists `offline_access` in its `scopes_supported`:
    /// it issues a refresh token only when that scope is asked for (OpenID Connect).
    public var offersOfflineAccess = false
    /// The authorization server fetches a client's metadata document from the
    /// https URL that is its client id (`client_id_metadata_document_supported`).
    public var acceptsClientMetadataDocuments = false
    /// `token_endpoint_auth_methods_supported` (RFC 8414), as listed.
    public var tokenEndpointAuthMethods: [String] = []
    /// False for a server of MCP 2025-03-26 that publishes no metadata: its
    /// endpoints are the fallbacks, kept with the provider (nothing to discover).
    public var publishesMetadata = true
    /// The resource wants DPoP-bound tokens: its challenge is DPoP's, or its
    /// metadata requires them or lists proof algorithms (docs/security.md,
    /// "Sender-constrained tokens").
    public var dpop = false

    /// What the authorization server's metadata says of scopes and clients.
    mutating func read(_ o: [String: JSONValue]) {
        if case .array(let scopes)? = o["scopes_supported"] {
            offersOfflineAccess = ProtectedResourceMetadata.scopeTokens(scopes).contains("offline_access")
        }
        acceptsClientMetadataDocuments = o["client_id_metadata_document_supported"] == .bool(true)
        if case .array(let methods)? = o["token_endpoint_auth_methods_supported"] {
            tokenEndpointAuthMethods = methods.compactMap(\.string)
        }
    }

    /// The scopes a login asks for: `asked`, with `offline_access` added
    /// where the authorization server lists it (and never elsewhere).
    public func loginScopes(_ asked: [String]) -> [String] {
        offersOfflineAccess && !asked.contains("offline_access") ? asked + ["offline_access"] : asked
    }
}

public enum ResourceDiscovery {
    /// Finds the authorization server of the protected resource at `url`: an
    /// unauthenticated request whose 401 names the resource metadata (else its
    /// well-known URLs), that document checked to describe `url`, then the
    /// server's metadata checked to be the issuer's own and to require S256.
    /// `issuer` picks one of the authorization servers the resource names
    /// (default: its first). A resource with no metadata anywhere, whose 401
    /// names none, is an MCP server of the 2025-03-26 revision: its origin is
    /// its authorization server (docs/providers.md, "Login by URL"). `trace`
    /// hears each step (`--verbose`). `ownGrant` says whether the client
    /// configured for an issuer fetches its tokens on its own (client
    /// credentials, a JWT bearer): no authorization request, so no PKCE needed.
    public static func discover(
        _ url: String, issuer chosen: String? = nil, transport: HTTPTransport,
        ownGrant: (String) -> Bool = { _ in false }, trace: (String) -> Void = { _ in }
    ) throws
        -> ResourceServer
    {
        let shown = OutsideText.line(url, limit: 200)
        guard OAuth2Provider.isSafeEndpoint(url), !url.contains("#") else {
            throw TokenVaultError.usage(
                "\(Quoted.text(url)) is not an https URL (http only for loopback) without a fragment")
        }
        let challenge = try probe(url, transport: transport, trace: trace)
        guard let metadata = try resourceMetadata(url, challenge: challenge, transport: transport, trace: trace) else {
            guard let challenge, challenge.parameters["resource_metadata"] == nil, chosen == nil,
                let origin = ProviderConfig.origin(of: url)
            else {
                throw TokenVaultError.badInput(
                    "\(shown) does not say which authorization server protects it (no resource metadata)")
            }
            trace("no resource metadata: the 2025-03-26 way, the authorization server is \(OutsideText.line(origin))")
            var server = try authorizationServer(
                origin, transport: transport, resource: shown, url: url, legacy: true, ownGrant: ownGrant(origin),
                trace: trace)
            server.resource = url
            server.scopes = challenge.parameters["scope"].map { $0.split(separator: " ").map(String.init) } ?? []
            server.dpop = challenge.scheme == "dpop"
            return server
        }
        var issuer = metadata.authorizationServers[0]
        if let chosen {
            guard metadata.authorizationServers.contains(chosen) else {
                throw TokenVaultError.config(
                    "\(shown) does not name \(OutsideText.line(chosen, limit: 200)) as an authorization server",
                    hint:
                        "it names: \(metadata.authorizationServers.map { OutsideText.line($0, limit: 200) }.joined(separator: ", "))"
                )
            }
            issuer = chosen
        }
        trace("the authorization server is \(OutsideText.line(issuer, limit: 200))")
        var server = try authorizationServer(
            issuer, transport: transport, resource: shown, url: url, ownGrant: ownGrant(issuer), trace: trace)
        server.resource = metadata.resource
        server.dpop = challenge?.scheme == "dpop" || metadata.asksForDPoP
        if server.dpop { trace("the resource takes DPoP-bound tokens: this login binds them to a key") }
        let asked = challenge?.parameters["scope"].map { $0.split(separator: " ").map(String.init) }
        server.scopes = (asked ?? metadata.scopesSupported).map { OutsideText.line($0, limit: 200) }
        server.scopesSupported = metadata.scopesSupported
        return server
    }

    /// The resource's metadata (RFC 9728): where its 401 said, else at the
    /// well-known names (path inserted, then the root); nil when none has it.
    static func resourceMetadata(
        _ url: String, challenge: AuthChallenge?, transport: HTTPTransport, trace: (String) -> Void
    ) throws -> ProtectedResourceMetadata? {
        let candidates =
            challenge?.parameters["resource_metadata"].map { [$0] } ?? ProtectedResourceMetadata.wellKnownURLs(for: url)
        for candidate in candidates where OAuth2Provider.isSafeEndpoint(candidate, reachedFrom: url) {
            let r = try transport.send(
                HTTPRequest(method: "GET", url: candidate, headers: ["Accept: application/json"]))
            trace("GET \(OutsideText.line(candidate, limit: 200)): HTTP \(r.status)")
            if (500..<600).contains(r.status) {
                throw TokenVaultError.temporary(
                    "the resource metadata of \(OutsideText.line(url, limit: 200)) is unavailable (HTTP \(r.status)); try again"
                )
            }
            guard r.status == 200 else { continue }
            return try ProtectedResourceMetadata.parse(r.body, for: url)
        }
        return nil
    }

    /// The resource without a token: its Bearer challenge, if it answers 401
    /// (an MCP server takes a JSON-RPC ping; another resource ignores the body).
    static func probe(
        _ url: String, transport: HTTPTransport, trace: (String) -> Void = { _ in }
    ) throws
        -> AuthChallenge?
    {
        let challenge = try probeChallenge(url, transport: transport)
        let shown = OutsideText.line(url, limit: 200)
        if let named = challenge?.parameters["resource_metadata"] {
            trace("\(shown) answered 401, naming its resource metadata \(OutsideText.line(named, limit: 200))")
        } else {
            trace(
                "\(shown) answered \(challenge == nil ? "without asking for a token" : "401, naming no resource metadata")"
            )
        }
        return challenge
    }

    private static func probeChallenge(_ url: String, transport: HTTPTransport) throws -> AuthChallenge? {
        let ping = Data(#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#.utf8)
        let r = try transport.send(
            HTTPRequest(
                url: url, headers: ["Content-Type: application/json", "Accept: application/json, text/event-stream"],
                body: ping))
        guard r.status == 401 else { return nil }
        // A 401 without a Bearer (or DPoP) challenge it can read still says a token is needed.
        return r.header("WWW-Authenticate").flatMap(AuthChallenge.tokenChallenge) ?? AuthChallenge(scheme: "bearer")
    }

    /// The authorization server's metadata (RFC 8414, then OpenID Connect's
    /// name): its `issuer` must be exactly the one the resource named, its
    /// endpoints https, and PKCE with S256 supported, or nothing is sent (65).
    /// `legacy`: the MCP 2025-03-26 fallbacks, for a server with no resource
    /// metadata: its origin is the authorization server, and without
    /// metadata there its endpoints are /authorize, /token and /register.
    static func authorizationServer(
        _ issuer: String, transport: HTTPTransport, resource: String, url: String, legacy: Bool = false,
        ownGrant: Bool = false, trace: (String) -> Void = { _ in }
    ) throws -> ResourceServer {
        let shownIssuer = OutsideText.line(issuer, limit: 200)
        // RFC 8414's name first, then OpenID Connect's.
        let (document, _) = try Discovery.firstDocument(
            Discovery.urls(issuer).reversed(), transport: transport, trace: trace
        ) { status, _ in
            .temporary("the authorization server \(shownIssuer) is unavailable (HTTP \(status)); try again")
        }
        guard let o = document else {
            guard legacy else {
                throw TokenVaultError.badInput(
                    "the authorization server \(shownIssuer) of \(resource) publishes no metadata")
            }
            trace(
                "no authorization server metadata: the 2025-03-26 endpoints \(shownIssuer)/authorize, /token and /register"
            )
            return fallbacks(issuer, url: url)
        }
        guard o["issuer"]?.string == issuer else {
            throw TokenVaultError.badInput(
                "the metadata of \(shownIssuer) is for issuer \(OutsideText.line(o["issuer"]?.text ?? "none", limit: 200)); nothing was sent"
            )
        }
        var s256 = false
        if case .array(let methods)? = o["code_challenge_methods_supported"] {
            s256 = methods.contains(.string("S256"))
        }
        guard s256 || ownGrant else {
            throw TokenVaultError.config(
                "the authorization server \(shownIssuer) does not support PKCE with S256; tokenvault does not log in without it",
                hint: "ask its operator to enable PKCE (S256)")
        }
        func endpoint(_ key: String) throws -> String? {
            guard let v = o[key] else { return nil }
            guard let s = v.string, OAuth2Provider.isSafeEndpoint(s, reachedFrom: url) else {
                throw TokenVaultError.badInput(
                    "\(shownIssuer) sent a \(key) that is not an https URL or is on this machine: \(OutsideText.line(v.text, limit: 200))"
                )
            }
            return s
        }
        guard let authorize = try endpoint("authorization_endpoint"), let token = try endpoint("token_endpoint") else {
            throw TokenVaultError.badInput(
                "the metadata of \(shownIssuer) has no authorization_endpoint or token_endpoint")
        }
        trace(
            "authorization endpoint \(OutsideText.line(authorize, limit: 200)), token endpoint \(OutsideText.line(token, limit: 200))"
        )
        var server = ResourceServer(
            resource: resource, issuer: issuer, authorizeURL: authorize, tokenURL: token,
            registrationURL: try endpoint("registration_endpoint"), revokeURL: try endpoint("revocation_endpoint"),
            scopes: [], issParameterRequired: o["authorization_response_iss_parameter_supported"] == .bool(true))
        server.read(o)
        return server
    }

    /// MCP 2025-03-26's endpoints of a server that publishes no metadata, at its origin.
    static func fallbacks(_ origin: String, url: String) -> ResourceServer {
        var server = ResourceServer(
            resource: url, issuer: origin, authorizeURL: origin + "/authorize", tokenURL: origin + "/token",
            registrationURL: origin + "/register", revokeURL: nil, scopes: [])
        server.publishesMetadata = false
        return server
    }
}
