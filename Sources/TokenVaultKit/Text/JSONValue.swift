import Dispatch
import FoundationEssentials
import Glibc

/// A JSON value kept as it came, for a record's extra fields (`uid`, `screen_name`, …).
public enum JSONValue: Hashable, Sendable, Codable {
    case string(String)
    case number(Double)
    case integer(Int64)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int64.self) {
            self = .integer(i)
        } else if let d = try? c.decode(Double.self) {
            self = .number(d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .string(let s): try c.encode(s)
        case .number(let d): try c.encode(d)
        case .integer(let i): try c.encode(i)
        case .bool(let b): try c.encode(b)
        case .null: try c.encodeNil()
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    /// The value as one line of text, as `get --field` prints it.
    public var text: String {
        switch self {
        case .string(let s): return s
        case .integer(let i): return String(i)
        case .number(let d): return d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
        case .bool(let b): return b ? "true" : "false"
        case .null: return ""
        case .array, .object:
            let data = (try? JSONEncoder.sorted.encode(self)) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }
    }

    /// An integer, also from a string of digits or a whole double (providers send all three).
    public var int64: Int64? {
        switch self {
        case .integer(let i): return i
        case .number(let d): return d.isFinite && d == d.rounded() && abs(d) < 9e15 ? Int64(d) : nil
        case .string(let s): return Int64(s.trimmedSpaces())
        default: return nil
        }
    }

    public var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// A member of an object; nil for anything else.
    public subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }
}

extension JSONEncoder {
    static var sorted: JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }
}

extension JSONValue {
    /// Indented, keys sorted: JSON for a person at a terminal.
    public static var prettyEncoder: JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        return e
    }
}
