import FoundationEssentials

/// The decisions of `login URL` (docs/providers.md, "Login by URL"): which
/// authorization server, which client (a configured one, a metadata
/// document, a kept registration, or a new one), which scopes, how the
/// client authenticates, and the provider table kept once the login worked.
/// The command runs the flow and prints; everything decided is here, on the
/// parts it is given (a test gives doubles).
public struct ResourceLogin {
    /// What the command line asked for.
    public struct Options: Sendable {
        /// `--scope`: asked for besides none, in place of the server's.
        public var scopes: [String] = []
        /// `--issuer`: which of the resource's authorization servers.
        public var issuer: String?
        /// `--name`: the provider to keep it under.
        public var name: String?
        /// `--register-again`: no kept registration is used.
        public var registerAgain = false
        /// `--verbose`: each step of discovery said.
        public var verbose = false

        public init() {}
    }

    /// What a login by URL logs in with: its provider table, kept in
    /// providers.toml once the login worked, and the scopes asked for.
    public struct Prepared {
        public var server: ResourceServer
        public var service: ServiceKey
        public var providerName: String
        public var table: ProviderConfig
        public var scopes: [String]
    }

    let config: Config
    let vault: CredentialVault
    let transport: HTTPTransport
    let clock: Clock
    let notices: Notices
    let configPath: String
    /// The backend's name, for the line that says where a registration is kept.
    let backendName: () throws -> String
    let options: Options

    public init(
        config: Config, vault: CredentialVault, transport: HTTPTransport, clock: Clock, notices: Notices,
        configPath: String, backendName: @escaping () throws -> String, options: Options
    ) {
        self.config = config
        self.vault = vault
        self.transport = transport
        self.clock = clock
        self.notices = notices
        self.configPath = configPath
        self.backendName = backendName
        self.options = options
    }

    /// A session's parts.
    public init(_ session: Session, transport: HTTPTransport, options: Options) throws {
        self.init(
            config: try session.config, vault: try session.vault(), transport: transport, clock: session.clock,
            notices: session.notices, configPath: session.settings.configPath,
            backendName: { try session.store().writesTo }, options: options)
    }

    /// Everything up to the login itself: the server found from `url`, the
    /// client registered or reused, the scopes and the table.
    public func prepare(_ url: String, account: String) throws -> Prepared {
        try ResourceClient.checkMetadataURLs(config)
        let server = try discover(url)
        // Kept under the URL the user gave; the metadata's resource (the same, or a
        // parent of it on the same origin) is what the requests name (RFC 8707).
        let key = try ServiceKey(resource: url)
        let id = CredentialID(service: key, account: account)
        let providerName = try DiscoveredProviders.providerName(for: server, config: config, given: options.name)
        if let was = config.providers[providerName]?.issuer, was != server.issuer {
            notices.notice(
                "\(OutsideText.line(server.resource)) now names the authorization server \(OutsideText.line(server.issuer)), not \(OutsideText.line(was)): logging in there; nothing from \(OutsideText.line(was)) is sent to it"
            )
        }
        let (wanted, kept) = try scopes(server, id: id)
        let clientID: String?
        do {
            clientID = try client(server, scopes: wanted)
        } catch let error as TokenVaultError where !server.publishesMetadata {
            // Nothing but the fallbacks said this is an OAuth server: most likely it is none.
            throw TokenVaultError.config(
                "\(OutsideText.line(url, limit: 200)) publishes no resource metadata and its origin no authorization server metadata; the 2025-03-26 fallback \(OutsideText.line(server.registrationURL ?? "", limit: 200)) did not register tokenvault (\(error.errorText))",
                hint:
                    "where it has an authorization server, add [providers.NAME] with its issuer and client_id to \(configPath)"
            )
        }
        var table = Self.table(
            for: server, service: key, clientID: clientID, clientAuth: try clientAuth(server, clientID: clientID),
            scopes: kept)
        if server.dpop || config.providers[providerName]?.dpop == true { table.dpop = true }
        return Prepared(server: server, service: key, providerName: providerName, table: table, scopes: wanted)
    }

