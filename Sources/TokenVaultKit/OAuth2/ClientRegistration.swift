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
            if case .object(let o)? = try? JSONDecoder().decode(JSONValue.self, from: r.body) { o } else { nil }
        if (500..<600).contains(r.status) {
            throw TokenVaultError.temporary("\(host) could not register tokenvault now (HTTP \(r.status)); try again")
        }
        guard (200..<300).contains(r.status) else {
            let code = answer?["error"]?.string.map { OutsideText.line($0, limit: 64) } ?? "HTTP \(r.status)"
            throw TokenVaultError.providerRefused(
                code: code, description: answer?["error_description"].map { OutsideText.line($0.text) })
        }
        guard let o = answer else { throw TokenVaultError.badInput("\(host) answered the registration without JSON") }
        return try parse(o, host: host, issuer: issuer, redirectURI: redirectURI, now: now)
    }

    /// Checks what a registration answer says.
    static func parse(
        _ o: [String: JSONValue], host: String, issuer: String, redirectURI: String, now: Int64
    ) throws
        -> ClientRegistration
    {
        guard let id = o["client_id"]?.string, !id.isEmpty, id.utf8.count <= 512,
            !id.unicodeScalars.contains(where: OutsideText.isUnsafe)
        else {
            throw TokenVaultError.badInput("\(host) answered the registration without a usable client_id")
        }
        if case .array(let uris)? = o["redirect_uris"], !uris.contains(.string(redirectURI)) {
            throw TokenVaultError.badInput(
                "\(host) registered other redirect URIs than \(redirectURI); nothing was kept")
        }
        func secret(_ key: String) -> String? {
            guard let s = o[key]?.string, !s.isEmpty else { return nil }
            return s
        }
        return ClientRegistration(
            issuer: issuer, clientID: id, clientSecret: secret("client_secret"),
            registrationAccessToken: secret("registration_access_token"), redirectURI: redirectURI, registeredAt: now)
    }
}
