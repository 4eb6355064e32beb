import FoundationEssentials
import Glibc

/// The proxy a request to a provider goes through (docs/config.md, "Behind a
/// proxy"): libcurl's own variables, read as libcurl reads them, but from the
/// run's settings — a command's environment, or for the agent, its client's —
/// and given to libcurl explicitly, so that no process's own environment
/// decides for another's request.
public struct ProxySettings: Sendable, Equatable {
    /// A proxy's URL and the variable that named it.
    public struct Source: Sendable, Equatable {
        public var url: String
        public var variable: String
    }
    public var http: Source?
    public var https: Source?
    public var all: Source?
    public var noProxy: String?

    public init(http: Source? = nil, https: Source? = nil, all: Source? = nil, noProxy: String? = nil) {
        (self.http, self.https, self.all, self.noProxy) = (http, https, all, noProxy)
    }

    /// As libcurl reads its variables: `http_proxy` in lower case only (an
    /// upper-case one may come from a CGI request's header), the others
    /// in either case, lower case first.
    public init(settings: Settings) {
        func source(_ names: [EnvironmentVariable]) -> Source? {
            names.lazy.compactMap { v in settings[v].map { Source(url: $0, variable: v.name) } }.first
        }
        http = source([.httpProxy])
        https = source([.httpsProxy, .httpsProxyUpper])
        all = source([.allProxy, .allProxyUpper])
        noProxy = settings[.noProxy] ?? settings[.noProxyUpper]
    }

    /// The proxy a request to `url` goes through; nil: directly.
    public func proxy(for url: String) throws -> Proxy? {
        let lower = url.lowercased()
        let scheme = lower.hasPrefix("https://") ? https : lower.hasPrefix("http://") ? http : nil
        guard let source = scheme ?? all else { return nil }
        if let host = try? ServiceKey(parsing: url).host, bypasses(host) { return nil }
        return try Proxy(source)
    }

    /// `no_proxy` as curl reads it (docs/config.md, "Behind a proxy"): `*`
    /// alone bypasses every host; else entries separated by commas or spaces.
    /// A host name matches an entry that is the name or a domain above it, a
    /// leading dot and a trailing dot of either aside, in any case; an
    /// address (IPv4, or IPv6 with or without brackets) matches an entry that
    /// is the same address, or a CIDR range that holds it (`10.0.0.0/8`,
    /// `::1/128`). A port on an entry is passed over: the host alone decides.
    public func bypasses(_ host: String) -> Bool {
        let list = (noProxy ?? "").trimmedSpaces()
        if list == "*" { return true }
        let name = Self.bare(host.lowercased().trimmingBrackets())
        let address = IPAddress(name)
        for entry in list.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }) {
            var e = entry.lowercased()
            if e.hasPrefix(".") { e.removeFirst() }
            if e.hasPrefix("["), let close = e.firstIndex(of: "]") {
                e = String(e[e.index(after: e.startIndex)..<close])  // [v6], and any port after it
            } else if e.filter({ $0 == ":" }).count == 1, let colon = e.lastIndex(of: ":") {
                e = String(e[..<colon])  // a name or an IPv4 address with a port
            }
            e = Self.bare(e)
            guard !e.isEmpty else { continue }
            if let address {
                if address.within(e) { return true }
            } else if name == e || name.hasSuffix("." + e) {
                return true
            }
        }
        return false
    }

    /// A name without its trailing dot (`example.com.` is `example.com`).
    private static func bare(_ name: String) -> String {
        name.hasSuffix(".") && name.count > 1 ? String(name.dropLast()) : name
    }
}

/// An IPv4 or IPv6 address, as `no_proxy` compares them.
struct IPAddress: Equatable {
    let bytes: [UInt8]

