import Dispatch
import FoundationEssentials
import Glibc

/// A provider ready for OAuth 2.0 exchanges: its preset merged with its
/// `[providers.NAME]` table, checked.
public struct OAuth2Provider: Sendable {
    public enum ClientAuth: String, Sendable, CaseIterable {
        case body, basic
        case privateKeyJWT = "private_key_jwt", clientSecretJWT = "client_secret_jwt"
    }
    public enum Grant: String, Sendable, CaseIterable {
        case authorizationCode = "authorization_code", clientCredentials = "client_credentials", jwtBearer =
            "jwt_bearer"
        /// RFC 8693: a subject token traded for a token of this provider's.
        case tokenExchange = "token_exchange"
        /// An enterprise IdP's login traded for an identity assertion grant, taken with the jwt-bearer grant.
        case idJag = "id_jag"

        /// Grants whose token is fetched again by the client alone, with no refresh token.
        public var fetchesAgain: Bool { self != .authorizationCode }
    }

    public var name: String
    public var service: ServiceKey
    /// Who issues its tokens: the `issuer`, else the token endpoint's origin
    /// (`ProviderConfig.issuedBy`). Stamped on every credential it issues.
    public var issuedBy: String
    public var tokenURL: String
    public var authorizeURL: String?
    public var revokeURL: String?
    public var deviceAuthorizationURL: String?
    public var userinfoURL: String?
    public var grant: Grant
    public var scopes: [String]
    public var clientID: String
    public var clientAuth: ClientAuth
    public var redirectURI: String?
    public var pkce: Bool
    public var authParams: [String: String]
    public var headerTemplate: String
    /// `refresh_token_lifetime` and `refresh_token_idle` (seconds), for estimating
    /// when a refresh token dies when the provider does not say.
    public var refreshLifetime: Int64?
    public var refreshIdle: Int64?
    /// Where the secret comes from; read only when an exchange needs it.
    var secretSource: SecretSource?
    /// private_key_file / credentials_file: read only when a signature is needed.
    var privateKeyFile: String?
    var credentialsFile: String?
    /// jwt_bearer with a JWT another issuer made (`assertion_file`,
    /// `assertion_command`), read afresh at every use; nil: tokenvault signs one.
    var assertionSource: (source: SecretSource, shown: String)? = nil
    /// token_exchange: where the subject token comes from, its type, and the
    /// type of token asked for (RFC 8693 token type URIs).
    var exchange: TokenExchange? = nil
    /// id_jag: the IdP's provider and which of its tokens is the subject.
    var identityGrant: IdentityAssertionGrant? = nil
    /// jwt_bearer: the assertion's audience and subject.
    var audience: String?
    var subject: String?
    /// The configured `issuer`, exactly as written: an authorization
    /// response naming another (RFC 9207 `iss`) is refused.
    public var issuer: String? = nil
    /// RFC 8707: the resource the tokens are for, sent with every
    /// authorization and token request, so the server binds them to it.
    public var resource: String? = nil
    /// Tokens bound to a DPoP key (`dpop = true`).
    public var dpop = false
    /// Where authorization requests are pushed (RFC 9126); nil: sent in the URL.
    public var parURL: String? = nil
    /// The DPoP proof algorithms the server lists (discovered; empty: unknown).
    public var dpopAlgorithms: [String] = []
    /// The server promises `iss` on every authorization response
    /// (`authorization_response_iss_parameter_supported`): one without it is refused.
    public var issParameterRequired = false
    /// Its client is a registration tokenvault keeps (`login URL`), which the
    /// server may forget: `invalid_client` then means "register again"
    /// (docs/providers.md, "A registration the server forgot").
    public var registeredClient = false
    /// The config file its table came from, for hints.
    public var configPath: String? = nil
    /// The table of `configPath` that holds this provider's client, when it is
    /// not its own (a resource logged in to by URL, whose client is the
    /// provider configured for its issuer): where a refused client is fixed.
    public var clientTable: String? = nil

    /// `resource=…` for a request, when the provider names one.
    var resourceFields: [(String, String)] { resource.map { [("resource", $0)] } ?? [] }

    /// The token endpoint's host, as messages about its answers name it.
    var tokenHost: String { (try? ServiceKey(parsing: tokenURL).description) ?? tokenURL }

    /// Where to register an application, for the missing-client-id message.
    static let registration = [
        "weibo": "https://open.weibo.com/apps",
        "google": "https://console.cloud.google.com/apis/credentials",
        "github": "https://github.com/settings/developers",
        "foursquare": "https://foursquare.com/developers/apps",
        "gitlab": "https://gitlab.com/-/user_settings/applications",
        "microsoft": "https://entra.microsoft.com (App registrations; allow public client flows)",
    ]

