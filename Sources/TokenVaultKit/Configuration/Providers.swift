import Dispatch
import FoundationEssentials
import Glibc

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
            $0.git_hosts = ["github.com", "gist.github.com"]
            $0.git_username = "x-access-token"
        },
        preset("gitlab", "oauth2", "gitlab.com") {
            $0.authorize_url = "https://gitlab.com/oauth/authorize"
            $0.token_url = "https://gitlab.com/oauth/token"
            $0.revoke_url = "https://gitlab.com/oauth/revoke"
            $0.device_authorization_url = "https://gitlab.com/oauth/authorize_device"
            $0.userinfo_url = "https://gitlab.com/oauth/userinfo"
            $0.scopes = ["read_user", "write_repository"]
            $0.git_hosts = ["gitlab.com"]
            $0.git_username = "oauth2"
        },
        // Entra ID v2.0: a public client (PKCE, no secret); refresh tokens rotate
        // and need offline_access. `tenant` fills {tenant} (default: common).
        preset("microsoft", "oauth2", "graph.microsoft.com") {
            $0.authorize_url = "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/authorize"
            $0.token_url = "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token"
            $0.device_authorization_url = "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/devicecode"
            $0.userinfo_url = "https://graph.microsoft.com/oidc/userinfo"
            $0.scopes = ["offline_access", "User.Read"]
            $0.refresh_token_idle = 90 * 86400
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

    private static func preset(
        _ name: String, _ type: String, _ service: String, _ fill: (inout ProviderConfig) -> Void
    ) -> ProviderPreset {
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

    public var names: [String] {
        Array(Set(ProviderPreset.all.map(\.name)).union(config.providers.keys).union(config.brokenProviders.keys))
            .sorted()
    }

    /// The provider's `header` template ("x-auth-token: {token}"), checked;
    /// nil for the default `Authorization: Bearer {token}`.
    public func headerTemplate(of name: String) throws -> String? {
        guard let table = table(name), let header = table.header else { return nil }
        return try ProviderConfig.checkedHeader(header, provider: name)
    }

    /// The key the provider's credentials are stored under, from the same
    /// merged table `login` uses: a preset keeps its service when only its
    /// token_url is overridden. Nil for an unknown name.
    public func service(of name: String) -> String? {
        guard let table = table(name) else { return nil }
        return try? table.serviceKey(provider: name).description
    }

    /// The providers whose credentials are stored under `service`, configured
    /// ones first, each name once.
    public func owners(of service: ServiceKey) -> [String] {
        let configured = config.providers.keys.sorted().filter { self.service(of: $0) == service.description }
        let presets = ProviderPreset.all.map(\.name).filter {
            !configured.contains($0) && self.service(of: $0) == service.description
        }
        return configured + presets
    }

    /// A provider's grant from its table alone, without discovery or secrets:
    /// all a credential's state needs (the hot path of `get`).
    public func grant(of name: String) -> OAuth2Provider.Grant? {
        guard var t = table(name) else { return nil }
        // A resource logged in to by URL: the grant of the client it uses (a provider configured for its issuer).
        if config.discoveredProviders.contains(name),
            let filled = try? ResourceClient.filled(t, config: config, registration: { _, _ in nil })
        {
            t = filled
        }
        return OAuth2Provider.Grant(rawValue: t.grant ?? "authorization_code")
    }

    /// The preset overlaid by its `[providers.NAME]` table; nil for an unknown name.
    public func table(_ name: String) -> ProviderConfig? {
        try? ProviderConfig.table(for: name, config: config, configPath: "")
    }
}

extension ProviderConfig {
    /// The one rule for a provider's service key (docs/reference.md): `service` when
    /// set (a preset sets it), else the host of its token endpoint as written,
    /// else the host of its issuer (never a discovered endpoint's).
    func serviceKey(provider name: String) throws -> ServiceKey {
        guard let text = service ?? token_url ?? access_token_url ?? issuer else {
            throw TokenVaultError.config("provider \(name) has no service and no token endpoint to take it from")
        }
        guard let key = try? ServiceKey(parsing: text) else {
            throw TokenVaultError.config("provider \(name): service \(Quoted.text(text)) is not a valid service")
        }
        return key
    }

    /// The `header` template, checked: one "Name: value" line containing {token}.
    static func checkedHeader(_ header: String, provider name: String) throws -> String {
        guard header.contains("{token}"), header.contains(":"), !header.contains(where: \.isNewline),
            !header.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else {
            throw TokenVaultError.config("provider \(name): header must be one \"Name: value\" line containing {token}")
        }
        return header
    }

    /// The one-of-three secret setting (`client_secret`, `client_secret_file`,
    /// `client_secret_command`, or the `consumer_` ones): nil when none is set.
    /// A file's path and a command are taken where `child` says (the
    /// client's, for a command the agent runs).
    static func secretSource(
        value: String?, file: String?, command: String?, provider name: String, prefix: String,
        in child: ChildContext
    ) throws -> SecretSource? {
        let sources = [
            value.map { SecretSource.value($0) }, file.map { .file(child.absolute($0)) },
            command.map {
                .command($0, child, setting: "the \(prefix)_secret_command of [providers.\(Config.tableKey(name))]")
            },
        ].compactMap { $0 }
        guard sources.count <= 1 else {
            throw TokenVaultError.config(
                "provider \(name): set only one of \(prefix)_secret, \(prefix)_secret_file, \(prefix)_secret_command")
        }
        return sources.first
    }
}

/// What to do next, said the same way by every command (README, "Exit status").
public enum NextStep {
    /// The hint for "nothing stored for `id`": the accounts that are stored
    /// for the service when another one was asked for; else a login, when a
    /// provider (`owners`) stores under the service; else a stored service
    /// the name is close to, or a provider's (`providers`: every name `login`
    /// takes), as `login` suggests one; else `set`.
    /// `deleting`: for `delete` and `logout`, where nothing stored is nothing
    /// to do (never a login or a `set`).
    public static func missing(
        _ id: CredentialID, stored: [CredentialID], owners: [String], providers: [String] = [], deleting: Bool = false
    ) -> String {
        let accounts = stored.filter { $0.service == id.service }.map(\.account).sorted()
        if !accounts.isEmpty {
            let close =
                Suggestion.closest(to: id.account, in: accounts).map {
                    "did you mean --account \(ShellWord.word($0))? "
                } ?? ""
            return close + "accounts stored for \(id.service): " + accounts.map(ShellWord.word).joined(separator: ", ")
        }
        let acct = id.account == Credential.defaultAccount ? "" : " --account \(ShellWord.word(id.account))"
        if deleting {
            let services = Array(Set(stored.map(\.service.description))).sorted()
            let close = Suggestion.closest(to: id.service.description, in: services).map {
                "did you mean \(ShellWord.word($0))? "
            }
            return (close ?? "") + "nothing to delete: it is not stored (tokenvault list shows what is)"
        }
        if let owner = owners.first {
            let others = owners.dropFirst().map(ShellWord.word)
            return "run: tokenvault login \(ShellWord.word(owner))\(acct)"
                + (others.isEmpty ? "" : " (or: \(others.joined(separator: ", ")))")
        }
        // A resource's key: its URL logs in to it.
        let set =
            id.service.path == nil
            ? "tokenvault set \(ShellWord.word(id.service.description))\(acct) < token.json"
            : "tokenvault login \(ShellWord.word(id.service.url))\(acct)"
        // A word with no dot is a provider's name mistyped more often than a host.
        if !id.service.description.contains("."),
            let close = Suggestion.closest(to: id.service.description, in: providers)
        {
            return
                "did you mean \(ShellWord.word(close))? (a provider: tokenvault login \(ShellWord.word(close))\(acct))"
        }
        let services = Array(Set(stored.map(\.service.description))).sorted()
        if let close = Suggestion.closest(to: id.service.description, in: services) {
            return
                "did you mean \(ShellWord.word(close))? or \(id.service.path == nil ? "store one with" : "log in"): \(set)"
        }
        return id.service.path == nil ? "store one with: \(set)" : "log in: \(set)"
    }
}
