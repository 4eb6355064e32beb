import TokenVaultKit

/// A test's providers for a `Refresher`: by a function of the name, or
/// resolved from a config of the test's own.
public struct ProviderTable: ProviderLookup {
    let resolve: (String) throws -> OAuth2Provider

    public init(_ resolve: @escaping (String) throws -> OAuth2Provider) { self.resolve = resolve }

    public init(config: Config) {
        resolve = { try OAuth2Provider.resolve($0, config: config, configPath: "c") }
    }

    public func oauth2Provider(_ name: String) throws -> OAuth2Provider { try resolve(name) }
}
