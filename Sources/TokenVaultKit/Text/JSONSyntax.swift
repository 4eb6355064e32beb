import Dispatch
import FoundationEssentials
import Glibc

/// The one JSON reader for what arrives from outside (docs/design.md, "JSON
/// from outside"): a strict RFC 8259 parser that builds `JSONValue` in one
/// pass, in time linear in the text's size, nested at most `maxDepth` deep
/// (recursion bounded, so a 2 KB text of brackets cannot exhaust a thread's
/// stack), and says where a text first goes wrong (line, column, what).
/// Foundation's JSONDecoder, which this replaces for such text, recursed
/// about 3 KB of stack per level and took time quadratic in the nesting.
public enum JSONSyntax {
    public struct Problem: Error, Equatable {
        public var line: Int
        public var column: Int
        public var what: String
    }

    /// Deeper than any token answer, MCP message or record needs.
    public static let maxDepth = 64

    /// How a parse treats what RFC 8259 leaves open.
    public struct Rules: Sendable {
        /// A key twice in one object: refused (for a file tokenvault rewrites,
        /// where a client would read the last and a rewrite keep one), else the last wins.
        public var refuseDuplicateKeys = false
        /// An integer beyond Int64: refused (it would be rounded when written back).
        public var refuseInexactIntegers = false
        public var maxDepth = JSONSyntax.maxDepth
        /// What RFC 8259 allows but tokenvault would not read back the same
        /// way, taken as far as it can be: an unpaired surrogate escape (read
        /// as U+FFFD), a number beyond a double (read as its text). For what
        /// is only passed on (the MCP bridge's messages), whose bytes are
        /// forwarded as they came.
        public var passThrough = false
        public init() {}

        /// The rules for text tokenvault only passes on: any RFC 8259 text,
        /// nested up to 512 deep (recursion still bounded).
        public static var passingOn: Rules {
            var r = Rules()
            r.passThrough = true
            r.maxDepth = 512
            return r
        }
    }

    /// The value of `bytes`; throws `Problem` for anything that is not one JSON value.
    public static func parse<Bytes: Collection>(_ bytes: Bytes, rules: Rules = Rules()) throws -> JSONValue
    where Bytes.Element == UInt8 {
        let result = bytes.withContiguousStorageIfAvailable { buffer in
            Result { try parseBuffer(buffer, rules: rules) }
        }
        if let result { return try result.get() }
        return try Array(bytes).withUnsafeBufferPointer { try parseBuffer($0, rules: rules) }
    }

    private static func parseBuffer(_ buffer: UnsafeBufferPointer<UInt8>, rules: Rules) throws -> JSONValue {
        var scanner = Scanner(bytes: buffer, rules: rules)
        scanner.skipSpace()
        let value = try scanner.value(depth: 0)
        scanner.skipSpace()
        if scanner.at < buffer.count { throw scanner.problem("more after the end of the JSON value") }
        return value
    }

