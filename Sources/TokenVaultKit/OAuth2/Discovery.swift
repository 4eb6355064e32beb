import Dispatch
import FoundationEssentials
import Glibc

/// A provider's endpoints from its `issuer` (SPEC §13): OpenID Connect
/// discovery (`ISSUER/.well-known/openid-configuration`), else RFC 8414
/// (`https://HOST/.well-known/oauth-authorization-server/PATH`). The document
/// is cached on disk for a day, so `get` never fetches it on its way; it is
/// fetched again when stale, or when asked to after an endpoint failed.
public struct Discovery {
    public var cacheDirectory: String
    public var transport: HTTPTransport
    public var now: Int64
    /// Told when a stale copy stands in for one that could not be fetched.
    public var warn: (String) -> Void

    /// How long a fetched document is used without asking again.
    public static let maxAge: Int64 = 86400

    public init(cacheDirectory: String, transport: HTTPTransport, now: Int64, warn: @escaping (String) -> Void) {
        self.cacheDirectory = cacheDirectory
        self.transport = transport
        self.now = now
        self.warn = warn
    }

    /// `$XDG_CACHE_HOME/tokenvault/discovery`.
    public static func defaultDirectory(environment env: [String: String]) -> String {
        let cache = env["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? (Posix.homeDirectory(env) + "/.cache")
        return cache + "/tokenvault/discovery"
    }

    /// The endpoints of `issuer`'s document, checked: its `issuer` is the one
    /// configured (Microsoft's `{tenantid}` placeholder standing for one path
    /// segment), and it names a token endpoint.
    public func endpoints(issuer: String, provider name: String, refetch: Bool = false) throws -> [String: String] {
        let cached = readCache(issuer)
        if !refetch, let cached, now - cached.fetchedAt < Self.maxAge, now >= cached.fetchedAt {
            return try Self.checked(cached.document, issuer: issuer, provider: name)
        }
        let document: [String: JSONValue]
        do {
            document = try fetch(issuer, provider: name)
        } catch let error as TokenVaultError {
            guard case .temporary = error, let cached else { throw error }
            warn("could not fetch the discovery document of \(name) (\(error.errorText)); using the one fetched \(now - cached.fetchedAt) s ago")
            return try Self.checked(cached.document, issuer: issuer, provider: name)
        }
        let endpoints = try Self.checked(document, issuer: issuer, provider: name)
        writeCache(issuer, document)
        return endpoints
    }

    static let fields = [("authorization_endpoint", "authorize_url"), ("token_endpoint", "token_url"),
                         ("revocation_endpoint", "revoke_url"), ("device_authorization_endpoint", "device_authorization_url"),
                         ("userinfo_endpoint", "userinfo_url")]

    static func checked(_ document: [String: JSONValue], issuer: String, provider name: String) throws -> [String: String] {
        guard let stated = document["issuer"]?.string else {
            throw TokenVaultError.badInput("the discovery document of \(name) names no issuer")
        }
        guard issuerMatches(stated, configured: issuer) else {
            throw TokenVaultError.config("the discovery document of \(name) is for issuer \(ServiceKey.quoted(stated)), not \(ServiceKey.quoted(issuer)); refusing its endpoints",
                                         hint: "check issuer in [providers.\(name)]")
        }
        var out: [String: String] = [:]
        for (key, configKey) in fields {
            if let v = document[key]?.string, !v.isEmpty { out[configKey] = v }
        }
        guard out["token_url"] != nil else {
            throw TokenVaultError.badInput("the discovery document of \(name) has no token_endpoint")
        }
        return out
    }

    /// Exact, except that a `{tenantid}` in the document's issuer (Entra ID's
    /// multi-tenant endpoints) stands for one path segment of the configured one.
    static func issuerMatches(_ stated: String, configured: String) -> Bool {
        if stated == configured { return true }
        guard let range = stated.firstRange(of: "{tenantid}") else { return false }
        let prefix = stated[..<range.lowerBound], suffix = stated[range.upperBound...]
        guard configured.hasPrefix(prefix), configured.hasSuffix(suffix), configured.count > prefix.count + suffix.count else { return false }
        let middle = configured.dropFirst(prefix.count).dropLast(suffix.count)
        return !middle.contains("/") && !middle.contains("?") && !middle.contains("#")
    }

    /// The two well-known addresses, OpenID Connect first.
    static func urls(_ issuer: String) -> [String] {
        let trimmed = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        var urls = [trimmed + "/.well-known/openid-configuration"]
        if let scheme = trimmed.firstRange(of: "://") {
            let rest = trimmed[scheme.upperBound...]
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            urls.append(String(trimmed[..<slash]) + "/.well-known/oauth-authorization-server" + rest[slash...])
        }
        return urls
    }

    private func fetch(_ issuer: String, provider name: String) throws -> [String: JSONValue] {
        var last = "no answer"
        for url in Self.urls(issuer) {
            let r = try transport.send(HTTPRequest(method: "GET", url: url, headers: ["Accept: application/json"]))
            if (500..<600).contains(r.status) {
                throw TokenVaultError.temporary("the discovery document of \(name) is unavailable (HTTP \(r.status) from \(url))")
            }
            if (200..<300).contains(r.status), case .object(let o)? = try? JSONDecoder().decode(JSONValue.self, from: r.body) {
                return o
            }
            last = "HTTP \(r.status) from \(url)"
        }
        throw TokenVaultError.badInput("no discovery document for \(name) at \(issuer) (\(last))")
    }

    // MARK: The cache: one JSON file per issuer, named by a hash of it.

    private func path(_ issuer: String) -> String {
        cacheDirectory + "/" + Hex.encode(Sodium.hash(Array(issuer.utf8))) + ".json"
    }

    private func readCache(_ issuer: String) -> (fetchedAt: Int64, document: [String: JSONValue])? {
        guard let data = FileManager.default.contents(atPath: path(issuer)),
              case .object(let o)? = try? JSONDecoder().decode(JSONValue.self, from: data),
              o["issuer"]?.string == issuer, let at = o["fetched_at"]?.int64, case .object(let doc)? = o["document"]
        else { return nil }
        return (at, doc)
    }

    private func writeCache(_ issuer: String, _ document: [String: JSONValue]) {
        let record = JSONValue.object(["issuer": .string(issuer), "fetched_at": .integer(now), "document": .object(document)])
        guard (try? PrivateDirectory.ensure(cacheDirectory)) != nil, let data = try? JSONEncoder.sorted.encode(record) else { return }
        _ = Discovery.replaceFile(path(issuer), with: data)
    }

    /// Writes `data` to a 0600 temporary file beside `path`, then renames it
    /// over `path`: readers see the old file or the new one. False on failure.
    static func replaceFile(_ path: String, with data: Data) -> Bool {
        let temp = path + ".tmp-\(getpid())"
        guard FileManager.default.createFile(atPath: temp, contents: data, attributes: [.posixPermissions: 0o600]) else { return false }
        guard rename(temp, path) == 0 else {
            unlink(temp)
            return false
        }
        return true
    }
}

extension Discovery {
    /// Forgets the cached document of `issuer`, so the next use fetches it
    /// again (after one of its endpoints failed).
    public func forget(issuer: String) {
        unlink(path(issuer))
    }
}

/// `providers.toml`: the providers `login --issuer` added, one table each
/// (issuer and client_id), rewritten whole and atomically, 0600.
public enum DiscoveredProviders {
    /// A provider name for an issuer: its host's labels and its last path
    /// segment, joined by "-" (https://idp.example.com/realms/ops → idp-example-com-ops).
    public static func name(for issuer: String) -> String {
        guard let key = try? ServiceKey(parsing: issuer) else { return "issuer" }
        var parts = [key.host]
        if let scheme = issuer.firstRange(of: "://") {
            let rest = issuer[scheme.upperBound...]
            if let slash = rest.firstIndex(of: "/"), let last = rest[slash...].split(separator: "/").last { parts.append(String(last)) }
        }
        let joined = parts.joined(separator: "-").lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" }
        return String(joined).split(separator: "-").joined(separator: "-")
    }

    public static func add(name: String, issuer: String, clientID: String, environment env: [String: String]) throws {
        let path = Config.discoveredPath(environment: env)
        var tables: [String: ProviderConfig] = [:]
        if let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) {
            tables = try Config.parse(text, path: path).providers
        }
        var table = ProviderConfig()
        table.issuer = issuer
        table.client_id = clientID
        tables[name] = table
        var text = "# Providers added by `tokenvault login --issuer`; edit or remove freely.\n"
        for (n, t) in tables.sorted(by: { $0.key < $1.key }) {
            text += "\n[providers.\(try quoted(n))]\n"
            if let i = t.issuer { text += "issuer = \(try quoted(i))\n" }
            if let c = t.client_id { text += "client_id = \(try quoted(c))\n" }
        }
        try PrivateDirectory.createWithParents(Posix.dirname(path))
        guard Discovery.replaceFile(path, with: Data(text.utf8)) else {
            throw TokenVaultError.config("cannot write \(path)")
        }
    }

    /// A TOML basic string.
    private static func quoted(_ s: String) throws -> String {
        guard !s.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw TokenVaultError.usage("\(ServiceKey.quoted(s)) contains a control character")
        }
        return "\"" + s.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\""
    }
}
