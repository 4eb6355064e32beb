import FoundationEssentials
import Glibc

/// A `[providers.NAME]` table: every field optional, as it extends a preset.
public struct ProviderConfig: Codable, Sendable, Equatable {
    public var type: String?
    public var service: String?
    public var authorize_url: String?
    public var token_url: String?
    public var revoke_url: String?
    public var device_authorization_url: String?
    public var userinfo_url: String?
    public var grant: String?
    public var scopes: [String]?
    public var client_id: String?
    public var client_secret: String?
    public var client_secret_file: String?
    public var client_secret_command: String?
    public var client_auth: String?
    public var redirect_uri: String?
    public var pkce: Bool?
    public var auth_params: [String: String]?
    public var header: String?
    public var request_token_url: String?
    public var access_token_url: String?
    public var consumer_key: String?
    public var consumer_secret: String?
    public var consumer_secret_file: String?
    public var consumer_secret_command: String?
    public var perms: String?
    /// Hosts whose git remotes use this provider's token (docs/adapters.md): `github.com`,
    /// `git.example.com:8443`, or `http://127.0.0.1:PORT` (plain http: loopback only).
    public var git_hosts: [String]?
    /// The username `git-credential` answers when git sends none.
    public var git_username: String?
    /// Fills `{tenant}` in the endpoints (the microsoft preset: `common` by default).
    public var tenant: String?
    /// An OpenID Connect issuer (or RFC 8414 authorization server): the
    /// endpoints not set here come from its discovery document (docs/providers.md).
    public var issuer: String?
    /// A PEM private key (RS256 or ES256) for jwt_bearer and private_key_jwt.
    public var private_key_file: String?
    /// A Google service-account key (JSON) for jwt_bearer.
    public var credentials_file: String?
    /// jwt_bearer with a JWT another issuer made (a workload's identity: a
    /// Kubernetes projected token, a CI job's OIDC token), sent as it is:
    /// a file read afresh at every use, or a command's stdout (docs/providers.md).
    public var assertion_file: String?
    public var assertion_command: String?
    /// token_exchange (RFC 8693): the subject token's source (a file read
    /// afresh, or a command's stdout), its type (`access_token`, `id_token`,
    /// `refresh_token`, `jwt`, or a URI), and the type of token asked for.
    public var subject_token_file: String?
    public var subject_token_command: String?
    /// token_exchange: the provider whose stored credential is the subject
    /// token (its access token, or the field `subject_token_type` names),
    /// renewed first when it needs to be.
    public var subject_provider: String?
    public var subject_token_type: String?
    public var requested_token_type: String?
    /// id_jag: the provider of the enterprise identity provider whose stored
    /// login (its ID token, or its refresh token) is traded for an identity
    /// assertion grant (docs/providers.md, "One enterprise login").
    public var idp: String?
    /// jwt_bearer: the assertion's `aud` (default: the token URL) and `sub` (default: the issuer of it).
    public var audience: String?
    public var subject: String?
    /// RFC 8707: the resource (an MCP server's URL, an API) tokens are asked for and bound to.
    public var resource: String?
    /// The resources (MCP servers, by URL) a client of the user's own with a
    /// secret, a key or a grant without a user may log in to; a resource not
    /// listed never gets it (docs/providers.md, "Login by URL").
    public var resources: [String]?
    /// The https URL of tokenvault's client metadata document for this
    /// provider's issuer (docs/providers.md, "Login by URL").
    public var client_metadata_url: String?
    /// DPoP (RFC 9449): tokens bound to a key of the credential's own
    /// (docs/security.md, "Sender-constrained tokens").
    public var dpop: Bool?
    /// Pushed authorization requests (RFC 9126), where the server has a
    /// `par_url`: on unless false.
    public var par: Bool?
    /// The server's pushed authorization request endpoint.
    public var par_url: String?
    /// Seconds a refresh token lives from its issue, when the provider does not say.
    public var refresh_token_lifetime: Int?
    /// Seconds a refresh token lives unused (Entra ID: 90 days).
    public var refresh_token_idle: Int?