    /// Resolves `name` from the presets and the config. A provider with an
    /// `issuer` gets the endpoints it does not set from `discover` (docs/providers.md):
    /// issuer and provider name in, endpoints by config key out.
    public static func resolve(
        _ name: String, config: Config, configPath: String,
        discover: ((String, String) throws -> [String: String])? = nil
    ) throws -> OAuth2Provider {
        var p = try ProviderConfig.table(for: name, config: config, configPath: configPath)
        let type = p.type ?? "oauth2"
        guard type == "oauth2" else {
            throw TokenVaultError.config("\(name) is an \(type) provider, not OAuth 2.0")
        }
        // Every endpoint of a resource's provider, whatever document or cache it
        // came from (the RFC 8414 one, the OpenID one, providers.toml), is held
        // to the rule the resource's discovery was: a remote resource never
        // leads tokenvault to this machine (docs/security.md).
        let resource = p.resource
        // Every endpoint the table gets wrong is named at once, not one per run.
        let unsafe: [(key: String, url: String)] = [
            ("token_url", p.token_url), ("authorize_url", p.authorize_url), ("revoke_url", p.revoke_url),
            ("device_authorization_url", p.device_authorization_url), ("userinfo_url", p.userinfo_url),
            ("redirect_uri", p.redirect_uri), ("par_url", p.par_url),
        ].compactMap { key, value in value.flatMap { isSafeEndpoint($0) ? nil : (key, $0) } }
        if unsafe.count > 1 {
            let keys = Format.list(unsafe.map(\.key))
            throw TokenVaultError.config(
                "provider \(name): \(keys) must be https:// URLs (http:// only for loopback), not \(unsafe.map { Quoted.text($0.url) }.joined(separator: ", "))",
                hint: "fix \(keys) in [providers.\(Config.tableKey(name))] of \(configPath)")
        }
        func url(_ key: String, _ value: String?) throws -> String? {
            guard let value else { return nil }
            try checkEndpoint(value, provider: name, key: key, configPath: configPath)
            if let resource, !isSafeEndpoint(value, reachedFrom: resource) {
                throw TokenVaultError.badInput(
                    "the authorization server of \(OutsideText.line(resource, limit: 200)) names \(key) \(Quoted.text(value)), on this machine: a remote resource cannot lead tokenvault to it (nothing was sent there)"
                )
            }
            return value
        }
        // The service comes from the table as written, so that naming the
        // provider (`get NAME`) never needs the discovery document.
        let service = try p.serviceKey(provider: name)
        var dpopAlgorithms: [String] = []
        var parRequired = false
        if let issuer = try url("issuer", p.issuer) {
            let endpoints = ProviderConfig.endpoints
            // A resource whose server publishes no metadata (MCP 2025-03-26) keeps its endpoints instead.
            let kept = p.resource != nil && p.authorize_url != nil && p.token_url != nil
            if let discover, !kept, endpoints.contains(where: { p[keyPath: $0.field] == nil }) {
                let found = try discover(issuer, name)
                dpopAlgorithms = found[Discovery.dpopAlgorithmsKey]?.split(separator: " ").map(String.init) ?? []
                parRequired = found[Discovery.parRequiredKey] == "true"
                for (key, field) in endpoints where p[keyPath: field] == nil {
                    // Explicit keys win; what the document says is checked like them.
                    if let v = found[key] { p[keyPath: field] = try url(key + " (discovered)", v) }
                }
            }
            if p.scopes == nil { p.scopes = ["openid"] }
        }
        guard let tokenURL = try url("token_url", p.token_url) else {
            throw TokenVaultError.config(
                "provider \(name) has no token_url",
                hint: "set token_url (or issuer) in [providers.\(Config.tableKey(name))] of \(configPath)")
        }
        let (grant, auth, clientID) = try clientSettings(p, provider: name, configPath: configPath)
        let secret = try ProviderConfig.secretSource(
            value: p.client_secret, file: p.client_secret_file,
            command: p.client_secret_command, provider: name, prefix: "client", in: config.child)
        let header = try ProviderConfig.checkedHeader(p.header ?? "Authorization: Bearer {token}", provider: name)
        var provider = OAuth2Provider(
            name: name, service: service, issuedBy: p.issuedBy ?? tokenURL, tokenURL: tokenURL,
            authorizeURL: try url("authorize_url", p.authorize_url), revokeURL: try url("revoke_url", p.revoke_url),
            deviceAuthorizationURL: try url("device_authorization_url", p.device_authorization_url),
            userinfoURL: try url("userinfo_url", p.userinfo_url), grant: grant, scopes: p.scopes ?? [],
            clientID: clientID, clientAuth: auth, redirectURI: try url("redirect_uri", p.redirect_uri),
            pkce: p.pkce ?? true, authParams: p.auth_params ?? [:], headerTemplate: header,
            refreshLifetime: p.refresh_token_lifetime.map(Int64.init),
            refreshIdle: p.refresh_token_idle.map(Int64.init),
            secretSource: secret, privateKeyFile: p.private_key_file, credentialsFile: p.credentials_file,
            audience: p.audience, subject: p.subject, issuer: p.issuer,
            resource: try p.resource.map { try checkedResource($0, provider: name, configPath: configPath) },
            // `par = false` opts out, except where the server requires it.
            dpop: p.dpop ?? false, parURL: p.par == false && !parRequired ? nil : try url("par_url", p.par_url),
            dpopAlgorithms: dpopAlgorithms, configPath: configPath)
        provider.assertionSource = try workloadAssertion(p, provider: name, in: config.child)
        if grant == .tokenExchange {
            provider.exchange = try TokenExchange(p, provider: name, configPath: configPath, in: config.child)
            try TokenExchange.checkChain(from: name, config: config, configPath: configPath)
        }
        if grant == .idJag {
            provider.identityGrant = try IdentityAssertionGrant(p, provider: name, configPath: configPath)
            try TokenExchange.checkChain(from: name, config: config, configPath: configPath)
        }
        return provider
    }

