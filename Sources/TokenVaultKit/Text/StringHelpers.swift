import FoundationEssentials

extension StringProtocol {
    /// Without leading and trailing white space and line breaks.
    public func trimmedWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0.isWhitespace || $0.isNewline }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }

    /// Without leading and trailing spaces and tabs (line breaks kept).
    public func trimmedSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}

extension Double {
    /// "3", "0.5": seconds for messages, without Foundation's number formatting.
    public var shortText: String { self == rounded() ? String(Int(self)) : String(self) }
}

extension String {
    /// Padded with spaces to `width` characters (never cut): table columns.
    public func padded(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }

    /// Without leading and trailing line breaks.
    public func trimmedNewlines() -> String {
        guard let first = firstIndex(where: { !$0.isNewline }), let last = lastIndex(where: { !$0.isNewline }) else {
            return ""
        }
        return String(self[first...last])
    }
}
