import FoundationEssentials

/// tokenvault as a client of one authorization server, registered by RFC
/// 7591 dynamic registration: a native public client (PKCE, no secret unless
/// the server hands one out) for one loopback redirect URI. Kept per
/// authorization server, with the redirect URI it was registered for.
public struct ClientRegistration: Equatable, Sendable {
    /// The authorization server's issuer.
    public var issuer: String
    public var clientID: String
    /// Secret: kept in the backend like a token, never shown.
    public var clientSecret: String?
    /// Secret too: what manages the registration (RFC 7592).
    public var registrationAccessToken: String?
    public var redirectURI: String
    public var registeredAt: Int64
    /// The scopes it was registered for: a login asking for more registers again.
    public var scopes: [String] = []
    /// Where the registration is managed (RFC 7592 `registration_client_uri`),
    /// with `registrationAccessToken`: checked before an authorization, and
    /// deleted with the last resource that uses it.
    public var registrationClientURI: String? = nil
    /// When the server was found to have forgotten it (`invalid_client`,
    /// twice): `login URL` registers again instead, and removes this one once
    /// that login has succeeded.
    public var forgottenAt: Int64? = nil
    /// How the registration answer says the client authenticates at the
    /// token endpoint (RFC 7591 §3.2.1 `token_endpoint_auth_method`).
    public var tokenEndpointAuthMethod: String? = nil

    /// True when a login for `wanted` can use this registration.
    public func covers(_ wanted: [String]) -> Bool { wanted.allSatisfy(scopes.contains) }

    /// The client metadata sent (RFC 7591 §2; `application_type` from OpenID
    /// Connect Registration, as MCP asks of native clients).
    static func request(redirectURI: String, scopes: [String]) -> JSONValue {
        var o: [String: JSONValue] = [
            "client_name": .string("tokenvault"),
            "redirect_uris": .array([.string(redirectURI)]),
            "grant_types": .array([.string("authorization_code"), .string("refresh_token")]),
            "response_types": .array([.string("code")]),
            "token_endpoint_auth_method": .string("none"),
            "application_type": .string("native"),
        ]
        if !scopes.isEmpty { o["scope"] = .string(scopes.joined(separator: " ")) }
        return .object(o)
    }

    /// Registers at `endpoint` (the server's `registration_endpoint`).
    /// The server's refusal is 76 with its words; an answer without a client
    /// id, or for other redirect URIs than the one asked for, is 65.
    public static func register(
        at endpoint: String, issuer: String, redirectURI: String, scopes: [String], transport: HTTPTransport, now: Int64
    ) throws -> ClientRegistration {
        let host = (try? ServiceKey(parsing: endpoint).description) ?? endpoint
        let body = Data(request(redirectURI: redirectURI, scopes: scopes).text.utf8)
        let r = try transport.send(
            HTTPRequest(
                url: endpoint, headers: ["Content-Type: application/json", "Accept: application/json"], body: body))
        let answer: [String: JSONValue]? =
            if case .object(let o)? = JSONValue.parsed(r.body) { o } else { nil }
        if (500..<600).contains(r.status) {
            throw TokenVaultError.temporary("\(host) could not register tokenvault now (HTTP \(r.status)); try again")
        }
        guard (200..<300).contains(r.status) else {
            let code = answer?["error"]?.string.map { OutsideText.line($0, limit: 64) } ?? "HTTP \(r.status)"
            throw TokenVaultError.providerRefused(
                code: code, description: answer?["error_description"].map { OutsideText.line($0.text) })
        }
        guard let o = answer else { throw TokenVaultError.badInput("\(host) answered the registration without JSON") }
        return try parse(
            o, host: host, issuer: issuer, endpoint: endpoint, redirectURI: redirectURI, scopes: scopes, now: now)
    }

