import Foundation

/// The built-in presets (PROVIDERS.md). Only what naming a service needs is
/// here for now; the OAuth flows read the rest from `ProviderConfig`.
public struct ProviderPreset: Sendable {
    public var name: String
    public var type: String
    /// The key its credentials are stored under.
    public var service: String
    public var config: ProviderConfig

    public static let all: [ProviderPreset] = [
        preset("weibo", "oauth2", "api.weibo.com") {
            $0.authorize_url = "https://api.weibo.com/oauth2/authorize"
            $0.token_url = "https://api.weibo.com/oauth2/access_token"
            $0.revoke_url = "https://api.weibo.com/oauth2/revokeoauth2"
            $0.userinfo_url = "https://api.weibo.com/2/users/show.json"
        },
        preset("google", "oauth2", "www.googleapis.com") {
            $0.authorize_url = "https://accounts.google.com/o/oauth2/v2/auth"
            $0.token_url = "https://oauth2.googleapis.com/token"
            $0.revoke_url = "https://oauth2.googleapis.com/revoke"
            $0.device_authorization_url = "https://oauth2.googleapis.com/device/code"
            $0.userinfo_url = "https://openidconnect.googleapis.com/v1/userinfo"
            $0.auth_params = ["access_type": "offline", "prompt": "consent"]
        },
        preset("github", "oauth2", "api.github.com") {
            $0.authorize_url = "https://github.com/login/oauth/authorize"
            $0.token_url = "https://github.com/login/oauth/access_token"
            $0.device_authorization_url = "https://github.com/login/device/code"
        },
        preset("foursquare", "oauth2", "api.foursquare.com") {
            $0.authorize_url = "https://foursquare.com/oauth2/authenticate"
            $0.token_url = "https://foursquare.com/oauth2/access_token"
        },
        preset("twitter", "oauth1", "api.twitter.com") {
            $0.request_token_url = "https://api.twitter.com/oauth/request_token"
            $0.authorize_url = "https://api.twitter.com/oauth/authorize"
            $0.access_token_url = "https://api.twitter.com/oauth/access_token"
        },
        preset("flickr", "oauth1", "api.flickr.com") {
            $0.request_token_url = "https://www.flickr.com/services/oauth/request_token"
            $0.authorize_url = "https://www.flickr.com/services/oauth/authorize"
            $0.access_token_url = "https://www.flickr.com/services/oauth/access_token"
            $0.perms = "read"
        },
    ]

    private static func preset(_ name: String, _ type: String, _ service: String, _ fill: (inout ProviderConfig) -> Void) -> ProviderPreset {
        var c = ProviderConfig()
        c.type = type
        c.service = service
        fill(&c)
        return ProviderPreset(name: name, type: type, service: service, config: c)
    }

    public static func named(_ name: String) -> ProviderPreset? { all.first { $0.name == name } }
}

/// Finds the service a provider name stands for: configured providers first
/// (they may override a preset's `service`), then the presets.
public struct ProviderDirectory: Sendable {
    public var config: Config

    public init(config: Config) { self.config = config }

    public var names: [String] { Array(Set(ProviderPreset.all.map(\.name)).union(config.providers.keys)).sorted() }

    /// The provider's `header` template, when configured ("x-auth-token: {token}").
    public func headerTemplate(of name: String) -> String? {
        config.providers[name]?.header ?? ProviderPreset.named(name)?.config.header
    }

    public func service(of name: String) -> String? {
        if let p = config.providers[name] {
            if let s = p.service { return s }
            if let t = p.token_url ?? p.access_token_url, let key = try? ServiceKey(parsing: t) { return key.description }
        }
        return ProviderPreset.named(name)?.service
    }
}