    /// The provider table a login by URL keeps for `server` (in
    /// providers.toml): its client, issuer, resource, service and scopes, and
    /// the fallback endpoints of a server that publishes no metadata.
    public static func table(
        for server: ResourceServer, service: ServiceKey, clientID: String?, clientAuth: String?, scopes: [String]?
    ) -> ProviderConfig {
        var table = ProviderConfig()
        table.client_id = clientID
        table.client_auth = clientAuth
        table.issuer = server.issuer
        table.resource = server.resource
        table.service = service.description
        table.scopes = scopes
        if !server.publishesMetadata {
            table.authorize_url = server.authorizeURL
            table.token_url = server.tokenURL
        }
        return table
    }

    /// After a login through the new client worked: the registrations the
    /// server forgot go.
    public func finish(_ server: ResourceServer) {
        if let dropped = try? vault.dropForgotten(for: server.issuer), dropped > 0 {
            notices.notice(
                "removed \(dropped) registration\(dropped == 1 ? "" : "s") \(OutsideText.line(server.issuer)) no longer knew"
            )
        }
    }

    /// The resource's authorization server (ResourceDiscovery): PKCE is not
    /// asked of one whose configured client fetches its tokens on its own;
    /// each step said with `--verbose`.
    func discover(_ url: String) throws -> ResourceServer {
        let config = config
        return try ResourceDiscovery.discover(
            url, issuer: options.issuer, transport: transport,
            ownGrant: { issuer in
                let grant = ResourceClient.configured(issuer: issuer, resource: url, config: config)?.table.grant
                return grant.flatMap(OAuth2Provider.Grant.init(rawValue:))?.fetchesAgain == true
            }
        ) { step in
            if options.verbose { notices.notice(step) }
        }
    }

    /// The scopes asked for, and those the kept table names. Step-up keeps
    /// what is held: the union of the scopes of the stored grant and the
    /// ones asked for. A client of the user's own asks for the scopes its
    /// configuration gives, none when it gives none (the server's default),
    /// never the ones a resource lists or a refusal named: a resource does
    /// not choose the powers of a client that needs no person (docs/security.md).
    func scopes(_ server: ResourceServer, id: CredentialID) throws -> (wanted: [String], kept: [String]?) {
        let own = ResourceClient.configured(issuer: server.issuer, resource: server.resource, config: config)?.table
        if options.scopes.isEmpty, own?.isConfidential == true { return (own?.scopes ?? [], own?.scopes) }
        var wanted = server.loginScopes(options.scopes.isEmpty ? server.scopes : options.scopes)
        if let stored = try vault.load(id), stored.issuer == server.issuer, let held = stored.scope {
            let heldScopes = held.split(separator: " ").map(String.init)
            wanted = heldScopes + wanted.filter { !heldScopes.contains($0) }
        }
        return (wanted, wanted)
    }

    /// How that client authenticates at the token endpoint (ClientAuthChoice):
    /// what the configured provider says, else the registration's answer,
    /// else the server's metadata.
    func clientAuth(_ server: ResourceServer, clientID: String?) throws -> String? {
        var configured: String?
        var registered: String?
        var hasSecret = false
        var hasKey = false
        if let (_, own) = ResourceClient.configured(issuer: server.issuer, resource: server.resource, config: config),
            own.client_id == clientID
        {
            configured = own.client_auth
            (hasSecret, hasKey) = (own.hasSecret, own.hasKey)
        } else if let id = clientID, let r = try vault.registration(for: server.issuer, clientID: id) {
            registered = r.tokenEndpointAuthMethod
            hasSecret = r.clientSecret != nil
        }
        return ClientAuthChoice.decide(
            configured: configured, registered: registered, serverLists: server.tokenEndpointAuthMethods,
            hasSecret: hasSecret, hasKey: hasKey)
    }