    /// Checks what a registration answer says.
    static func parse(
        _ o: [String: JSONValue], host: String, issuer: String, endpoint: String? = nil, redirectURI: String,
        scopes: [String] = [], now: Int64
    ) throws
        -> ClientRegistration
    {
        guard let id = o["client_id"]?.string, !id.isEmpty, id.utf8.count <= 512,
            !id.unicodeScalars.contains(where: OutsideText.isUnsafe)
        else {
            throw TokenVaultError.badInput("\(host) answered the registration without a usable client_id")
        }
        // Kept in the backend like a token, and read back by the same rule: what
        // would fail it there is refused here, before anything is kept.
        for field in ["client_id", "client_secret", "registration_access_token"] {
            guard let value = o[field]?.string, !value.isEmpty else { continue }
            do {
                try TokenInput.checkToken(value, field: field)
            } catch {
                throw TokenVaultError.badInput(
                    "\(host) answered the registration with a \(field) that has white space or control characters; nothing was kept"
                )
            }
            guard value.utf8.count <= 4096 else {
                throw TokenVaultError.badInput(
                    "\(host) answered the registration with a \(field) longer than 4096 bytes; nothing was kept")
            }
        }
        if case .array(let uris)? = o["redirect_uris"], !uris.contains(.string(redirectURI)) {
            throw TokenVaultError.badInput(
                "\(host) registered other redirect URIs than \(redirectURI); nothing was kept")
        }
        func secret(_ key: String) -> String? {
            guard let s = o[key]?.string, !s.isEmpty else { return nil }
            return s
        }
        var r = ClientRegistration(
            issuer: issuer, clientID: id, clientSecret: secret("client_secret"),
            registrationAccessToken: secret("registration_access_token"), redirectURI: redirectURI, registeredAt: now,
            scopes: o["scope"]?.string.map { $0.split(separator: " ").map(String.init) } ?? scopes)
        r.tokenEndpointAuthMethod = o["token_endpoint_auth_method"]?.string.flatMap {
            ClientAuthChoice.methods.contains($0) ? $0 : nil
        }
        // RFC 7592: kept only with its token, only where the issuer itself may be
        // reached, and only on the registration endpoint's own origin (a GET at
        // each login and a DELETE on `delete` go there, with the server's token).
        let sameOrigin = endpoint.map { e in
            ProviderConfig.origin(of: e) != nil
                && ProviderConfig.origin(of: e) == o["registration_client_uri"]?.string.flatMap(ProviderConfig.origin)
        }
        if let uri = o["registration_client_uri"]?.string, r.registrationAccessToken != nil, !uri.contains("#"),
            sameOrigin ?? true, uri.utf8.count <= 2048, OAuth2Provider.isSafeEndpoint(uri, reachedFrom: issuer),
            !uri.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F })
        {
            r.registrationClientURI = uri
        }
        return r
    }
}

extension ClientRegistration {
    /// Where a registration is kept: the issuer's key, under a reserved
    /// account no user can name, one per client id (docs/reference.md), so
    /// that a grant made through an older registration still renews.
    public static func id(issuer: String, clientID: String) throws -> CredentialID {
        let tag = Hex.encode(Sodium.hash(Array(clientID.utf8), bytes: 16))
        return CredentialID(
            service: try ServiceKey(resource: issuer), account: CredentialID.registrationAccount + ":" + tag)
    }

    /// The registration as a record of the backend: the client id where a
    /// token goes, the secrets in fields no listing shows.
    func record() throws -> Credential {
        var extra: [String: JSONValue] = [
            "client_id": .string(clientID), "redirect_uri": .string(redirectURI),
            "registered_at": .integer(registeredAt),
            "scope": .string(scopes.joined(separator: " ")),
        ]
        if let clientSecret { extra["client_secret"] = .string(clientSecret) }
        if let registrationAccessToken { extra["registration_access_token"] = .string(registrationAccessToken) }
        if let forgottenAt { extra["forgotten_at"] = .integer(forgottenAt) }
        if let registrationClientURI { extra["registration_client_uri"] = .string(registrationClientURI) }
        if let tokenEndpointAuthMethod { extra["token_endpoint_auth_method"] = .string(tokenEndpointAuthMethod) }
        let id = try Self.id(issuer: issuer, clientID: clientID)
        var c = Credential(service: id.service, account: id.account, type: .token, accessToken: clientID, extra: extra)
        c.issuer = issuer
        return c
    }

