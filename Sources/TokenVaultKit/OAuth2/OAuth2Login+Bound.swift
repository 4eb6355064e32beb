import FoundationEssentials

/// What a login sends when the server wants more than a URL and a form:
/// the authorization request pushed (RFC 9126), and the token requests with
/// a DPoP proof of the credential's key (docs/security.md, "Sender-constrained tokens").
extension OAuth2Login {
    /// A pushed authorization request (RFC 9126): the request's parameters,
    /// with the client's authentication, sent to the server; the
    /// `request_uri` the authorization URL then carries instead.
    func pushed(_ fields: [(String, String)], to url: String) throws -> String {
        let client = try provider.clientCredentials(now: clock.now)
        let own = client.fields.contains { $0.0 == "client_id" }
        let sent = fields.filter { $0.0 != "client_id" || !own } + client.fields
        let response = try send(.form(url, sent, headers: client.headers))
        let host = (try? ServiceKey(parsing: url).description) ?? url
        let answer = try TokenResponse.successFields(
            response, host: host, provider: provider.name, sentSecrets: client.secret.map { [$0] } ?? [],
            configPath: provider.configPath, clientTable: provider.clientTable)
        guard let requestURI = answer["request_uri"]?.string, !requestURI.isEmpty, requestURI.utf8.count <= 2048,
            !requestURI.contains(where: { $0.isWhitespace || $0.isNewline })
        else {
            throw TokenVaultError.badInput("\(host) answered the pushed authorization request without a request_uri")
        }
        return requestURI
    }

    /// One request to the authorization server: with a DPoP proof (and the
    /// nonce dance) when the login binds its tokens to a key.
    func send(_ request: HTTPRequest) throws -> HTTPResponse {
        guard let dpop else { return try transport.send(request) }
        return try dpop.send(request, via: transport, now: clock.now, nonces: nonces)
    }

    /// A credential as the server issued it, with the DPoP key it is bound to:
    /// a server that answers a proof with a Bearer token has bound nothing,
    /// and the credential then keeps no key (said once).
    func boundToKey(_ c: Credential) -> Credential {
        guard let dpop else { return c }
        guard c.tokenType?.lowercased() == "dpop" else {
            notify(
                "\(provider.name) issued a \(OutsideText.line(c.tokenType ?? "Bearer", limit: 40)) token, not one bound to a DPoP key; it is kept as a bearer token"
            )
            return c
        }
        var out = c
        out.dpopKey = String(decoding: dpop.pem.bytes, as: UTF8.self)
        return out
    }
}

/// What a login says and checks before and after the user's part (docs/providers.md, "Login lifecycle").
extension OAuth2Login {
    /// The authorization endpoint takes a connection at all, before a
    /// browser is sent there: a provider that is down is said at
    /// once, as a refresh says it, never after a wait that blames client_id.
    func checkReachable() throws {
        guard let authorize = provider.authorizeURL else { return }
        try transport.checkConnects(to: authorize)
    }

    /// The command that logs in to this provider again as `id`'s account.
    func loginCommand(_ id: CredentialID) -> String {
        "tokenvault login \(ShellWord.word(provider.name))"
            + (id.account == Credential.defaultAccount ? "" : " --account \(ShellWord.word(id.account))")
    }
}
