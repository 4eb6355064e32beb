import TokenVaultKit

extension TokenVault.Login {
    /// `login URL` (docs/providers.md, "Login by URL"): what `ResourceLogin`
    /// decides from the resource's URL (server, client, scopes, table), then
    /// the login. Its provider table is kept in providers.toml once the login
    /// worked; its client, in the backend or the config, is found again at each use.
    func loginResource(_ url: String, account: String, context: Session) throws {
        var options = ResourceLogin.Options()
        (options.scopes, options.issuer, options.name) = (scopes, issuer, name)
        (options.registerAgain, options.verbose) = (registerAgain, verbose)
        let transport = CurlTransport(timeout: try context.httpTimeout, proxies: context.proxies)
        let login = try ResourceLogin(context, transport: transport, options: options)
        let prepared = try login.prepare(url, account: account)
        try context.addProvider(prepared.providerName, prepared.table, kept: true)
        var p = try context.oauth2Provider(prepared.providerName)
        p.issParameterRequired = prepared.server.issParameterRequired
        try loginOAuth2(p, account: account, scopes: prepared.scopes, context: context) {
            try DiscoveredProviders.keepResource(
                name: prepared.providerName, table: prepared.table, settings: context.settings)
        }
        // Only now that a login through the new client worked: the ones the server forgot go.
        login.finish(prepared.server)
    }
}
