import Dispatch
import FoundationEssentials
import Glibc

/// One request of git's credential-helper protocol (gitcredentials(7),
/// git-credential(1)): `key=value` lines, ended by a blank line or the end of
/// input. Keys ending in `[]` (`wwwauth[]`, `capability[]`) may repeat.
public struct GitCredentialRequest: Sendable, Equatable {
    public var fields: [String: String] = [:]
    public var lists: [String: [String]] = [:]

    /// More than this on stdin is not a credential request.
    public static let maxBytes = 64 * 1024

    public init() {}

    public var proto: String? { fields["protocol"]?.lowercased() }
    public var host: String? { fields["host"]?.lowercased() }
    public var username: String? { fields["username"].flatMap { $0.isEmpty ? nil : $0 } }
    public var password: String? { fields["password"] }

    /// Parses what git wrote; a line without `=`, an empty key, or a NUL is bad
    /// input (65), as git itself refuses them. A `url=` line is split into
    /// `protocol`, `host` and `path` as git does before calling a helper;
    /// what git sent as its own lines (`host=`, …) wins over it.
    public static func parse(_ bytes: [UInt8]) throws -> GitCredentialRequest {
        guard bytes.count <= maxBytes else {
            throw TokenVaultError.badInput("the credential request is longer than \(maxBytes) bytes")
        }
        guard !bytes.contains(0) else { throw TokenVaultError.badInput("the credential request contains a NUL byte") }
        var request = GitCredentialRequest()
        var fromURL: [String: String] = [:]
        var number = 0
        // Lines split on the bytes: in a Swift String "\r\n" is one Character.
        for rawBytes in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
            number += 1
            let lineBytes = rawBytes.last == 0x0D ? rawBytes.dropLast() : rawBytes
            if lineBytes.isEmpty { break }
            guard let line = String(validating: lineBytes, as: UTF8.self) else {
                throw TokenVaultError.badInput("the credential request is not UTF-8 text")
            }
            guard let eq = line.firstIndex(of: "="), eq != line.startIndex else {
                throw TokenVaultError.badInput("malformed credential request: line \(number) is not key=value")
            }
            let key = String(line[..<eq]), value = String(line[line.index(after: eq)...])
            if key.hasSuffix("[]") {
                // An empty value resets the list (git's convention).
                if value.isEmpty { request.lists[key] = [] } else { request.lists[key, default: []].append(value) }
            } else if key == "url" {
                fromURL = try fields(ofURL: value)
            } else {
                request.fields[key] = value
            }
        }
        request.fields.merge(fromURL) { given, _ in given }
        return request
    }

    /// `protocol`, `username`, `host` and `path` of a URL, split as git's
    /// credential_from_url does: the authority ends at the first "/", "?" or
    /// "#", and only an "@" inside it separates a user name
    /// (`https://evil.example?@github.com/x` is host evil.example).
    static func fields(ofURL url: String) throws -> [String: String] {
        guard let scheme = url.firstRange(of: "://") else {
            throw TokenVaultError.badInput("malformed credential request: url \(Quoted.text(url)) has no scheme")
        }
        var out = ["protocol": String(url[..<scheme.lowerBound])]
        let afterScheme = url[scheme.upperBound...]
        let end = afterScheme.firstIndex(where: { "/?#".contains($0) }) ?? afterScheme.endIndex
        var authority = afterScheme[..<end]
        if let at = authority.firstIndex(of: "@") {
            let user = authority[..<at]
            out["username"] =
                FormEncoding.percentDecoded(String(user.split(separator: ":", maxSplits: 1).first ?? ""))
                ?? String(user)
            authority = authority[authority.index(after: at)...]
        }
        out["host"] = FormEncoding.percentDecoded(String(authority)) ?? String(authority)
        // git drops the slashes that start the path; a "?" or "#" stays in it.
        let path = afterScheme[end...].drop(while: { $0 == "/" })
        if !path.isEmpty { out["path"] = FormEncoding.percentDecoded(String(path)) ?? String(path) }
        return out
    }
}

/// A provider's claim on git remotes: `https://HOST[:PORT]`, written in
/// `git_hosts` as `HOST`, `HOST:PORT` or with a scheme; plain `http://` only for
/// a loopback host, as a token must not cross a network in clear.
public struct GitHostRule: Sendable, Equatable {
    public var scheme: String
    /// Host and port as a service key spells them: lower case, the scheme's
    /// default port dropped, IPv6 in brackets.
    public var key: ServiceKey

    public init(parsing entry: String, provider: String, configPath: String) throws {
        func bad(_ why: String) -> TokenVaultError {
            .config(
                "provider \(provider): git_hosts entry \(Quoted.text(entry)) \(why)",
                hint: "fix git_hosts in [providers.\(Config.tableKey(provider))] of \(configPath)")
        }
        var rest = Substring(entry.lowercased())
        scheme = "https"
        if let r = rest.firstRange(of: "://") {
            scheme = String(rest[..<r.lowerBound])
            rest = rest[r.upperBound...]
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard scheme == "https" || scheme == "http" else { throw bad("must be https:// (or http:// for loopback)") }
        guard !rest.isEmpty,
            !rest.contains(where: {
                $0 == "/" || $0 == "@" || $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 } == true
            }),
            let key = GitHostRule.key(scheme, String(rest))
        else {
            throw bad("must be a host, host:port or scheme://host[:port], without a path")
        }
        self.key = key
        if scheme == "http", !OAuth2Provider.isLoopback(key.host) {
            throw bad("is plain http to a host that is not loopback: the token would cross the network in clear")
        }
    }

    /// Whether git's `protocol` and `host` are this rule's remote.
    public func matches(protocol proto: String, host requested: String) -> Bool {
        proto == scheme && GitHostRule.key(proto, requested) == key
    }

    private static func key(_ scheme: String, _ authority: String) -> ServiceKey? {
        try? ServiceKey(parsing: scheme + "://" + authority)
    }
}

/// A provider that claims a git remote, with what `git-credential` needs of it.
public struct GitProviderMatch: Sendable, Equatable {
    public var provider: String
    public var service: ServiceKey
    /// The username git is given when it sent none.
    public var username: String
}

extension ProviderDirectory {
    /// The providers whose `git_hosts` claim `protocol://host`: configured
    /// providers first (by name), then the presets nobody configured. A bad
    /// `git_hosts` entry in any provider is a configuration error (78).
    public func gitProviders(protocol proto: String, host: String, configPath: String) throws -> [GitProviderMatch] {
        let configured = config.providers.keys.sorted()
        let order = configured + names.filter { !configured.contains($0) }
        var matches: [GitProviderMatch] = []
        for name in order {
            guard let table = table(name), let hosts = table.git_hosts else { continue }
            let rules = try hosts.map { try GitHostRule(parsing: $0, provider: name, configPath: configPath) }
            guard rules.contains(where: { $0.matches(protocol: proto, host: host) }) else { continue }
            matches.append(
                GitProviderMatch(
                    provider: name, service: try table.serviceKey(provider: name),
                    username: table.git_username ?? "oauth2"))
        }
        return matches
    }
}

extension Credential {
    /// Whether `password` is this credential's access token (constant time).
    public func hasAccessToken(_ password: String) -> Bool {
        Sodium.equal(Array(accessToken.utf8), Array(password.utf8))
    }
}