    /// The first syntax error of `text`, or nil when it is valid JSON.
    public static func firstProblem(_ text: String) -> Problem? {
        do {
            _ = try parse(Array(text.utf8))
            return nil
        } catch {
            return error as? Problem
        }
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        let rules: Rules
        var at = 0

        init(bytes: UnsafeBufferPointer<UInt8>, rules: Rules) {
            self.bytes = bytes
            self.rules = rules
        }

        func problem(_ what: String) -> Problem {
            var line = 1, column = 1
            for b in bytes[..<min(at, bytes.count)] {
                if b == 0x0A {
                    line += 1
                    column = 1
                } else if b & 0xC0 != 0x80 {
                    column += 1
                }
            }
            return Problem(line: line, column: column, what: what)
        }

        var current: UInt8? { at < bytes.count ? bytes[at] : nil }

        mutating func skipSpace() {
            while at < bytes.count {
                let c = bytes[at]
                guard c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D else { return }
                at += 1
            }
        }

        mutating func expect(_ c: UInt8, _ what: String) throws {
            guard current == c else { throw problem(what) }
            at += 1
        }

        mutating func value(depth: Int) throws -> JSONValue {
            switch current {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "-")?, (UInt8(ascii: "0")...UInt8(ascii: "9"))?: return try number()
            case UInt8(ascii: "t"):
                try word("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try word("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try word("null")
                return .null
            case nil: throw problem("the text ends where a value should be")
            case UInt8(ascii: "'"): throw problem("strings take double quotes, not single")
            default: throw problem("a value should be here (text takes double quotes)")
            }
        }

        mutating func object(depth: Int) throws -> JSONValue {
            guard depth <= rules.maxDepth else { throw problem("nested more than \(rules.maxDepth) deep") }
            at += 1
            skipSpace()
            var members: [String: JSONValue] = [:]
            if current == UInt8(ascii: "}") {
                at += 1
                return .object(members)
            }
            while true {
                guard current == UInt8(ascii: "\"") else { throw problem("a key in double quotes should be here") }
                let keyAt = at
                let key = try string()
                skipSpace()
                try expect(UInt8(ascii: ":"), "':' should follow the key")
                skipSpace()
                let member = try value(depth: depth)
                if members.updateValue(member, forKey: key) != nil, rules.refuseDuplicateKeys {
                    at = keyAt
                    throw problem("the key \(Quoted.text(key)) is given twice")
                }
                skipSpace()
                if current == UInt8(ascii: ",") {
                    at += 1
                    skipSpace()
                    continue
                }
                try expect(UInt8(ascii: "}"), "',' or '}' should be here")
                return .object(members)
            }
        }

        mutating func array(depth: Int) throws -> JSONValue {
            guard depth <= rules.maxDepth else { throw problem("nested more than \(rules.maxDepth) deep") }
            at += 1
            skipSpace()
            var items: [JSONValue] = []
            if current == UInt8(ascii: "]") {
                at += 1
                return .array(items)
            }
            while true {
                items.append(try value(depth: depth))
                skipSpace()
                if current == UInt8(ascii: ",") {
                    at += 1
                    skipSpace()
                    continue
                }
                try expect(UInt8(ascii: "]"), "',' or ']' should be here")
                return .array(items)
            }
        }

        mutating func hex4() throws -> UInt32 {
            var v: UInt32 = 0
            for _ in 0..<4 {
                guard let h = current else { throw problem("\\u needs four hex digits") }
                let digit: UInt32
                switch h {
                case 0x30...0x39: digit = UInt32(h - 0x30)
                case 0x41...0x46: digit = UInt32(h - 0x41 + 10)
                case 0x61...0x66: digit = UInt32(h - 0x61 + 10)
                default: throw problem("\\u needs four hex digits")
                }
                v = v << 4 | digit
                at += 1
            }
            return v
        }

        mutating func string() throws -> String {
            at += 1
            let start = at
            // The common case: no escape, so the bytes are the string.
            while at < bytes.count {
                let c = bytes[at]
                if c == UInt8(ascii: "\"") {
                    let text = String(validating: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
                    guard let text else { throw problem("a string that is not UTF-8") }
                    at += 1
                    return text
                }
                if c == UInt8(ascii: "\\") || c < 0x20 { break }
                at += 1
            }
            var out = Array(bytes[start..<at])
            while let c = current {
                switch c {
                case UInt8(ascii: "\""):
                    at += 1
                    guard let text = String(validating: out, as: UTF8.self) else {
                        throw problem("a string that is not UTF-8")
                    }
                    return text
                case UInt8(ascii: "\\"):
                    at += 1
                    guard let e = current else { break }
                    at += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        let unpaired = "a \\u escape of half a character (an unpaired surrogate)"
                        if (0xD800..<0xDC00).contains(scalar) {
                            if current == UInt8(ascii: "\\"), at + 1 < bytes.count, bytes[at + 1] == UInt8(ascii: "u") {
                                let mark = at
                                at += 2
                                let low = try hex4()
                                if (0xDC00..<0xE000).contains(low) {
                                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                                } else if rules.passThrough {
                                    (scalar, at) = (0xFFFD, mark)
                                } else {
                                    throw problem(unpaired)
                                }
                            } else if rules.passThrough {
                                scalar = 0xFFFD
                            } else {
                                throw problem(unpaired)
                            }
                        } else if (0xDC00..<0xE000).contains(scalar) {
                            guard rules.passThrough else { throw problem(unpaired) }
                            scalar = 0xFFFD
                        }
                        out.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
                    default:
                        at -= 1
                        throw problem("an unknown escape in a string")
                    }
                case 0..<0x20: throw problem("a control character (a line break?) inside a string")
                default:
                    out.append(c)
                    at += 1
                }
            }
            throw problem("the text ends inside a string (a missing '\"')")
        }

        mutating func number() throws -> JSONValue {
            let start = at
            var integral = true
            if current == UInt8(ascii: "-") { at += 1 }
            func digits(_ s: inout Scanner) throws {
                guard let c = s.current, (0x30...0x39).contains(c) else { throw s.problem("a digit should be here") }
                while let c = s.current, (0x30...0x39).contains(c) { s.at += 1 }
            }
            if current == UInt8(ascii: "0") { at += 1 } else { try digits(&self) }
            if current == UInt8(ascii: ".") {
                at += 1
                integral = false
                try digits(&self)
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                at += 1
                integral = false
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { at += 1 }
                try digits(&self)
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
            if integral {
                if let i = Int64(text) { return .integer(i) }
                if rules.refuseInexactIntegers {
                    at = start
                    throw problem("the integer \(text) is beyond 64 bits and would be rounded")
                }
            }
            guard let d = Double(text), d.isFinite else {
                if rules.passThrough { return .string(text) }
                at = start
                throw problem("a number too large for a double")
            }
            // As Foundation reads a JSONValue: a whole number that fits is an integer (1.0, 1e3).
            if !integral, d == d.rounded(), abs(d) < 9.2e18 { return .integer(Int64(d)) }
            return .number(d)
        }

        mutating func word(_ w: StaticString) throws {
            let start = at
            let literal = UnsafeBufferPointer(start: w.utf8Start, count: w.utf8CodeUnitCount)
            for b in literal {
                guard current == b else {
                    at = start
                    throw problem("a value should be here (text takes double quotes)")
                }
                at += 1
            }
        }
    }
}

extension JSONValue {
    /// `bytes` read as one JSON value by `JSONSyntax` (linear, at most
    /// `JSONSyntax.maxDepth` deep); nil when it is not one. What arrives from
    /// a server, a file or a socket is read this way, never with JSONDecoder.
    public static func parsed<Bytes: Collection>(_ bytes: Bytes) -> JSONValue? where Bytes.Element == UInt8 {
        try? JSONSyntax.parse(bytes)
    }

    /// `parsed`, when the value is an object: its members.
    public static func parsedObject<Bytes: Collection>(_ bytes: Bytes) -> [String: JSONValue]?
    where Bytes.Element == UInt8 {
        if case .object(let o)? = parsed(bytes) { return o }
        return nil
    }
}
