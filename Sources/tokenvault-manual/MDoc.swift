import Foundation

/// An mdoc(7) source being written: macro lines, escaped text lines, and the
/// discussion convention (blank line between paragraphs, two-space indented
/// paragraphs are literal blocks). It never writes an empty line, and every
/// character that roff would turn into something else is escaped, so what a
/// reader copies from the rendered page is what they can type.
struct MDoc {
    private(set) var lines: [String] = []

    /// A macro line: `.Sh NAME`. Arguments are escaped words (see `word`).
    mutating func macro(_ name: String, _ arguments: String...) {
        lines.append((["." + name] + arguments).joined(separator: " "))
    }

    /// Running text: one sentence per line, as mdoc wants (it ends a
    /// sentence only at the end of a line, and spaces it accordingly).
    mutating func text(_ text: String) {
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            for sentence in MDoc.sentences(line.trimmingSpaces()) {
                lines.append(MDoc.escapeLine(MDoc.unhyphenated(sentence)))
            }
        }
    }

    /// Splits after `.`, `?` or `!` (and any closing `)`, `"`, `]`) followed by
    /// a space: where mandoc would see a sentence end in mid-line.
    static func sentences(_ line: String) -> [String] {
        var result: [String] = []
        var current = ""
        var chars = Array(line)[...]
        while let c = chars.popFirst() {
            current.append(c)
            guard ".?!".contains(c) else { continue }
            while let next = chars.first, ")\"]".contains(next) {
                current.append(next)
                chars.removeFirst()
            }
            if chars.first == " " {
                while chars.first == " " { chars.removeFirst() }
                result.append(current)
                current = ""
            }
        }
        if !current.isEmpty { result.append(current) }
        return result
    }

    /// A literal block, indented, lines kept as they are.
    mutating func literal(_ block: [Substring]) {
        macro("Bd", "-literal", "-offset", "indent")
        for line in block { lines.append(MDoc.escapeLine(String(line))) }
        macro("Ed")
    }

    /// Paragraphs and literal blocks. No `.Pp` next to a display or list:
    /// those bring their own space.
    mutating func discussion(_ source: String) {
        var previousWasText = false
        for block in MDoc.blocks(source) {
            let isLiteral = block.allSatisfy { $0.hasPrefix("  ") }
            if isLiteral {
                literal(block.map { $0.dropFirst(2) })
                previousWasText = false
            } else {
                if previousWasText { macro("Pp") }
                text(block.map { $0.trimmingSpaces() }.joined(separator: " "))
                previousWasText = true
            }
        }
    }

    /// Blocks of non-blank lines.
    static func blocks(_ text: String) -> [[Substring]] {
        var blocks: [[Substring]] = [[]]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.allSatisfy({ $0 == " " }) {
                if !blocks[blocks.count - 1].isEmpty { blocks.append([]) }
            } else {
                blocks[blocks.count - 1].append(line)
            }
        }
        return blocks.filter { !$0.isEmpty }
    }

    /// A macro argument: escaped, quoted when it holds a space, and guarded
    /// with `\&` where mdoc would read it as a macro name or a delimiter.
    static func word(_ s: String) -> String {
        let escaped = escape(s)
        if s.contains(" ") { return "\"" + escaped.replacingOccurrences(of: "\"", with: "\\(dq") + "\"" }
        let isMacroName = s.count == 2 && s.first!.isUppercase && s.last!.isLowercase
        let isDelimiter = s.count == 1 && ".,:;()[]?!|".contains(s)
        return isMacroName || isDelimiter ? "\\&" + escaped : escaped
    }

    /// Host names, paths, option and variable names must not be hyphenated
    /// when the text is filled: `\%` before each word that is more than
    /// letters and punctuation. (mdoc turns hyphenation back on at every paragraph, so a
    /// global `.nh` would not last.) Escaped later, so marked with U+E000.
    static func unhyphenated(_ sentence: String) -> String {
        sentence.split(separator: " ", omittingEmptySubsequences: false).map { word in
            let core = word.drop { "(\"".contains($0) }.reversed().drop { "),.;:\"".contains($0) }
            return core.allSatisfy(\.isLetter) ? String(word) : "\u{E000}" + word
        }.joined(separator: " ")
    }

    /// A text line: escaped, and never starting with a control character.
    static func escapeLine(_ s: String) -> String {
        let escaped = escape(s)
        return escaped.hasPrefix(".") || escaped.hasPrefix("'") || escaped.hasPrefix(" ") ? "\\&" + escaped : escaped
    }

    /// Characters roff would change: `\`, `-` (a hyphen, not the ASCII minus
    /// that command lines need), quotes and `~`/`^` (typographic in UTF-8
    /// output), and anything beyond ASCII (as `\[uXXXX]`).
    static func escape(_ s: String) -> String {
        var out = ""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\\": out += "\\e"
            case "\u{E000}": out += "\\%"
            case "-": out += "\\-"
            case "'": out += "\\(aq"
            case "`": out += "\\(ga"
            case "~": out += "\\(ti"
            case "^": out += "\\(ha"
            default:
                if scalar.isASCII {
                    out.unicodeScalars.append(scalar)
                } else {
                    out += "\\[u" + hex4(scalar.value) + "]"
                }
            }
        }
        return out
    }

    private static func hex4(_ v: UInt32) -> String {
        let h = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - h.count)) + h
    }

    var rendered: String { lines.joined(separator: "\n") + "\n" }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
