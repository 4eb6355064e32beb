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
