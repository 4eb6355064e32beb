/// Text someone typed, quoted for a message: in single quotes, at most 80
/// characters, with everything a terminal would act on written as an escape
/// (`\x1B`, `\u{202E}`), so a message never carries it as it is.
public enum Quoted {
    public static func text(_ s: String) -> String {
        var out = "'"
        for scalar in s.unicodeScalars.prefix(80) {
            switch scalar {
            case "'": out += "\\'"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                out += "\\x" + Hex.encode([UInt8(truncatingIfNeeded: scalar.value)]).uppercased()
            case _ where OutsideText.isUnsafe(scalar):
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        if s.unicodeScalars.count > 80 { out += "…" }
        return out + "'"
    }
}