    /// The registration a record holds; nil when it is not one for `issuer`.
    init?(record c: Credential, issuer: String) {
        guard c.id.isRegistration, c.issuer == issuer, let id = c.extra["client_id"]?.string,
            let redirect = c.extra["redirect_uri"]?.string
        else { return nil }
        self.init(
            issuer: issuer, clientID: id, clientSecret: c.extra["client_secret"]?.string,
            registrationAccessToken: c.extra["registration_access_token"]?.string, redirectURI: redirect,
            registeredAt: c.extra["registered_at"]?.int64 ?? 0,
            scopes: (c.extra["scope"]?.string ?? "").split(separator: " ").map(String.init))
        forgottenAt = c.extra["forgotten_at"]?.int64
        registrationClientURI = c.extra["registration_client_uri"]?.string
        tokenEndpointAuthMethod = c.extra["token_endpoint_auth_method"]?.string
    }

    /// What the server says of it now (RFC 7592): `true` when it still knows
    /// it, `false` when it does not (401, 403, 404), nil when it cannot say
    /// (no management URI, the network, another answer): then it is used as is.
    public func stillKnown(transport: HTTPTransport) -> Bool? {
        guard let uri = registrationClientURI, let token = registrationAccessToken else { return nil }
        guard
            let r = try? transport.send(
                HTTPRequest(
                    method: "GET", url: uri, headers: [PresentedToken(token).header, "Accept: application/json"]))
        else { return nil }
        switch r.status {
        case 200..<300: return true
        case 401, 403, 404: return false
        default: return nil
        }
    }

    /// Deletes it at the server (RFC 7592); true when the server took it
    /// away (or no longer had it).
    public func deleteAtServer(transport: HTTPTransport) -> Bool {
        guard let uri = registrationClientURI, let token = registrationAccessToken,
            let r = try? transport.send(
                HTTPRequest(method: "DELETE", url: uri, headers: [PresentedToken(token).header]))
        else { return false }
        return (200..<300).contains(r.status) || r.status == 404 || r.status == 401
    }
}

extension CredentialVault {
    /// The registration of `clientID` kept for `issuer`, if any.
    public func registration(for issuer: String, clientID: String) throws -> ClientRegistration? {
        try load(try ClientRegistration.id(issuer: issuer, clientID: clientID)).flatMap {
            ClientRegistration(record: $0, issuer: issuer)
        }
    }

    /// Every registration kept for `issuer`, the newest first.
    public func registrations(for issuer: String) throws -> [ClientRegistration] {
        let key = try ServiceKey(resource: issuer)
        return try store.listIDs().filter { $0.service == key && $0.isRegistration }
            .compactMap { try load($0).flatMap { ClientRegistration(record: $0, issuer: issuer) } }
            .sorted { $0.registeredAt > $1.registeredAt }
    }

    /// Keeps `registration` beside any kept before for its issuer.
    public func keep(_ registration: ClientRegistration) throws {
        try write(try registration.record())
    }

    /// Removes the registrations kept for `issuer` that the server forgot
    /// (after a login through a new one has succeeded); how many.
    @discardableResult
    public func dropForgotten(for issuer: String) throws -> Int {
        var dropped = 0
        for r in try registrations(for: issuer) where r.forgottenAt != nil {
            if try delete(try ClientRegistration.id(issuer: issuer, clientID: r.clientID)) { dropped += 1 }
        }
        return dropped
    }
}

extension ClientRegistration {
    /// A registration another client made (`tokenvault import mcp-remote`), kept as one of tokenvault's own.
    public init(
        issuer: String, clientID: String, clientSecret: String?, redirectURI: String, registeredAt: Int64,
        scopes: [String], tokenEndpointAuthMethod: String?
    ) {
        self.init(
            issuer: issuer, clientID: clientID, clientSecret: clientSecret, registrationAccessToken: nil,
            redirectURI: redirectURI, registeredAt: registeredAt, scopes: scopes)
        self.tokenEndpointAuthMethod = tokenEndpointAuthMethod
    }
}
