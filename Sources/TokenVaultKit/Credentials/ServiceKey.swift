import Dispatch
import FoundationEssentials
import Glibc

/// The key a credential is stored under: the lower-cased API host, plus
/// `:port` when the port is not the scheme's default (docs/reference.md).
public struct ServiceKey: Hashable, Sendable, CustomStringConvertible, Comparable {
    public let host: String
    public let port: Int?

    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        guard let port else { return h }
        return "\(h):\(port)"
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
        if raw.contains("/") { throw refuse("'/' is only allowed in a URL (https://host/path)") }
        try self.init(authority: raw, defaultPort: 443, refuse: refuse)
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
        if description.utf8.count > ServiceKey.maxLength + 8 { throw refuse("it is too long") }
    }

}
