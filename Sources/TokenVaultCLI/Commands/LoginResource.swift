import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault.Login {
    /// `login URL` (docs/providers.md, "Login by URL"): everything from the
    /// resource's URL. Its provider table (issuer, resource, service, scopes)
    /// is kept in providers.toml once the login worked; its client, in the
    /// backend or the config, is found again at each use.
    func loginResource(_ url: String, account: String, context: Session) throws {
        let transport = CurlTransport(timeout: try context.httpTimeout, proxies: context.proxies)
        let config = try context.config
        try ResourceClient.checkMetadataURLs(config)
        let server = try discover(url, config: config, transport: transport)
        // Kept under the URL the user gave; the metadata's resource (the same, or a
        // parent of it on the same origin) is what the requests name (RFC 8707).
        let key = try ServiceKey(resource: url)
        let id = CredentialID(service: key, account: account)
        let providerName = try resourceProviderName(server, config: config)
        if let was = config.providers[providerName]?.issuer, was != server.issuer {
            Output.notice(
                "\(OutsideText.line(server.resource)) now names the authorization server \(OutsideText.line(server.issuer)), not \(OutsideText.line(was)): logging in there; nothing from \(OutsideText.line(was)) is sent to it"
            )
        }
        let (wanted, kept) = try loginScopes(server, id: id, config: config, context: context)
        var table = ProviderConfig()
        do {
            table.client_id = try ensureClient(server, scopes: wanted, context: context, transport: transport)
        } catch let error as TokenVaultError where !server.publishesMetadata {
            // Nothing but the fallbacks said this is an OAuth server: most likely it is none.
            throw TokenVaultError.config(
                "\(OutsideText.line(url, limit: 200)) publishes no resource metadata and its origin no authorization server metadata; the 2025-03-26 fallback \(OutsideText.line(server.registrationURL ?? "", limit: 200)) did not register tokenvault (\(error.errorText))",
                hint:
                    "where it has an authorization server, add [providers.NAME] with its issuer and client_id to \(context.settings.configPath)"
            )
        }
        table.client_auth = try clientAuth(server, clientID: table.client_id, context: context)
        table.issuer = server.issuer
        table.resource = server.resource
        table.service = key.description
        table.scopes = kept
        if server.dpop || config.providers[providerName]?.dpop == true { table.dpop = true }
        if !server.publishesMetadata {
            table.authorize_url = server.authorizeURL
            table.token_url = server.tokenURL
        }
        try context.addProvider(providerName, table, kept: true)
        var p = try context.oauth2Provider(providerName)
        p.issParameterRequired = server.issParameterRequired
        try loginOAuth2(p, account: account, scopes: wanted, context: context) {
            try DiscoveredProviders.keepResource(name: providerName, table: table, settings: context.settings)
        }
        // Only now that a login through the new client worked: the ones the server forgot go.
        if let dropped = try? context.vault().dropForgotten(for: server.issuer), dropped > 0 {
            Output.notice(
                "removed \(dropped) registration\(dropped == 1 ? "" : "s") \(OutsideText.line(server.issuer)) no longer knew"
            )
        }
    }

    /// The scopes a login by URL asks for, and those its kept table names.
    /// Step-up keeps what is held: the union of the scopes of the stored grant
    /// and the ones asked for. A client of the user's own asks for the scopes
    /// its configuration gives, none when it gives none (the server's
    /// default), never the ones a resource lists or a refusal named: a
    /// resource does not choose the powers of a client that needs no person
    /// (docs/security.md).
    func loginScopes(
        _ server: ResourceServer, id: CredentialID, config: Config, context: Session
    ) throws -> (wanted: [String], kept: [String]?) {
        let own = ResourceClient.configured(issuer: server.issuer, resource: server.resource, config: config)?.table
        if scopes.isEmpty, own?.isConfidential == true { return (own?.scopes ?? [], own?.scopes) }
        var wanted = server.loginScopes(scopes.isEmpty ? server.scopes : scopes)
        if let stored = try context.vault().load(id), stored.issuer == server.issuer, let held = stored.scope {
            let heldScopes = held.split(separator: " ").map(String.init)
            wanted = heldScopes + wanted.filter { !heldScopes.contains($0) }
        }
        return (wanted, wanted)
    }

    /// The resource's authorization server (ResourceDiscovery): PKCE is not
    /// asked of one whose configured client fetches its tokens on its own;
    /// each step said with `--verbose`.
    func discover(_ url: String, config: Config, transport: HTTPTransport) throws -> ResourceServer {
        try ResourceDiscovery.discover(
            url, issuer: issuer, transport: transport,
            ownGrant: { issuer in
                let grant = ResourceClient.configured(issuer: issuer, resource: url, config: config)?.table.grant
                return grant.flatMap(OAuth2Provider.Grant.init(rawValue:))?.fetchesAgain == true
            }
        ) { step in
            if verbose { Output.notice(step) }
        }
    }

    /// How that client authenticates at the token endpoint (ClientAuthChoice):
    /// what the configured provider says, else the registration's answer,
    /// else the server's metadata.
    func clientAuth(_ server: ResourceServer, clientID: String?, context: Session) throws -> String? {
        let config = try context.config
        var configured: String?
        var registered: String?
        var hasSecret = false
        var hasKey = false
        if let (_, own) = ResourceClient.configured(issuer: server.issuer, resource: server.resource, config: config),
            own.client_id == clientID
        {
            configured = own.client_auth
            (hasSecret, hasKey) = (own.hasSecret, own.hasKey)
        } else if let id = clientID, let r = try context.vault().registration(for: server.issuer, clientID: id) {
            registered = r.tokenEndpointAuthMethod
            hasSecret = r.clientSecret != nil
        }
        let chosen = ClientAuthChoice.decide(
            configured: configured, registered: registered, serverLists: server.tokenEndpointAuthMethods,
            hasSecret: hasSecret, hasKey: hasKey)
        return chosen
    }

    func resourceProviderName(_ server: ResourceServer, config: Config) throws -> String {
        try DiscoveredProviders.providerName(for: server, config: config, given: name)
    }

    /// The client id to log in with at the resource's authorization server:
    /// a provider configured with its issuer, else the URL of tokenvault's
    /// client metadata document where the server fetches one, else the newest registration
    /// kept for it that covers the scopes and whose redirect port is free,
    /// else a new registration (RFC 7591), kept in the backend beside the
    /// others (grants made through those still renew through them).
    func ensureClient(
        _ server: ResourceServer, scopes: [String], context: Session, transport: HTTPTransport
    ) throws -> String? {
        let issuer = OutsideText.line(server.issuer)
        if let (_, own) = ResourceClient.configured(
            issuer: server.issuer, resource: server.resource, config: try context.config)
        {
            // A workload's own JWT says who it is: no client id at all.
            if let id = own.client_id { return id }
            if own.hasWorkloadAssertion { return nil }
        }
        let metadataURL = ResourceClient.metadataURL(issuer: server.issuer, config: try context.config)
        if server.acceptsClientMetadataDocuments, let (url, _) = metadataURL {
            Output.notice("logging in to \(issuer) as the client its metadata document names: \(OutsideText.line(url))")
            return url
        }
        let vault = try context.vault()
        var registerFor = scopes + server.scopesSupported.filter { !scopes.contains($0) }
        let all = try vault.registrations(for: server.issuer)
        // One the server forgot (invalid_client, twice) is not tried: its authorization page would only fail.
        var kept = registerAgain ? [] : all.filter { $0.forgottenAt == nil }
        if let usable = kept.first(where: { $0.covers(scopes) && ResourceClient.canListen(on: $0.redirectURI) }) {
            // Where the server says (RFC 7592), a registration it no longer knows is not tried.
            guard usable.stillKnown(transport: transport) == false else { return usable.clientID }
            var gone = usable
            gone.forgottenAt = context.clock.now
            try? vault.keep(gone)
            kept.removeAll { $0.clientID == usable.clientID }
            Output.notice(
                "registering tokenvault at \(issuer) again: it no longer knows client \(OutsideText.line(usable.clientID, limit: 80))"
            )
        } else if let newest = kept.first {
            let why =
                newest.covers(scopes)
                ? "the redirect port it registered (\(newest.redirectURI)) is in use by another program"
                : "its registration does not cover every scope asked for"
            Output.notice("registering tokenvault at \(issuer) again: \(why)")
            registerFor += newest.scopes.filter { !registerFor.contains($0) }
        } else if let forgotten = all.first, kept.isEmpty {
            Output.notice(
                "registering tokenvault at \(issuer) again: \(registerAgain ? "--register-again" : "it no longer knows client \(OutsideText.line(forgotten.clientID, limit: 80))")"
            )
        }
        guard let endpoint = server.registrationURL else {
            if server.acceptsClientMetadataDocuments {
                throw TokenVaultError.config(
                    "\(issuer) takes clients by their metadata document only, and no client_metadata_url is set in \(context.settings.configPath)",
                    hint:
                        "host the document tokenvault setup client-metadata https://HOST/PATH/client.json prints at that URL, then set client_metadata_url = \"https://HOST/PATH/client.json\" in \(context.settings.configPath)"
                )
            }
            if let (name, _) = ResourceClient.withheld(
                issuer: server.issuer, resource: server.resource, config: try context.config)
            {
                throw TokenVaultError.config(
                    "\(issuer) offers no client registration, and your client [providers.\(Config.tableKey(name))] for it does not list \(OutsideText.line(server.resource, limit: 200)) in its resources",
                    hint:
                        "if that client is meant for this resource, add it: resources = [\"\(OutsideText.line(server.resource, limit: 200))\"] in [providers.\(Config.tableKey(name))] of \(context.settings.configPath)"
                )
            }
            throw TokenVaultError.config(
                "\(issuer) offers no client registration, and no provider in \(context.settings.configPath) has it as issuer",
                hint:
                    "register a client there, then add [providers.NAME] with issuer = \"\(issuer)\" and client_id to \(context.settings.configPath)"
            )
        }
        let registration = try ClientRegistration.register(
            at: endpoint, issuer: server.issuer, redirectURI: try ResourceClient.newRedirectURI(), scopes: registerFor,
            transport: transport, now: context.clock.now)
        try Interruption.holding { try vault.keep(registration) }
        Output.notice(
            "registered tokenvault at \(issuer) as client \(OutsideText.line(registration.clientID, limit: 80)) (kept in the \(try context.store().writesTo) backend)"
        )
        return registration.clientID
    }
}