    /// The client id to log in with: a provider configured with the issuer,
    /// else the URL of tokenvault's client metadata document where the
    /// server fetches one, else the newest registration kept for it that
    /// covers the scopes and whose redirect port is free, else a new
    /// registration (RFC 7591), kept in the backend beside the others
    /// (grants made through those still renew through them).
    func client(_ server: ResourceServer, scopes: [String]) throws -> String? {
        let issuer = OutsideText.line(server.issuer)
        if let (_, own) = ResourceClient.configured(issuer: server.issuer, resource: server.resource, config: config) {
            // A workload's own JWT says who it is: no client id at all.
            if let id = own.client_id { return id }
            if own.hasWorkloadAssertion { return nil }
        }
        if server.acceptsClientMetadataDocuments,
            let (url, _) = ResourceClient.metadataURL(issuer: server.issuer, config: config)
        {
            notices.notice(
                "logging in to \(issuer) as the client its metadata document names: \(OutsideText.line(url))")
            return url
        }
        var registerFor = scopes + server.scopesSupported.filter { !scopes.contains($0) }
        let all = try vault.registrations(for: server.issuer)
        // One the server forgot (invalid_client, twice) is not tried: its authorization page would only fail.
        var kept = options.registerAgain ? [] : all.filter { $0.forgottenAt == nil }
        if let usable = kept.first(where: { $0.covers(scopes) && ResourceClient.canListen(on: $0.redirectURI) }) {
            // Where the server says (RFC 7592), a registration it no longer knows is not tried.
            guard usable.stillKnown(transport: transport) == false else { return usable.clientID }
            var gone = usable
            gone.forgottenAt = clock.now
            try? vault.keep(gone)
            kept.removeAll { $0.clientID == usable.clientID }
            notices.notice(
                "registering tokenvault at \(issuer) again: it no longer knows client \(OutsideText.line(usable.clientID, limit: 80))"
            )
        } else if let newest = kept.first {
            let why =
                newest.covers(scopes)
                ? "the redirect port it registered (\(newest.redirectURI)) is in use by another program"
                : "its registration does not cover every scope asked for"
            notices.notice("registering tokenvault at \(issuer) again: \(why)")
            registerFor += newest.scopes.filter { !registerFor.contains($0) }
        } else if let forgotten = all.first, kept.isEmpty {
            notices.notice(
                "registering tokenvault at \(issuer) again: \(options.registerAgain ? "--register-again" : "it no longer knows client \(OutsideText.line(forgotten.clientID, limit: 80))")"
            )
        }
        guard let endpoint = server.registrationURL else { throw noRegistration(server) }
        let registration = try ClientRegistration.register(
            at: endpoint, issuer: server.issuer, redirectURI: try ResourceClient.newRedirectURI(), scopes: registerFor,
            transport: transport, now: clock.now)
        try Interruption.holding { try vault.keep(registration) }
        notices.notice(
            "registered tokenvault at \(issuer) as client \(OutsideText.line(registration.clientID, limit: 80)) (kept in the \(try backendName()) backend)"
        )
        return registration.clientID
    }

    /// Why no client can be had where the server offers no registration, and
    /// what to configure.
    func noRegistration(_ server: ResourceServer) -> TokenVaultError {
        let issuer = OutsideText.line(server.issuer)
        if server.acceptsClientMetadataDocuments {
            return .config(
                "\(issuer) takes clients by their metadata document only, and no client_metadata_url is set in \(configPath)",
                hint:
                    "host the document tokenvault setup client-metadata https://HOST/PATH/client.json prints at that URL, then set client_metadata_url = \"https://HOST/PATH/client.json\" in \(configPath)"
            )
        }
        if let (name, _) = ResourceClient.withheld(issuer: server.issuer, resource: server.resource, config: config) {
            let resource = OutsideText.line(server.resource, limit: 200)
            return .config(
                "\(issuer) offers no client registration, and your client [providers.\(Config.tableKey(name))] for it does not list \(resource) in its resources",
                hint:
                    "if that client is meant for this resource, add it: resources = [\"\(resource)\"] in [providers.\(Config.tableKey(name))] of \(configPath)"
            )
        }
        return .config(
            "\(issuer) offers no client registration, and no provider in \(configPath) has it as issuer",
            hint:
                "register a client there, then add [providers.NAME] with issuer = \"\(issuer)\" and client_id to \(configPath)"
        )
    }
}
