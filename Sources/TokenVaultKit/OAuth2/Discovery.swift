import Dispatch
import FoundationEssentials
import Glibc

/// A provider's endpoints from its `issuer` (docs/providers.md): OpenID Connect
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
    public static func defaultDirectory(_ settings: Settings) -> String { settings.cacheDirectory + "/discovery" }

    /// The endpoints of `issuer`'s document, checked: its `issuer` is the one
    /// configured (Microsoft's `{tenantid}` placeholder standing for one path
    /// segment), and it names a token endpoint.
    public func endpoints(issuer: String, provider name: String, refetch: Bool = false) throws -> [String: String] {
        let cached = readCache(issuer, provider: name)
        if !refetch, let cached, now - cached.fetchedAt < Self.maxAge {
            return try Self.checked(cached.document, issuer: issuer, provider: name)
        }
        let document: [String: JSONValue]
        do {
            document = try fetch(issuer, provider: name)
        } catch let error as TokenVaultError {
            guard case .temporary = error, let cached else { throw error }
            warn(
                "could not fetch the discovery document of \(name) (\(error.errorText)); using the one fetched \(now - cached.fetchedAt) s ago"
            )
            return try Self.checked(cached.document, issuer: issuer, provider: name)
        }
        let endpoints = try Self.checked(document, issuer: issuer, provider: name)
        writeCache(issuer, document)
        return endpoints
    }

    /// Where `checked` puts the server's `dpop_signing_alg_values_supported`, space-separated.
    static let dpopAlgorithmsKey = "dpop_signing_alg_values_supported"
    /// Where `checked` says the server requires pushed authorization requests.
    static let parRequiredKey = "require_pushed_authorization_requests"

    static let fields = [
        ("authorization_endpoint", "authorize_url"), ("token_endpoint", "token_url"),
        ("revocation_endpoint", "revoke_url"), ("device_authorization_endpoint", "device_authorization_url"),
        ("userinfo_endpoint", "userinfo_url"), ("pushed_authorization_request_endpoint", "par_url"),
    ]

    static func checked(
        _ document: [String: JSONValue], issuer: String, provider name: String
    ) throws -> [String: String] {
        guard let stated = document["issuer"]?.string else {
            throw TokenVaultError.badInput("the discovery document of \(name) names no issuer")
        }
        guard issuerMatches(stated, configured: issuer) else {
            throw TokenVaultError.config(
                "the discovery document of \(name) is for issuer \(Quoted.text(stated)), not \(Quoted.text(issuer)); refusing its endpoints",
                hint: "check issuer in [providers.\(Config.tableKey(name))]")
        }
        var out: [String: String] = [:]
        for (key, configKey) in fields {
            guard let v = document[key]?.string, !v.isEmpty else { continue }
            // Printed (the login URL) and sent to: parsed and written out again, or refused.
            guard let url = OutsideText.url(v) else {
                throw TokenVaultError.badInput(
                    "the discovery document of \(name) has a \(key) that is not a plain http(s) URL: \(OutsideText.line(v))"
                )
            }
            out[configKey] = url
        }
        guard out["token_url"] != nil else {
            throw TokenVaultError.badInput("the discovery document of \(name) has no token_endpoint")
        }
        // Not endpoints: whether the server requires pushed authorization requests, and the
        // DPoP proof algorithms, which pick a new key's (docs/security.md).
        if document["require_pushed_authorization_requests"] == .bool(true) { out[parRequiredKey] = "true" }
        if case .array(let algs)? = document["dpop_signing_alg_values_supported"] {
            out[dpopAlgorithmsKey] = algs.compactMap(\.string).filter { MCPRouting.isToken($0) }.joined(separator: " ")
        }
        return out
    }

    /// Exact, except that a `{tenantid}` in the document's issuer (Entra ID's
    /// multi-tenant endpoints) stands for exactly one whole path segment of the
    /// configured one: after the host and a "/", before a "/" or the end; never
    /// part of the host, never empty, "." or "..".
    static func issuerMatches(_ stated: String, configured: String) -> Bool {
        if stated == configured { return true }
        guard let range = stated.firstRange(of: "{tenantid}") else { return false }
        let prefix = stated[..<range.lowerBound], suffix = stated[range.upperBound...]
        guard let scheme = prefix.firstRange(of: "://"), prefix[scheme.upperBound...].contains("/"),
            prefix.hasSuffix("/"),
            suffix.isEmpty || suffix.hasPrefix("/"), !suffix.contains("{tenantid}")
        else { return false }
        guard configured.hasPrefix(prefix), configured.hasSuffix(suffix), configured.count > prefix.count + suffix.count
        else { return false }
        let middle = configured.dropFirst(prefix.count).dropLast(suffix.count)
        return middle != "." && middle != ".." && !middle.contains(where: { "/?#@\\".contains($0) || $0.isWhitespace })
    }

    /// The two well-known addresses, OpenID Connect first.
    public static func urls(_ issuer: String) -> [String] {
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
        let (document, last) = try Self.firstDocument(Self.urls(issuer), transport: transport) { status, url in
            // A server error there may be the wrong issuer as well as a server that is down.
            .temporary(
                "the discovery document of \(name) is unavailable (HTTP \(status) from \(url))",
                hint:
                    "nothing was changed; check that \(OutsideText.line(issuer, limit: 200)) is the issuer (its discovery document is at that URL), else try again later"
            )
        }
        guard let document else {
            throw TokenVaultError.badInput("no discovery document for \(name) at \(issuer) (\(last))")
        }
        return document
    }

    /// The first of `urls` that answers 2xx with a JSON object. A 5xx stops
    /// the search (75, in `unavailable`'s words): the server is there but
    /// cannot answer now. Nil, with what the last URL said, when none has one.
    /// `trace` hears each URL asked and its answer (`--verbose`).
    static func firstDocument(
        _ urls: [String], transport: HTTPTransport, trace: (String) -> Void = { _ in },
        unavailable: (_ status: Int, _ url: String) -> TokenVaultError
    ) throws -> (document: [String: JSONValue]?, last: String) {
        var last = "no answer"
        for url in urls {
            let r = try transport.send(HTTPRequest(method: "GET", url: url, headers: ["Accept: application/json"]))
            trace("GET \(OutsideText.line(url, limit: 200)): HTTP \(r.status)")
            if (500..<600).contains(r.status) { throw unavailable(r.status, url) }
            if (200..<300).contains(r.status),
                case .object(let o)? = JSONValue.parsed(r.body)
            {
                return (o, last)
            }
            last = "HTTP \(r.status) from \(url)"
        }
        return (nil, last)
    }

    // MARK: The cache: one JSON file per issuer, named by a hash of it.

    private func path(_ issuer: String) -> String {
        cacheDirectory + "/" + Hex.encode(Sodium.hash(Array(issuer.utf8))) + ".json"
    }

    /// The cached document, if the file can be trusted: a regular file of
    /// this user's, not writable by group or others, in a directory of the
    /// same kind. Anything else (a shared or misconfigured XDG_CACHE_HOME,
    /// another user's file) is ignored and said (once a run: `warn` is the
    /// run's warnings for its end): the document is fetched again rather than
    /// a planted token endpoint believed.
    private func readCache(
        _ issuer: String, provider name: String
    ) -> (fetchedAt: Int64, document: [String: JSONValue])? {
        let file = path(issuer)
        var st = stat()
        guard lstat(file, &st) == 0 else { return nil }
        if let why = Self.untrusted(cacheDirectory, directory: true) ?? Self.untrusted(file, directory: false) {
            warn("ignored the cached discovery document of \(name) (\(file)): \(why); fetching it again")
            return nil
        }
        guard let data = FileManager.default.contents(atPath: file),
            case .object(let o)? = JSONValue.parsed(data),
            o["issuer"]?.string == issuer, let at = o["fetched_at"]?.int64, case .object(let doc)? = o["document"],
            (0...now).contains(at)  // a time to come, or one whose age overflows: not a copy to believe
        else { return nil }
        return (at, doc)
    }

    /// Why `path` cannot be trusted as part of the cache, or nil.
    static func untrusted(_ path: String, directory: Bool) -> String? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return "it cannot be read" }
        let kind = st.st_mode & S_IFMT
        if directory ? kind != S_IFDIR : kind != S_IFREG {
            return directory ? "its directory is not a directory" : "it is not a regular file"
        }
        if st.st_uid != geteuid() {
            return "\(directory ? "its directory" : "it") belongs to another user (uid \(st.st_uid))"
        }
        if st.st_mode & 0o022 != 0 {
            return
                "\(directory ? "its directory" : "it") is writable by others (mode \(String(st.st_mode & 0o777, radix: 8)))"
        }
        return nil
    }

    private func writeCache(_ issuer: String, _ document: [String: JSONValue]) {
        let record = JSONValue.object([
            "issuer": .string(issuer), "fetched_at": .integer(now), "document": .object(document),
        ])
        guard (try? PrivateDirectory.ensure(cacheDirectory)) != nil, let data = try? JSONEncoder.sorted.encode(record)
        else { return }
        try? AtomicFile.replace(path(issuer), with: Array(data), what: "the discovery cache")
    }
}

extension Discovery {
    /// Forgets the cached document of `issuer`, so the next use fetches it
    /// again (after one of its endpoints failed).
    public func forget(issuer: String) {
        unlink(path(issuer))
    }
}