    /// The grant, how the client authenticates, and its id, checked together:
    /// a JWT needs a key, a client needs an id (a service-account key names its own).
    private static func clientSettings(
        _ p: ProviderConfig, provider name: String, configPath: String
    ) throws
        -> (Grant, ClientAuth, String)
    {
        guard let grant = Grant(rawValue: p.grant ?? "authorization_code") else {
            throw TokenVaultError.config(
                "provider \(name): grant must be authorization_code, client_credentials, jwt_bearer, token_exchange or id_jag"
            )
        }
        guard let auth = ClientAuth(rawValue: p.client_auth ?? "body") else {
            throw TokenVaultError.config(
                "provider \(name): client_auth must be body, basic, private_key_jwt or client_secret_jwt")
        }
        let workload = p.hasWorkloadAssertion
        if grant == .jwtBearer, !workload, p.private_key_file == nil, p.credentials_file == nil {
            throw TokenVaultError.config(
                "provider \(name): grant = \"jwt_bearer\" needs private_key_file (or credentials_file) to sign an assertion, or assertion_file (or assertion_command) for one its issuer made",
                hint: "set one of them in [providers.\(Config.tableKey(name))] of \(configPath)")
        }
        if auth == .privateKeyJWT, p.private_key_file == nil, p.credentials_file == nil {
            throw TokenVaultError.config(
                "provider \(name): client_auth = \"private_key_jwt\" needs private_key_file (or credentials_file)",
                hint: "set private_key_file in [providers.\(Config.tableKey(name))] of \(configPath)")
        }
        if p.private_key_file != nil, p.credentials_file != nil {
            throw TokenVaultError.config("provider \(name): set one of private_key_file and credentials_file, not both")
        }
        // A service-account key names its own account: no client id needed.
        let clientID = p.client_id ?? ""
        // A workload's assertion, or an exchanged subject token, says who it is: no client id needed either.
        if clientID.isEmpty, !(grant == .jwtBearer && (p.credentials_file != nil || workload)),
            grant != .tokenExchange
        {
            let where_ =
                registration[name].map { "register an application at \($0), then " }
                ?? "register an application with the provider, then "
            throw TokenVaultError.config(
                "no client id for \(name)",
                hint:
                    "\(where_)set client_id (and client_secret, client_secret_file or client_secret_command) in [providers.\(Config.tableKey(name))] of \(configPath)"
            )
        }
        return (grant, auth, clientID)
    }

    /// A credential this provider just issued (a login, a refresh, a fetch of
    /// its own grant), `previous` the record it replaces: tied to the provider
    /// and its issuer, with its refresh token's expiry.
    public func issued(_ fresh: Credential, previous: Credential?, now: Int64) -> Credential {
        var c = withRefreshExpiry(fresh, previous: previous, now: now)
        c.provider = name
        c.issuer = issuedBy
        return c
    }

    /// Refuses (78) to send `c`'s tokens to this provider when `c` was issued by
    /// another issuer: the provider's table now names another one (an edited
    /// config, a re-pointed name). A record that says nothing (written before
    /// tokenvault kept the issuer) is trusted once and stamped by its refresh.
    public func checkIssued(_ c: Credential) throws {
        guard let stamped = c.issuer, stamped != issuedBy else { return }
        throw TokenVaultError.config(
            "the provider for \(c.id) (\(name)) now names another issuer (\(OutsideText.line(issuedBy)), not \(OutsideText.line(stamped))); log in again",
            hint:
                "run: tokenvault login \(ShellWord.word(name))\(c.account == Credential.defaultAccount ? "" : " --account \(ShellWord.word(c.account))")"
        )
    }

    /// When `fresh`'s refresh token dies (docs/providers.md): what the provider said,
    /// else the earlier of issue + `refresh_token_lifetime` (a refresh token
    /// kept from `previous` keeps its estimate) and now + `refresh_token_idle`
    /// (each use restarts that clock).
    public func withRefreshExpiry(_ fresh: Credential, previous: Credential?, now: Int64) -> Credential {
        var out = fresh
        guard fresh.refreshToken != nil else {
            out.refreshExpiresAt = nil
            return out
        }
        guard fresh.refreshExpiresAt == nil else { return fresh }
        let rotated = previous?.refreshToken != fresh.refreshToken
        var bounds: [Int64] = []
        if let refreshLifetime {
            bounds.append(rotated ? now + refreshLifetime : previous?.refreshExpiresAt ?? now + refreshLifetime)
        }
        if let refreshIdle { bounds.append(now + refreshIdle) }
        out.refreshExpiresAt = bounds.min() ?? (rotated ? nil : previous?.refreshExpiresAt)
        return out
    }
}
