import Dispatch
import FoundationEssentials
import Glibc
internal import TOMLKit

/// Where things are in a config file's text, for messages that name
/// `file:line`: TOMLKit reports positions only for syntax errors, so a
/// table's header and a key's line are found in the text.
struct ConfigText {
    let path: String
    let lines: [Substring]

    init(_ text: String, path: String) {
        self.path = path
        lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    }

    /// `path:line` of `key` in the table `table` (dotted, e.g. `providers.local`;
    /// empty for the top level); the table's header line when the key is not
    /// found on a line of its own; the file alone when neither is.
    func location(table: [String], key: String?) -> String {
        line(table: table, key: key).map { "\(path):\($0)" } ?? path
    }

    func line(table: [String], key: String?) -> Int? {
        var start = 0
        var header: Int?
        if !table.isEmpty {
            guard let h = lines.firstIndex(where: { Self.header(of: $0) == table }) else { return nil }
            header = h
            start = h + 1
        }
        guard let key else { return header.map { $0 + 1 } }
        var i = start
        while i < lines.count, Self.header(of: lines[i]) == nil {
            if Self.key(of: lines[i]) == key { return i + 1 }
            i += 1
        }
        return header.map { $0 + 1 }
    }

    /// The key path of a `[table]` header line, unquoted; nil for any other line.
    static func header(of line: Substring) -> [String]? {
        let t = line.trimmedSpaces()
        guard t.hasPrefix("["), !t.hasPrefix("[["), let close = t.lastIndex(of: "]") else { return nil }
        return splitKey(String(t[t.index(after: t.startIndex)..<close]))
    }

    /// The (first part of the) key a `key = value` line sets; nil for any other line.
    static func key(of line: Substring) -> String? {
        let t = line.trimmedSpaces()
        guard !t.hasPrefix("#"), !t.hasPrefix("["), let eq = t.firstIndex(of: "=") else { return nil }
        return splitKey(String(t[..<eq])).first
    }

    /// A dotted TOML key, split outside quotes, each part unquoted and trimmed.
    static func splitKey(_ s: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var quote: Character?
        for c in s {
            if let q = quote {
                if c == q { quote = nil } else { current.append(c) }
            } else if c == "\"" || c == "'" {
                quote = c
            } else if c == "." {
                parts.append(current.trimmedSpaces())
                current = ""
            } else {
                current.append(c)
            }
        }
        parts.append(current.trimmedSpaces())
        return parts
    }

    /// A TOML syntax error: `file:line:column: what`, the line itself and a
    /// caret under the column, and a hint.
    /// A line that mentions a secret (`client_secret`, `consumer_secret`,
    /// `password_…`, a passphrase) is shown up to its `=` only, and a quoted
    /// part of the parser's words other than the key is left out: a syntax
    /// error never prints a secret value (docs/security.md).
    func syntaxError(line: Int, column: Int, description: String) -> TokenVaultError {
        var source = line >= 1 && line <= lines.count ? String(lines[line - 1]) : ""
        var what = description
        if description.contains("control character"), source.filter({ $0 == "\"" }).count % 2 == 1 {
            what = "a string is not closed on this line (\(description))"
        }
        var under = column
        if Self.mayHoldSecret(source) {
            let key = source.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            source = key.hasSuffix(" ") ? key + "= …" : key + " = …"
            under = source.count
            what = Self.withoutQuotedValues(what, key: key)
            what += " (the value is not shown: it may be a secret)"
        }
        let shown = OutsideText.line(source, limit: 120)
        let caret = String(repeating: " ", count: max(0, min(under - 1, shown.count))) + "^"
        return .configDetail(
            "\(path):\(line):\(column): \(what)", excerpt: [shown, caret],
            hint: "fix line \(line) of \(path); every command that reads the config stops until it is fixed")
    }
}

extension ConfigText {
    /// The words naming a setting that holds a secret, or its source.
    static let secretWords = ["secret", "password", "passphrase"]

    static func mayHoldSecret(_ line: String) -> Bool {
        let lower = line.lowercased()
        return secretWords.contains { lower.contains($0) }
    }

    /// `text` with each '…' part that is not `key`'s own name left out.
    static func withoutQuotedValues(_ text: String, key: String) -> String {
        let name = key.trimmedSpaces().split(separator: ".").last.map {
            String($0.filter { $0 != "\"" && $0 != "'" }).trimmedSpaces()
        }
        var out = ""
        var quoted: String?
        for c in text {
            if var q = quoted {
                if c == "'" {
                    out += q == name ? "'\(q)'" : "'…'"
                    quoted = nil
                } else {
                    q.append(c)
                    quoted = q
                }
            } else if c == "'" {
                quoted = ""
            } else {
                out.append(c)
            }
        }
        if quoted != nil { out += "'…" }
        return out
    }
}

/// Words for a setting's type in messages, with an example of a right value.
enum ConfigType {
    /// True when a TOML value can be decoded as `type` (an optional of a
    /// string, whole number, bool, array of strings or table of strings).
    static func holds(_ value: TOMLValueConvertible, as type: Any.Type) -> Bool {
        switch type {
        case is [String]?.Type, is [String].Type:
            guard let a = value.array else { return false }
            return a.allSatisfy { $0.type == .string }
        case is [String: String]?.Type, is [String: String].Type:
            guard let t = value.table else { return false }
            return t.allSatisfy { $0.1.type == .string }
        case is Int?.Type, is Int.Type: return value.type == .int
        case is Bool?.Type, is Bool.Type: return value.type == .bool
        case is String?.Type, is String.Type: return value.type == .string
        default: return true  // the decoder decides
        }
    }

    static func describe(_ type: Any.Type, key: String) -> String {
        switch type {
        case is [String].Type, is [String]?.Type: "an array of strings, e.g. \(key) = [\"a\", \"b\"]"
        case is [String: String].Type, is [String: String]?.Type:
            "a table of strings, e.g. \(key) = { name = \"value\" }"
        case is Int.Type, is Int?.Type, is Int64.Type, is Int64?.Type: "a whole number, e.g. \(key) = 30"
        case is Bool.Type, is Bool?.Type: "true or false, e.g. \(key) = true"
        case is String.Type, is String?.Type: "a string, e.g. \(key) = \"value\""
        default: "a \(type)"
        }
    }
}
