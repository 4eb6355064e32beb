import FoundationEssentials
import Glibc

/// Where a provider's endpoints may point (docs/security.md, "Endpoints a
/// resource leads to"): https, or http to this machine only; and from a
/// remote resource, never to this machine at all.
extension OAuth2Provider {
    /// https, or http only to loopback: an IP literal in 127.0.0.0/8, ::1, or
    /// exactly `localhost`. A name that merely starts with "127." can resolve
    /// anywhere (127.evil.example), so names are not looked at.
    static func checkEndpoint(_ url: String, provider: String, key: String, configPath: String) throws {
        guard !isSafeEndpoint(url) else { return }
        throw TokenVaultError.config(
            "provider \(provider): \(key) must be an https:// URL (http:// only for loopback), not \(Quoted.text(url))",
            hint: "fix \(key) in [providers.\(Config.tableKey(provider))] of \(configPath)")
    }

    /// `resource` as RFC 8707 §2 wants it: an absolute https URL (http to
    /// loopback) without a fragment; anything else is 78.
    static func checkedResource(_ value: String, provider: String, configPath: String) throws -> String {
        try checkEndpoint(value, provider: provider, key: "resource", configPath: configPath)
        guard !value.contains("#") else {
            throw TokenVaultError.config(
                "provider \(provider): resource must not have a fragment (RFC 8707), not \(Quoted.text(value))",
                hint: "fix resource in [providers.\(Config.tableKey(provider))] of \(configPath)")
        }
        return value
    }

    /// Whether `url` may receive a token or a code: https, or http to loopback.
    public static func isSafeEndpoint(_ url: String) -> Bool {
        let lower = url.lowercased()
        if lower.hasPrefix("https://") { return true }
        if lower.hasPrefix("http://"), let host = try? ServiceKey(parsing: url).host { return isLoopback(host) }
        return false
    }

    /// An endpoint a protected resource at `resource` leads to (its metadata,
    /// its authorization server and that server's endpoints): https, or plain
    /// http on loopback only when the resource itself is on loopback, so that
    /// a remote resource cannot send tokenvault to a port on this machine
    /// (docs/security.md).
    /// The rule holds whatever the scheme: a remote resource cannot lead to
    /// `https://localhost:PORT` either.
    static func isSafeEndpoint(_ url: String, reachedFrom resource: String) -> Bool {
        guard let from = try? ServiceKey(parsing: resource).host, let to = try? ServiceKey(parsing: url).host else {
            return false
        }
        if isLoopback(to), !isLoopback(from) { return false }
        if url.lowercased().hasPrefix("https://") { return true }
        return isLoopback(from) && isSafeEndpoint(url)
    }

    /// A name or address of this machine: localhost (and `*.localhost`,
    /// RFC 6761), 127.0.0.0/8 in any form a resolver takes (`127.1`, a
    /// decimal number), 0.0.0.0, ::1, ::, and IPv4-mapped forms of those.
    static func isLoopback(_ host: String) -> Bool {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        var v4 = in_addr()
        if inet_aton(name, &v4) != 0 {
            let a = UInt32(bigEndian: v4.s_addr)
            return a >> 24 == 127 || a == 0
        }
        var v6 = in6_addr()
        let bare = name.hasPrefix("[") && name.hasSuffix("]") ? String(name.dropFirst().dropLast()) : name
        if inet_pton(AF_INET6, bare, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { b in
                let zeros = b.prefix(15).allSatisfy { $0 == 0 }
                let mapped = b.prefix(10).allSatisfy { $0 == 0 } && b[10] == 0xFF && b[11] == 0xFF
                return (zeros && (b[15] == 1 || b[15] == 0))
                    || (mapped && (b[12] == 127 || b[12...15].allSatisfy { $0 == 0 }))
            }
        }
        return false
    }
}