    public init() {}

    /// Who issues this provider's tokens (docs/security.md): its `issuer`, else
    /// the origin of its token endpoint. A credential keeps it, and its refresh
    /// token is sent to no provider that names another.
    public var issuedBy: String? { issuer ?? token_url.flatMap(Self.origin(of:)) }

    /// `scheme://host[:port]` of a URL, lower-cased; nil when it has no host.
    static func origin(of url: String) -> String? {
        guard let c = URLComponents(string: url), let scheme = c.scheme, let host = c.host, !host.isEmpty else {
            return nil
        }
        return scheme.lowercased() + "://" + host.lowercased() + (c.port.map { ":\($0)" } ?? "")
    }

    /// A provider's table: its preset, if any, overlaid by its `[providers.NAME]`
    /// table; an unknown name is a configuration error (78).
    public static func table(for name: String, config: Config, configPath: String) throws -> ProviderConfig {
        if let broken = config.brokenProviders[name] { throw broken }
        let preset = ProviderPreset.named(name)
        let own = config.providers[name]
        guard preset != nil || own != nil else {
            let names = ProviderDirectory(config: config).names
            let define = "or define [providers.\(Config.tableKey(name))] in \(configPath)"
            throw TokenVaultError.config(
                "unknown provider \(Quoted.text(name))",
                hint: Suggestion.text(for: name, in: names, listName: "providers") + "; " + define)
        }
        return try (preset?.config ?? ProviderConfig()).overlaid(by: own).withTenant(
            provider: name, configPath: configPath)
    }

    /// The OAuth 2.0 endpoints, by config key: what `{tenant}` fills in and
    /// what an issuer's discovery document may supply.
    static var endpoints: [(key: String, field: WritableKeyPath<ProviderConfig, String?>)] {
        [
            ("authorize_url", \.authorize_url), ("token_url", \.token_url), ("revoke_url", \.revoke_url),
            ("device_authorization_url", \.device_authorization_url), ("userinfo_url", \.userinfo_url),
            ("par_url", \.par_url),
        ]
    }

    /// Endpoints with `{tenant}` filled in: the `tenant` key, else `common`.
    func withTenant(provider name: String, configPath: String) throws -> ProviderConfig {
        let fields = ProviderConfig.endpoints.map(\.field)
        guard fields.contains(where: { self[keyPath: $0]?.contains("{tenant}") == true }) else { return self }
        let tenant = self.tenant ?? "common"
        guard !tenant.isEmpty, tenant.utf8.count <= 64,
            tenant.unicodeScalars.allSatisfy({
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) || $0 == "-" || $0 == "."
            })
        else {
            throw TokenVaultError.config(
                "provider \(name): tenant must be a tenant id or domain (letters, digits, '-', '.'), not \(Quoted.text(tenant))",
                hint: "fix tenant in [providers.\(Config.tableKey(name))] of \(configPath)")
        }
        var m = self
        for f in fields { m[keyPath: f] = m[keyPath: f]?.replacing("{tenant}", with: tenant) }
        return m
    }

    /// This table (a preset) with every field `own` sets taking its place. A
    /// secret given in any of its three forms replaces all three.
    func overlaid(by own: ProviderConfig?) -> ProviderConfig {
        guard let own else { return self }
        var m = self
        func take<T>(_ field: WritableKeyPath<ProviderConfig, T?>) {
            if let v = own[keyPath: field] { m[keyPath: field] = v }
        }
        for field in [
            \ProviderConfig.type, \.service, \.authorize_url, \.token_url, \.revoke_url, \.device_authorization_url,
            \.userinfo_url, \.grant, \.client_id, \.client_auth, \.redirect_uri, \.header,
            \.request_token_url, \.access_token_url, \.consumer_key, \.perms, \.git_username, \.tenant,
            \.issuer, \.private_key_file, \.credentials_file, \.audience, \.subject, \.resource,
            \.client_metadata_url, \.par_url, \.assertion_file, \.assertion_command, \.subject_token_file,
            \.subject_token_command, \.subject_token_type, \.requested_token_type, \.subject_provider, \.idp,
        ] {
            take(field)
        }
        take(\.scopes)
        take(\.resources)
        take(\.git_hosts)
        take(\.refresh_token_lifetime)
        take(\.refresh_token_idle)
        take(\.pkce)
        take(\.dpop)
        take(\.par)
        if let v = own.auth_params { m.auth_params = (m.auth_params ?? [:]).merging(v) { $1 } }
        for group in [
            [\ProviderConfig.client_secret, \.client_secret_file, \.client_secret_command],
            [\ProviderConfig.consumer_secret, \.consumer_secret_file, \.consumer_secret_command],
        ]
        where group.contains(where: { own[keyPath: $0] != nil }) {
            for field in group { m[keyPath: field] = own[keyPath: field] }
        }
        return m
    }
}

