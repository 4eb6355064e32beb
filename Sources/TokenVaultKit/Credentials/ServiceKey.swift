import Dispatch
import FoundationEssentials
import Glibc

/// The key a credential is stored under: the lower-cased API host, plus
/// `:port` when the port is not the scheme's default, plus the path of a
/// protected resource logged in to by its URL (`mcp.example.com/a/mcp`;
/// docs/reference.md).
public struct ServiceKey: Hashable, Sendable, CustomStringConvertible, Comparable {
    public let host: String
    public let port: Int?
    /// A resource's path: starts with "/", no empty, "." or ".." segment, no
    /// trailing "/". Nil for a host key.
    public let path: String?

    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        let authority = port.map { "\(h):\($0)" } ?? h
        return authority + (path ?? "")
    }

    /// The URL the key stands for: https, or http for a loopback host.
    public var url: String {
        (OAuth2Provider.isLoopback(host) ? "http://" : "https://") + description
    }

    /// The key of the host alone.
    public var hostKey: ServiceKey { ServiceKey(host: host, port: port, path: nil) }

    private init(host: String, port: Int?, path: String?) {
        self.host = host
        self.port = port
        self.path = path
    }

    /// The longest path in `path` is the longest path of its host.
    public static let maxPathLength = 512

    /// The key of a protected resource's URL (`https://mcp.example.com/a/mcp/`
    /// → `mcp.example.com/a/mcp`): its path is kept, where `init(parsing:)`
    /// keeps only the host. The root path gives the host key.
    public init(resource url: String) throws {
        let host = try ServiceKey(parsing: url)
        guard let schemeEnd = url.firstRange(of: "://") else {
            throw TokenVaultError.usage("\(Quoted.text(url)) is not a URL")
        }
        var rest = url[schemeEnd.upperBound...]
        if let cut = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<cut] }
        let path = rest.firstIndex(of: "/").map { String(rest[$0...]) } ?? ""
        self.init(host: host.host, port: host.port, path: try Self.checkedPath(path, raw: url))
    }

    /// Of the resource keys `stored` on this key's host, the one whose path is
    /// this key's path or its longest parent (by whole segments); else the host key.
    public func closest(among stored: [ServiceKey]) -> ServiceKey {
        guard let path else { return self }
        let fits = stored.filter { s in
            guard s.host == host, s.port == port, let p = s.path else { return false }
            return path == p || path.hasPrefix(p + "/")
        }
        return fits.max { ($0.path ?? "").count < ($1.path ?? "").count } ?? hostKey
    }

    public static func < (a: ServiceKey, b: ServiceKey) -> Bool { a.description < b.description }

    public static let maxLength = 253

    /// Parses what a user typed: a host (`api.weibo.com`, `127.0.0.1:9000`), a URL
    /// (`https://api.twitter.com/1.1/`), or a provider name, which `providerService`
    /// turns into the service that provider stores under.
    public init(parsing raw: String, providerService: (String) -> String? = { _ in nil }) throws {
        func refuse(_ why: String) -> TokenVaultError {
            .usage(
                "invalid service \(Quoted.text(raw)): \(why)",
                hint: "give a host (api.example.com), a URL (https://api.example.com/v1/) or a provider name")
        }
        if raw.isEmpty { throw refuse("it is empty") }
        if raw.utf8.count > 2048 { throw refuse("it is too long") }
        for scalar in raw.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F { throw refuse("it contains a control character") }
            if scalar.properties.isWhitespace { throw refuse("it contains white space") }
        }
        if let schemeEnd = raw.firstRange(of: "://") {
            let scheme = raw[..<schemeEnd.lowerBound].lowercased()
            guard ["http", "https"].contains(scheme) else { throw refuse("only http and https URLs name a service") }
            var rest = raw[schemeEnd.upperBound...]
            if let cut = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
                rest = rest[..<cut]
            }
            if rest.contains("@") { throw refuse("a URL naming a service must not carry a user or password") }
            try self.init(authority: String(rest), defaultPort: scheme == "https" ? 443 : 80, refuse: refuse)
            return
        }
        if !raw.contains("."), !raw.contains(":"), let service = providerService(raw.lowercased()) {
            try self.init(parsing: service)
            return
        }
        if let slash = raw.firstIndex(of: "/") {
            // host/path: a resource's key as `list` prints it.
            let authority = try ServiceKey(authority: String(raw[..<slash]), defaultPort: 443, refuse: refuse)
            let path = try Self.checkedPath(String(raw[slash...]), raw: raw)
            guard path != nil else { throw refuse("a service key does not end with '/'") }
            self.init(host: authority.host, port: authority.port, path: path)
            return
        }
        try self.init(authority: raw, defaultPort: 443, refuse: refuse)
    }

    /// A path as a key keeps it: nil for the root; trailing "/" dropped,
    /// percent escapes upper-cased; refused (64) with an empty, "." or ".."
    /// segment, or a character outside RFC 3986's path characters.
    static func checkedPath(_ path: String, raw: String) throws -> String? {
        func refuse(_ why: String) -> TokenVaultError {
            .usage(
                "invalid service \(Quoted.text(raw)): \(why)",
                hint: "a resource's service is host/path, as tokenvault list shows it")
        }
        var trimmed = Substring(path)
        while trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        if trimmed.isEmpty { return nil }
        if trimmed.utf8.count > maxPathLength { throw refuse("the path is longer than \(maxPathLength) bytes") }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@%")
        var out = ""
        for segment in trimmed.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            if segment.isEmpty { throw refuse("the path has an empty segment ('//')") }
            if segment == "." || segment == ".." { throw refuse("'.' and '..' are not allowed in a path") }
            if let bad = segment.first(where: { !allowed.contains($0) }) {
                throw refuse("\(Quoted.text(String(bad))) is not allowed in a path")
            }
            let chars = Array(segment)
            var i = 0
            var normal = ""
            while i < chars.count {
                if chars[i] == "%" {
                    guard i + 2 < chars.count, chars[i + 1].isHexDigit, chars[i + 2].isHexDigit else {
                        throw refuse("'%' must start an escape like %2F")
                    }
                    normal += "%" + String(chars[i + 1...i + 2]).uppercased()
                    i += 3
                } else {
                    normal.append(chars[i])
                    i += 1
                }
            }
            out += "/" + normal
        }
        return out
    }

    private init(authority: String, defaultPort: Int, refuse: (String) -> TokenVaultError) throws {
        var host = Substring(authority)
        var portText: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { throw refuse("unclosed '['") }
            let after = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw refuse("unexpected text after ']'") }
                portText = after.dropFirst()
            }
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw refuse("not an IPv6 address")
            }
        } else if let colon = host.lastIndex(of: ":") {
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        let lower = host.lowercased()
        if lower.isEmpty { throw refuse("no host") }
        if lower.utf8.count > ServiceKey.maxLength {
            throw refuse("the host is longer than \(ServiceKey.maxLength) characters")
        }
        if !authority.hasPrefix("[") {
            if lower.contains("..") { throw refuse("'..' is not allowed") }
            if lower.hasPrefix(".") || lower.hasSuffix(".") { throw refuse("a host cannot start or end with '.'") }
            if lower.hasPrefix("-") { throw refuse("a host cannot start with '-'") }
            let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-._")
            if let bad = lower.first(where: { !allowed.contains($0) }) {
                throw refuse("'\(bad)' is not allowed in a host name")
            }
        }
        var port: Int?
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCII),
                let p = Int(portText), (1...65535).contains(p)
            else { throw refuse("the port must be a number from 1 to 65535") }
            port = p == defaultPort ? nil : p
        }
        self.host = lower
        self.port = port
        self.path = nil
        if description.utf8.count > ServiceKey.maxLength + 8 { throw refuse("it is too long") }
    }

}