    init?(_ text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
        } else {
            return nil
        }
    }

    /// Whether `entry` (an address, or ADDRESS/BITS) names this address or
    /// a range that holds it; an entry of the other family never does.
    func within(_ entry: String) -> Bool {
        let parts = entry.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let network = IPAddress(String(parts[0])), network.bytes.count == bytes.count else { return false }
        var bits = bytes.count * 8
        if parts.count == 2 {
            guard let given = Int(parts[1]), (0...bits).contains(given) else { return false }
            bits = given
        }
        for i in 0..<bytes.count where bits > 0 {
            let take = min(bits, 8)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - take))
            if bytes[i] & mask != network.bytes[i] & mask { return false }
            bits -= take
        }
        return true
    }
}

extension Settings {
    /// The proxy variables (docs/config.md, "Behind a proxy").
    public static let proxyVariables: [EnvironmentVariable] = [
        .httpProxy, .httpsProxy, .httpsProxyUpper, .allProxy, .allProxyUpper, .noProxy, .noProxyUpper,
    ]

    /// These settings with the proxies of `environment` (a client's) in
    /// place of their own: what the agent renews or answers with for it.
    public func withProxies(of environment: [String: String]) -> Settings {
        withEnvironment { e in
            for v in Self.proxyVariables { e[v.name] = environment[v.name] }
        }
    }
}

/// One proxy, checked before anything is sent through it. What is shown of
/// it (`shown`) never holds its user name or password.
public struct Proxy: Sendable, Equatable {
    /// What libcurl is given.
    public let url: String
    /// The variable that named it.
    public let variable: String
    /// scheme://host:port, for messages.
    public let shown: String

    /// The proxy `source` names, or a 78 that says what is wrong with it
    /// without quoting it (its password may be in it).
    init(_ source: ProxySettings.Source) throws {
        let text = source.url.trimmedSpaces()
        func unreadable(_ why: String) -> TokenVaultError {
            .config(
                "the proxy in \(source.variable) cannot be read: \(why); nothing was sent",
                hint:
                    "write it as http://HOST:PORT or http://USER:PASSWORD@HOST:PORT, with a '#', '@', '/', ':' or space in the user name or password percent-encoded (%23, %40, %2F, %3A, %20)"
            )
        }
        let schemeEnd = text.firstRange(of: "://")
        let scheme = schemeEnd.map { text[..<$0.lowerBound].lowercased() } ?? "http"
        guard ["http", "https", "socks4", "socks4a", "socks5", "socks5h"].contains(scheme) else {
            throw unreadable("it is not an http, https or socks proxy")
        }
        let rest = schemeEnd.map { text[$0.upperBound...] } ?? text[...]
        guard !rest.contains(where: { $0 == " " || $0 == "\t" || $0 == "#" || $0 == "?" }) else {
            throw unreadable("it holds a space, '#' or '?'")
        }
        var authority = rest.prefix { $0 != "/" }
        let path = rest.dropFirst(authority.count)
        guard path.isEmpty || path == "/" else { throw unreadable("it has a path") }
        var credentials = false
        if let at = authority.firstIndex(of: "@") {
            let userinfo = authority[..<at]
            authority = authority[authority.index(after: at)...]
            guard !authority.contains("@"), userinfo.filter({ $0 == ":" }).count <= 1 else {
                throw unreadable("its user name or password holds an '@' or ':' that is not percent-encoded")
            }
            guard FormEncoding.percentDecoded(String(userinfo)) != nil else {
                throw unreadable("its user name or password has a malformed %-escape")
            }
            credentials = true
        }
        guard !authority.isEmpty, (try? ServiceKey(parsing: "http://" + authority)) != nil else {
            throw unreadable("it names no host (and port) that can be read")
        }
        url = schemeEnd == nil ? "http://" + text : text
        variable = source.variable
        shown = "\(scheme)://\(authority)\(credentials ? " (with credentials)" : "")"
    }

    /// `text` with this proxy's URL (credentials and all) replaced by what is shown of it.
    public func masked(_ text: String) -> String {
        text.replacing(url, with: shown)
    }
}

extension String {
    fileprivate func trimmingBrackets() -> String {
        hasPrefix("[") && hasSuffix("]") ? String(dropFirst().dropLast()) : self
    }
}
