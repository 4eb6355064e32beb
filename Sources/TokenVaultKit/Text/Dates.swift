import FoundationEssentials

/// RFC 3339 times (FoundationEssentials' ISO 8601 style, UTC).
public enum RFC3339 {
    public static func format(_ unix: Int64) -> String {
        Date(timeIntervalSince1970: TimeInterval(unix)).formatted(Date.ISO8601FormatStyle())
    }

    /// Seconds since the epoch, with or without fractional seconds; nil when it is not one.
    public static func parse(_ s: String) -> Double? {
        for style in [Date.ISO8601FormatStyle(includingFractionalSeconds: true), Date.ISO8601FormatStyle()] {
            if let d = try? style.parse(s) { return d.timeIntervalSince1970 }
        }
        return nil
    }
}

/// Times and durations for humans.
public enum Format {
    /// "3m", "2h 5m", "4d 1h": for humans.
    public static func ago(_ seconds: Int64) -> String {
        let s = max(seconds, 0)
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m" }
        if s < 86400 { return "\(s / 3600)h \(s % 3600 / 60)m" }
        return "\(s / 86400)d \(s % 86400 / 3600)h"
    }

    /// "expires in 2h 5m", "expired 3m ago" or "never expires": a token's
    /// expiry as the verb of a sentence.
    public static func expires(_ at: Int64?, now: Int64) -> String {
        guard let at else { return "never expires" }
        return at > now ? "expires in \(ago(at - now))" : "expired \(ago(now - at)) ago"
    }

    /// "1 credential", "2 credentials".
    public static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }

    /// "a", "a and b", "a, b and c"; with `or`, "a, b or c".
    public static func list(_ items: [String], _ conjunction: String = "and") -> String {
        items.count < 2 ? items.joined() : items.dropLast().joined(separator: ", ") + " \(conjunction) " + items.last!
    }

    /// "in 2h 5m" or "expired 3m ago": a moment (unix seconds) seen from `now`.
    public static func until(_ at: Int64, now: Int64) -> String {
        at > now ? "in \(ago(at - now))" : "expired \(ago(now - at)) ago"
    }

    public static func expiry(_ c: Credential, now: Int64) -> String {
        c.expiresAt.map { until($0, now: now) } ?? "never"
    }

    /// When the refresh token dies, for humans; nil without one or an estimate.
    public static func refreshExpiry(_ c: Credential, now: Int64) -> String? {
        guard c.refreshToken != nil, let at = c.refreshExpiresAt else { return nil }
        return until(at, now: now)
    }

    public static func date(_ unix: Int64) -> String {
        RFC3339.format(unix)
    }
}
