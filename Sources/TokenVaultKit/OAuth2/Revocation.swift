import Dispatch
import FoundationEssentials
import Glibc

/// Revoking at the provider (docs/reference.md `revoke`): RFC 7009, or Weibo's endpoint.
public enum Revocation {
    /// The request that revokes `credential`. RFC 7009 revokes the refresh token
    /// when there is one (a provider then drops its access tokens too); Weibo's
    /// `revokeoauth2` takes the access token.
    public static func request(for credential: Credential, provider: OAuth2Provider) throws -> HTTPRequest {
        try prepared(for: credential, provider: provider).request
    }

    /// The request and the secrets it carries, so that an error answer never
    /// echoes one (and a client_secret_command runs once).
    static func prepared(
        for credential: Credential, provider: OAuth2Provider
    ) throws -> (request: HTTPRequest, sent: [String]) {
        try provider.checkIssued(credential)
        guard let url = provider.revokeURL else {
            throw TokenVaultError.config(
                "provider \(provider.name) has no revoke_url",
                hint:
                    "set revoke_url in [providers.\(Config.tableKey(provider.name))], or delete the local copy: tokenvault delete \(ShellWord.word(credential.service.description))"
            )
        }
        if url.contains("/oauth2/revokeoauth2") {
            return (.form(url, [("access_token", credential.accessToken)]), [credential.accessToken])
        }
        let fields: [(String, String)]
        if let refresh = credential.refreshToken {
            fields = [("token", refresh), ("token_type_hint", "refresh_token")]
        } else {
            fields = [("token", credential.accessToken), ("token_type_hint", "access_token")]
        }
        let client = try provider.clientCredentials()  // a JWT method is audienced to the token URL
        return (
            .form(url, fields + client.fields, headers: client.headers),
            [fields[0].1] + (client.secret.map { [$0] } ?? [])
        )
    }

    /// Sends it; throws the mapped error unless the provider accepted it (2xx).
    public static func revoke(_ credential: Credential, provider: OAuth2Provider, transport: HTTPTransport) throws {
        let (request, sent) = try prepared(for: credential, provider: provider)
        let response = try transport.send(request)
        if (200..<300).contains(response.status) { return }
        let host = (try? ServiceKey(parsing: request.url).description) ?? request.url
        if let fields = TokenResponse.fields(response.body), let code = fields["error"]?.string {
            throw TokenResponse.error(
                code: code, description: fields["error_description"]?.text, provider: provider.name, sentSecrets: sent,
                configPath: provider.configPath, clientTable: provider.clientTable)
        }
        if response.status >= 500 || response.status == 429 {
            throw TokenVaultError.temporary("\(host) answered HTTP \(response.status) to the revocation")
        }
        // 401 and 403 without an OAuth error: the provider refused this client (76), as invalid_client would be.
        if response.status == 401 || response.status == 403 {
            throw TokenResponse.error(
                code: "invalid_client", description: "HTTP \(response.status) to the revocation",
                provider: provider.name,
                sentSecrets: sent, configPath: provider.configPath, clientTable: provider.clientTable)
        }
        throw TokenVaultError.badInput(
            "\(host) answered HTTP \(response.status) to the revocation, with no OAuth error")
    }
}