/// `[etcd]`: where the fleet backend's cluster is and how to reach it.
public struct EtcdConfig: Codable, Sendable, Equatable {
    public var endpoints: [String]?
    public var prefix: String?
    public var username: String?
    public var password_file: String?
    public var password_command: String?
    public var ca_file: String?
    public var cert_file: String?
    public var key_file: String?
    public var lease_ttl: Int?
    /// Seconds for any one etcd call (default 5).
    public var timeout: Int?
    /// Seconds a call may keep waiting for a cluster that answers but is busy
    /// (a burst at the top of the hour), before it fails (default 30).
    public var wait: Int?

    public init() {}

    func check(path: String) throws {
        if let t = lease_ttl, !(2...3600).contains(t) {
            throw TokenVaultError.config("\(path): etcd.lease_ttl must be between 2 and 3600 seconds")
        }
        if let t = timeout, !(1...300).contains(t) {
            throw TokenVaultError.config("\(path): etcd.timeout must be between 1 and 300 seconds")
        }
        if let w = wait, !(0...3600).contains(w) {
            throw TokenVaultError.config("\(path): etcd.wait must be between 0 and 3600 seconds")
        }
        if password_file != nil, password_command != nil {
            throw TokenVaultError.config("\(path): set one of etcd.password_file and etcd.password_command, not both")
        }
        if (cert_file == nil) != (key_file == nil) {
            throw TokenVaultError.config("\(path): etcd.cert_file and etcd.key_file go together")
        }
    }
}

/// `[hooks]`: commands run when something needs a person (docs/agent.md).
public struct HooksConfig: Codable, Sendable, Equatable {
    public var on_login_required: String?
    public var on_refresh_token_expiring: String?
    public var on_refresh_failed: String?
    /// A desktop notification as well (default: true, where there is a desktop session).
    public var notify: Bool?

    public init() {}
}

extension ProviderConfig {
    /// A client that holds a secret or a key, or fetches tokens with no user
    /// (client credentials, a JWT bearer): what only the resources it lists get.
    public var isConfidential: Bool {
        hasSecret || hasKey || grant == "client_credentials" || grant == "jwt_bearer" || grant == "token_exchange"
            || grant == "id_jag"
    }

    /// A client secret, in any of its three forms.
    public var hasSecret: Bool { client_secret != nil || client_secret_file != nil || client_secret_command != nil }

    /// A key the client signs with (a PEM file, or a Google credentials file).
    public var hasKey: Bool { private_key_file != nil || credentials_file != nil }

    /// A workload's JWT to send as the jwt-bearer assertion: it says who the
    /// client is, so no client id is needed.
    public var hasWorkloadAssertion: Bool { assertion_file != nil || assertion_command != nil }

    /// `resource` is one of `resources` (a trailing slash aside).
    public func serves(_ resource: String) -> Bool {
        func bare(_ url: String) -> String { url.hasSuffix("/") ? String(url.dropLast()) : url }
        return (resources ?? []).contains { bare($0) == bare(resource) }
    }
}
