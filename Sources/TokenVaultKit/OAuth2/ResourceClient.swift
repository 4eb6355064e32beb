import Dispatch
import FoundationEssentials
import Glibc

/// The client tokenvault is at a protected resource's authorization server
/// (docs/providers.md, "Login by URL"): a provider configured for that
/// issuer, else the registration kept for it, else a new registration.
public enum ResourceClient {
    /// The loopback redirect URI of a new registration: a port free now,
    /// kept with the registration and used again while it is free.
    public static func newRedirectURI() throws -> String {
        let probe = try LoopbackListener(port: 0)
        defer { probe.stop() }
        return "http://127.0.0.1:\(probe.port)/callback"
    }

    /// True when the redirect URI's loopback port can be listened on now.
    public static func canListen(on redirectURI: String) -> Bool {
        guard let port = URLComponents(string: redirectURI)?.port, let probe = try? LoopbackListener(port: port) else {
            return false
        }
        probe.stop()
        return true
    }

    /// The provider of config.toml that logs in to `resource` at `issuer`
    /// with its own client id, if any: it wins over any registration. A
    /// public client (the user signs in, in the browser) serves any resource
    /// that names its issuer; a client that holds a secret or a key, or
    /// fetches tokens with no user (client credentials, a JWT bearer), serves
    /// only the resources its `resources` lists: a resource cannot choose to
    /// be given the user's own client (docs/security.md). Nor a table that
    /// another names as its `idp` or `subject_provider` (the enterprise IdP's
    /// login): a resource that names the IdP's issuer would be given a login
    /// at the IdP with its client, and then the IdP's tokens.
    public static func configured(
        issuer: String, resource: String, config: Config
    ) -> (name: String, table: ProviderConfig)? {
        forIssuer(issuer, config: config).first { !listedOnly($0, config: config) || $0.table.serves(resource) }
    }

    /// A client of the user's own for `issuer` that `resource` is not listed
    /// for: what an error about that resource names.
    public static func withheld(
        issuer: String, resource: String, config: Config
    ) -> (name: String, table: ProviderConfig)? {
        forIssuer(issuer, config: config).first { listedOnly($0, config: config) && !$0.table.serves(resource) }
    }

    /// A table that serves only the resources its `resources` lists.
    private static func listedOnly(_ entry: (name: String, table: ProviderConfig), config: Config) -> Bool {
        entry.table.isConfidential
            || config.providers.values.contains { $0.idp == entry.name || $0.subject_provider == entry.name }
    }

    private static func forIssuer(_ issuer: String, config: Config) -> [(name: String, table: ProviderConfig)] {
        config.providers.keys.sorted().filter { !config.discoveredProviders.contains($0) }
            .compactMap { name in config.providers[name].map { (name: name, table: $0) } }
            .filter {
                $0.table.resource == nil && $0.table.issuer == issuer
                    && (!($0.table.client_id ?? "").isEmpty || $0.table.hasWorkloadAssertion)
            }
    }

    /// The URL of tokenvault's client metadata document for `issuer`: a
    /// provider's of config.toml with that issuer, else the config's own.
    public static func metadataURL(issuer: String, config: Config) -> (url: String, setting: String)? {
        for name in config.providers.keys.sorted() where !config.discoveredProviders.contains(name) {
            if let t = config.providers[name], t.issuer == issuer, let url = t.client_metadata_url {
                return (url, "providers.\(name).client_metadata_url")
            }
        }
        return config.clientMetadataURL.map { ($0, "client_metadata_url") }
    }

    /// Every `client_metadata_url` of the config, with the setting that names it.
    public static func metadataURLs(_ config: Config) -> [(setting: String, url: String)] {
        (config.clientMetadataURL.map { [("client_metadata_url", $0)] } ?? [])
            + config.providers.sorted(by: { $0.key < $1.key }).compactMap { name, t in
                t.client_metadata_url.map { ("providers.\(name).client_metadata_url", $0) }
            }
    }

    /// Every `client_metadata_url` of the config checked (78), before a
    /// login sends anything.
    public static func checkMetadataURLs(_ config: Config) throws {
        for (setting, url) in metadataURLs(config) { try ClientMetadataDocument.check(url, setting: setting) }
    }

    /// A resource's table as kept (issuer, resource, the public client id)
    /// with the rest of its client: the secret and redirect URI of the
    /// registration kept for that client id, else the provider configured
    /// with that issuer. A table that names no client id takes the configured
    /// provider's, else the newest registration's. No client: a login is required (4).
    public static func filled(
        _ table: ProviderConfig, config: Config, registration: (String, String?) throws -> ClientRegistration?
    ) throws -> ProviderConfig {
        guard let resource = table.resource, let issuer = table.issuer, table.client_secret == nil,
            table.client_secret_file == nil, table.client_secret_command == nil, table.redirect_uri == nil
        else { return table }
        var t = table
        // A client metadata document's URL: a public client, nothing kept beside it.
        if let id = table.client_id, ClientMetadataDocument.isClientID(id) { return t }
        let own = configured(issuer: issuer, resource: resource, config: config)?.table
        if let own, table.client_id == nil || table.client_id == own.client_id {
            // The whole client: its secret or key, and the grant it uses (a client of its own, client
            // credentials or a JWT bearer, logs in to the resource without a user).
            for field in [
                \ProviderConfig.client_id, \.client_secret, \.client_secret_file, \.client_secret_command,
                \.redirect_uri, \.grant, \.private_key_file, \.credentials_file, \.audience, \.subject,
                \.assertion_file, \.assertion_command, \.subject_token_file, \.subject_token_command,
                \.subject_provider, \.subject_token_type, \.requested_token_type, \.idp,
            ] {
                t[keyPath: field] = own[keyPath: field]
            }
            // Its endpoints where the configuration names them: its secret goes only to an
            // endpoint the configuration or the server's metadata named, never to the
            // 2025-03-26 fallback guess at the issuer's origin.
            for field in [
                \ProviderConfig.authorize_url, \.token_url, \.revoke_url, \.device_authorization_url, \.par_url,
                \.userinfo_url,
            ] where own[keyPath: field] != nil {
                t[keyPath: field] = own[keyPath: field]
            }
            if own.isConfidential, table.token_url != nil, own.token_url == nil {
                throw TokenVaultError.config(
                    "\(OutsideText.line(issuer, limit: 200)) publishes no metadata, so nothing names the token endpoint the secret of your client \(OutsideText.line(own.client_id ?? "", limit: 80)) would go to",
                    hint:
                        "set token_url (and authorize_url) in the provider of \(OutsideText.line(issuer, limit: 200)) in config.toml"
                )
            }
            // The method decided at login (ClientAuthChoice), unless the configured provider names one.
            t.client_auth = own.client_auth ?? table.client_auth
        } else if let r = try registration(issuer, table.client_id) {
            t.client_id = r.clientID
            t.client_secret = r.clientSecret
            t.redirect_uri = r.redirectURI
            t.client_auth =
                table.client_auth
                ?? ClientAuthChoice.decide(
                    configured: nil, registered: r.tokenEndpointAuthMethod, serverLists: [],
                    hasSecret: r.clientSecret != nil)
        } else {
            throw TokenVaultError.loginRequired(
                "tokenvault's registration at \(OutsideText.line(issuer, limit: 200)) is gone from the backend",
                hint: "run: tokenvault login \(ShellWord.word(resource))")
        }
        return t
    }
}
