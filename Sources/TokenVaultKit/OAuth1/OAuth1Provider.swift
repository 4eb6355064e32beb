import Dispatch
import FoundationEssentials
import Glibc

/// An OAuth 1.0a provider: its preset merged with its `[providers.NAME]` table.
public struct OAuth1Provider: Sendable {
    public var name: String
    public var service: ServiceKey
    public var requestTokenURL: String
    public var authorizeURL: String
    public var accessTokenURL: String
    public var consumerKey: String
    /// Flickr's `perms` (read, write, delete), added to the authorize URL.
    public var perms: String?
    var consumerSecret: SecretSource

    static let registration = [
        "twitter": "https://developer.x.com/en/portal/projects-and-apps",
        "flickr": "https://www.flickr.com/services/apps/create/",
    ]

    public static func resolve(_ name: String, config: Config, configPath: String) throws -> OAuth1Provider {
        let p = try ProviderConfig.table(for: name, config: config, configPath: configPath)
        guard (p.type ?? "oauth2") == "oauth1" else {
            throw TokenVaultError.config("\(name) is not an OAuth 1.0a provider (set type = \"oauth1\")")
        }
        func url(_ key: String, _ value: String?) throws -> String {
            guard let value else {
                throw TokenVaultError.config(
                    "provider \(name) has no \(key)",
                    hint: "set \(key) in [providers.\(Config.tableKey(name))] of \(configPath)")
            }
            try OAuth2Provider.checkEndpoint(value, provider: name, key: key, configPath: configPath)
            return value
        }
        let requestURL = try url("request_token_url", p.request_token_url)
        let authorizeURL = try url("authorize_url", p.authorize_url)
        let accessURL = try url("access_token_url", p.access_token_url)
        let registerAt = registration[name].map { "register an application at \($0), then " } ?? ""
        guard let key = p.consumer_key, !key.isEmpty else {
            throw TokenVaultError.config(
                "no consumer key for \(name)",
                hint:
                    "\(registerAt)set consumer_key and consumer_secret (or consumer_secret_file / consumer_secret_command) in [providers.\(Config.tableKey(name))] of \(configPath)"
            )
        }
        guard
            let secret = try ProviderConfig.secretSource(
                value: p.consumer_secret, file: p.consumer_secret_file,
                command: p.consumer_secret_command, provider: name, prefix: "consumer", in: config.child)
        else {
            throw TokenVaultError.config(
                "no consumer secret for \(name)",
                hint:
                    "set consumer_secret, consumer_secret_file or consumer_secret_command in [providers.\(Config.tableKey(name))] of \(configPath)"
            )
        }
        let service = try p.serviceKey(provider: name)
        return OAuth1Provider(
            name: name, service: service, requestTokenURL: requestURL, authorizeURL: authorizeURL,
            accessTokenURL: accessURL, consumerKey: key, perms: p.perms, consumerSecret: secret)
    }

    /// A signer for this consumer and the given token.
    public func signer(token: String? = nil, tokenSecret: String? = nil) throws -> OAuth1Signer {
        OAuth1Signer(
            consumerKey: consumerKey, consumerSecret: try consumerSecret.read(what: "the consumer secret of \(name)"),
            token: token, tokenSecret: tokenSecret)
    }
}
