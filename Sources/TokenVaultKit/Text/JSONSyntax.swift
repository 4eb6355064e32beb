import Dispatch
import FoundationEssentials
import Glibc

/// Where a JSON text first goes wrong, for `set`'s message: JSONDecoder says
/// only that the data "was not valid JSON", with no position. A strict
/// RFC 8259 scan, used only after the decoder refused the text.
public enum JSONSyntax {
    public struct Problem: Error, Equatable {
        var line: Int
        var column: Int
        var what: String
    }

    /// The first syntax error of `text`, or nil when it is valid JSON.
    public static func firstProblem(_ text: String) -> Problem? {
        var scanner = Scanner(bytes: Array(text.utf8))
        do {
            scanner.skipSpace()
            try scanner.value(depth: 0)
            scanner.skipSpace()
            if scanner.at < scanner.bytes.count { throw scanner.problem("more after the end of the JSON value") }
            return nil
        } catch {
            return error as? Problem
        }
    }

    private struct Scanner {
        let bytes: [UInt8]
        var at = 0

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
            while let c = current, c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { at += 1 }
        }

        mutating func expect(_ c: UInt8, _ what: String) throws {
            guard current == c else { throw problem(what) }
            at += 1
        }

        mutating func value(depth: Int) throws {
            guard depth < 512 else { throw problem("nested too deeply") }
            switch current {
            case UInt8(ascii: "{"): try object(depth: depth)
            case UInt8(ascii: "["): try array(depth: depth)
            case UInt8(ascii: "\""): try string()
            case UInt8(ascii: "-"), UInt8(ascii: "0"), UInt8(ascii: "1"), UInt8(ascii: "2"), UInt8(ascii: "3"),
                UInt8(ascii: "4"),
                UInt8(ascii: "5"), UInt8(ascii: "6"), UInt8(ascii: "7"), UInt8(ascii: "8"), UInt8(ascii: "9"):
                try number()
            case UInt8(ascii: "t"): try word("true")
            case UInt8(ascii: "f"): try word("false")
            case UInt8(ascii: "n"): try word("null")
            case nil: throw problem("the text ends where a value should be")
            case UInt8(ascii: "'"): throw problem("strings take double quotes, not single")
            default: throw problem("a value should be here (text takes double quotes)")
            }
        }

        mutating func object(depth: Int) throws {
            at += 1
            skipSpace()
            if current == UInt8(ascii: "}") {
                at += 1
                return
            }
            while true {
                guard current == UInt8(ascii: "\"") else { throw problem("a key in double quotes should be here") }
                try string()
                skipSpace()
                try expect(UInt8(ascii: ":"), "':' should follow the key")
                skipSpace()
                try value(depth: depth + 1)
                skipSpace()
                if current == UInt8(ascii: ",") {
                    at += 1
                    skipSpace()
                    continue
                }
                try expect(UInt8(ascii: "}"), "',' or '}' should be here")
                return
            }
        }

        mutating func array(depth: Int) throws {
            at += 1
            skipSpace()
            if current == UInt8(ascii: "]") {
                at += 1
                return
            }
            while true {
                try value(depth: depth + 1)
                skipSpace()
                if current == UInt8(ascii: ",") {
                    at += 1
                    skipSpace()
                    continue
                }
                try expect(UInt8(ascii: "]"), "',' or ']' should be here")
                return
            }
        }

        mutating func string() throws {
            at += 1
            while let c = current {
                switch c {
                case UInt8(ascii: "\""):
                    at += 1
                    return
                case UInt8(ascii: "\\"):
                    at += 1
                    guard let e = current, "\"\\/bfnrtu".utf8.contains(e) else {
                        throw problem("an unknown escape in a string")
                    }
                    at += 1
                    if e == UInt8(ascii: "u") {
                        for _ in 0..<4 {
                            guard let h = current,
                                (0x30...0x39).contains(h) || (0x41...0x46).contains(h) || (0x61...0x66).contains(h)
                            else { throw problem("\\u needs four hex digits") }
                            at += 1
                        }
                    }
                case 0..<0x20: throw problem("a control character (a line break?) inside a string")
                default: at += 1
                }
            }
            throw problem("the text ends inside a string (a missing '\"')")
        }

        mutating func number() throws {
            if current == UInt8(ascii: "-") { at += 1 }
            func digits() throws {
                guard let c = current, (0x30...0x39).contains(c) else { throw problem("a digit should be here") }
                while let c = current, (0x30...0x39).contains(c) { at += 1 }
            }
            if current == UInt8(ascii: "0") { at += 1 } else { try digits() }
            if current == UInt8(ascii: ".") {
                at += 1
                try digits()
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                at += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { at += 1 }
                try digits()
            }
        }

        mutating func word(_ w: String) throws {
            let start = at
            for b in w.utf8 {
                guard current == b else {
                    at = start
                    throw problem("a value should be here (text takes double quotes)")
                }
                at += 1
            }
        }
    }
}
