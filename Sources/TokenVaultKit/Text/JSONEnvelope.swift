import FoundationEssentials

/// A JSON text read for its top level alone (docs/adapters.md, "MCP
/// servers"): the whole of it checked to be RFC 8259 JSON (any text the
/// RFC allows: an unpaired surrogate escape, a number beyond a double, any
/// depth), without recursion, and the byte range of each member of its top
/// object — or of each object of its top array. What is only passed on is
/// never decoded, so nothing in it is limited but its size.
public enum JSONEnvelope {
    /// The members of each top-level object, by key, as byte ranges of
    /// `bytes`, and whether they came in an array (a batch); nil when `bytes`
    /// is not one JSON text whose top level is an object or a non-empty
    /// array of objects.
    public static func members(_ bytes: [UInt8]) -> (batch: Bool, objects: [[String: Range<Int>]])? {
        guard String(validating: bytes, as: UTF8.self) != nil else { return nil }
        var s = Scan(b: bytes)
        s.space()
        var out: [[String: Range<Int>]] = []
        let batch = s.peek == UInt8(ascii: "[")
        if batch {
            s.i += 1
            s.space()
            guard s.peek != UInt8(ascii: "]") else { return nil }
            while true {
                guard let object = s.object() else { return nil }
                out.append(object)
                s.space()
                if s.take(UInt8(ascii: ",")) {
                    s.space()
                    continue
                }
                guard s.take(UInt8(ascii: "]")) else { return nil }
                break
            }
        } else {
            guard let object = s.object() else { return nil }
            out.append(object)
        }
        s.space()
        return s.i == bytes.count ? (batch, out) : nil
    }

    private struct Scan {
        let b: [UInt8]
        var i = 0

        var peek: UInt8? { i < b.count ? b[i] : nil }

        mutating func take(_ c: UInt8) -> Bool {
            guard peek == c else { return false }
            i += 1
            return true
        }

        mutating func space() {
            while let c = peek, c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { i += 1 }
        }

        /// One top-level object: each member's key and the range of its value.
        mutating func object() -> [String: Range<Int>]? {
            guard take(UInt8(ascii: "{")) else { return nil }
            var members: [String: Range<Int>] = [:]
            space()
            if take(UInt8(ascii: "}")) { return members }
            while true {
                let keyStart = i
                guard string(), case .string(let key)? = try? JSONSyntax.parse(b[keyStart..<i], rules: .passingOn)
                else { return nil }
                space()
                guard take(UInt8(ascii: ":")) else { return nil }
                space()
                let start = i
                guard value() else { return nil }
                members[key] = start..<i
                space()
                if take(UInt8(ascii: ",")) {
                    space()
                    continue
                }
                return take(UInt8(ascii: "}")) ? members : nil
            }
        }

        /// Skips one value, of any depth, with a stack of its own.
        mutating func value() -> Bool {
            var open: [UInt8] = []
            while true {
                space()
                guard let c = peek else { return false }
                var done = true
                switch c {
                case UInt8(ascii: "{"):
                    i += 1
                    space()
                    if take(UInt8(ascii: "}")) { break }
                    guard member() else { return false }
                    open.append(c)
                    done = false
                case UInt8(ascii: "["):
                    i += 1
                    space()
                    if take(UInt8(ascii: "]")) { break }
                    open.append(c)
                    done = false
                case UInt8(ascii: "\""):
                    guard string() else { return false }
                case UInt8(ascii: "t"): guard word("true") else { return false }
                case UInt8(ascii: "f"): guard word("false") else { return false }
                case UInt8(ascii: "n"): guard word("null") else { return false }
                default: guard number() else { return false }
                }
                guard done else { continue }
                // After a value: close what ends here, or go on to the next element or member.
                while true {
                    space()
                    guard let top = open.last else { return true }
                    if take(UInt8(ascii: ",")) {
                        if top == UInt8(ascii: "{") {
                            space()
                            guard member() else { return false }
                        }
                        break
                    }
                    guard take(top == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { return false }
                    open.removeLast()
                }
            }
        }

        /// A member's key and its colon.
        mutating func member() -> Bool {
            guard string() else { return false }
            space()
            return take(UInt8(ascii: ":"))
        }

        mutating func word(_ w: StaticString) -> Bool {
            let bytes = UnsafeBufferPointer(start: w.utf8Start, count: w.utf8CodeUnitCount)
            guard i + bytes.count <= b.count, Array(b[i..<(i + bytes.count)]) == Array(bytes) else { return false }
            i += bytes.count
            return true
        }

        /// A string: its escapes well formed (`\uXXXX` of any value), no control character.
        mutating func string() -> Bool {
            guard take(UInt8(ascii: "\"")) else { return false }
            while let c = peek {
                i += 1
                switch c {
                case UInt8(ascii: "\""): return true
                case UInt8(ascii: "\\"):
                    guard let e = peek else { return false }
                    i += 1
                    if e == UInt8(ascii: "u") {
                        guard i + 4 <= b.count, b[i..<(i + 4)].allSatisfy(\.isHexDigit) else { return false }
                        i += 4
                    } else if !Array("\"\\/bfnrt".utf8).contains(e) {
                        return false
                    }
                case 0..<0x20: return false
                default: break
                }
            }
            return false
        }

        /// A number as RFC 8259 writes one (of any size).
        mutating func number() -> Bool {
            _ = take(UInt8(ascii: "-"))
            guard let first = peek, first.isDigit else { return false }
            i += 1
            if first != UInt8(ascii: "0") { while peek?.isDigit == true { i += 1 } }
            if take(UInt8(ascii: ".")) {
                guard peek?.isDigit == true else { return false }
                while peek?.isDigit == true { i += 1 }
            }
            if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
                if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
                guard peek?.isDigit == true else { return false }
                while peek?.isDigit == true { i += 1 }
            }
            return true
        }
    }
}

extension UInt8 {
    fileprivate var isDigit: Bool { (0x30...0x39).contains(self) }
    fileprivate var isHexDigit: Bool { isDigit || (0x41...0x46).contains(self) || (0x61...0x66).contains(self) }
}
