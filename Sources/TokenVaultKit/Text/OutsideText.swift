import Dispatch
import FoundationEssentials
import Glibc

/// Text that came from outside — a provider's answer, a discovery document,
/// an etcd member — made fit for a terminal where it enters, so no printing
/// path has to remember (docs/security.md, "Text from outside").
public enum OutsideText {
    /// One line: every secret that was sent replaced (as sent, and
    /// form-encoded); C0, DEL, C1, format characters (bidi overrides,
    /// zero-width) and line or paragraph separators become spaces, so no
    /// escape sequence or reordering reaches the terminal; at most `limit`
    /// characters.
    public static func line(_ s: String, redacting secrets: [String] = [], limit: Int = 200) -> String {
        var text = s
        for secret in secrets where secret.count >= 4 {
            for form in Set([secret, FormEncoding.percentEncode(secret)]) {
                text = text.replacing(form, with: "[redacted]")
            }
        }
        let flat = String(String.UnicodeScalarView(text.unicodeScalars.map { isUnsafe($0) ? " " : $0 }))
        return flat.count > limit ? String(flat.prefix(limit)) + "…" : flat
    }

    /// Whether a character must not reach a terminal as it is.
    static func isUnsafe(_ c: Unicode.Scalar) -> Bool {
        if c.value < 0x20 || (0x7F...0x9F).contains(c.value) { return true }
        switch c.properties.generalCategory {
        case .format, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }

    /// An http(s) URL from outside, parsed and written out again: scheme and
    /// host lower-cased, every character outside printable ASCII in the path,
    /// query or fragment percent-encoded (a bidi override or a line separator
    /// is shown as `%E2%80%AE`, never acted on by the terminal). Nil — the
    /// caller refuses it — for anything else: another scheme, no host, a
    /// user name before the host (`https://bank.example@evil.example/`), a
    /// host that is not plain ASCII, white space or a control character
    /// anywhere, more than 4 KiB.
    public static func url(_ s: String) -> String? {
        guard s.utf8.count <= 4096,
            !s.unicodeScalars.contains(where: { $0.value <= 0x20 || (0x7F...0x9F).contains($0.value) })
        else { return nil }
        var ascii = ""
        for scalar in s.unicodeScalars {
            if scalar.isASCII {
                ascii.unicodeScalars.append(scalar)
            } else {
                for byte in String(scalar).utf8 { ascii += "%" + Hex.encode([byte]).uppercased() }
            }
        }
        guard let c = URLComponents(string: ascii), let scheme = c.scheme?.lowercased(),
            scheme == "https" || scheme == "http",
            let host = c.percentEncodedHost, !host.isEmpty, !host.contains("%"), c.percentEncodedUser == nil,
            c.percentEncodedPassword == nil
        else { return nil }
        // The authority is what came before the first "/", "?" or "#": an "@" in it is a user name.
        let rest = ascii.dropFirst(scheme.count + 3)
        guard ascii.lowercased().hasPrefix(scheme + "://"), !rest.prefix(while: { !"/?#".contains($0) }).contains("@")
        else { return nil }
        var out = URLComponents()
        out.scheme = scheme
        out.percentEncodedHost = host.lowercased()
        out.port = c.port
        out.percentEncodedPath = c.percentEncodedPath
        out.percentEncodedQuery = c.percentEncodedQuery
        out.percentEncodedFragment = c.percentEncodedFragment
        return out.string
    }
}
