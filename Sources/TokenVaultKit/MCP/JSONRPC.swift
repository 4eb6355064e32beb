import FoundationEssentials

/// JSON-RPC 2.0 as MCP's stdio transport carries it: one message per line,
/// UTF-8, no embedded newlines. What the bridge reads from its client is
/// checked here; a line that is no message gets the error JSON-RPC defines,
/// and nothing is forwarded.
public enum JSONRPC {
    /// A line that is not a message, with the error to answer it with.
    public struct Refusal: Error, Equatable, Sendable {
        /// -32700 parse error, -32600 invalid request.
        public var code: Int
        public var message: String
        /// The request's id when it could be read, else null.
        public var id: JSONValue

        /// The JSON-RPC error response, one line.
        public var response: String {
            JSONValue.object([
                "jsonrpc": .string("2.0"), "id": id,
                "error": .object(["code": .integer(Int64(code)), "message": .string(message)]),
            ]).text
        }
    }

    /// The longest line taken (a tool call with a large argument fits).
    public static let maxLineBytes = 4 << 20

    /// One line from the client as a message: a request, a notification or a
    /// response (an object with `"jsonrpc": "2.0"`), or a batch of them.
    /// A client's line is read with pass-through rules (JSONSyntax): the
    /// bridge forwards its own bytes and reads only its id, method and routing
    /// fields. A server's message is read strictly (`serverMessage`).
    public static func message(
        _ line: ArraySlice<UInt8>, rules: JSONSyntax.Rules = .passingOn
    ) throws(Refusal) -> JSONValue {
        guard line.count <= maxLineBytes else {
            throw Refusal(code: -32600, message: "the message is larger than \(maxLineBytes >> 20) MiB", id: .null)
        }
        let value: JSONValue
        do {
            value = try JSONSyntax.parse(line, rules: rules)
        } catch {
            throw Refusal(code: -32700, message: "parse error: the line is not JSON", id: readableID(line))
        }
        switch value {
        case .object(let o):
            try check(o)
        case .array(let items) where !items.isEmpty:
            for item in items {
                guard case .object(let o) = item else {
                    throw Refusal(code: -32600, message: "invalid request: a batch holds objects", id: .null)
                }
                try check(o)
            }
        default:
            throw Refusal(code: -32600, message: "invalid request: a message is an object", id: .null)
        }
        return value
    }

    /// A message from the server (docs/adapters.md, "MCP servers"); nil when
    /// it is none. Read whole and strictly where it can be (what the bridge
    /// interprets of it: its id, an error, a tool listing). Any other JSON
    /// text the RFC allows (a string cut inside an emoji, an integer beyond a
    /// double, nesting of any depth) is only passed on: it is read for its
    /// envelope alone (`jsonrpc`, `id`, `method`, and whether it has a
    /// `result` or an `error`), with no limit but its size; a `result` or
    /// `error` that does not read strictly stands as null.
    public static func serverMessage(_ bytes: [UInt8]) -> JSONValue? {
        if let strict = try? message(bytes[...], rules: JSONSyntax.Rules()) { return strict }
        guard bytes.count <= maxLineBytes, let (batch, objects) = JSONEnvelope.members(bytes) else { return nil }
        var messages: [JSONValue] = []
        for members in objects {
            var o: [String: JSONValue] = [:]
            for (key, range) in members where ["jsonrpc", "id", "method", "result", "error"].contains(key) {
                let strict = try? JSONSyntax.parse(bytes[range])
                o[key] = strict ?? (key == "result" || key == "error" ? .null : nil)
            }
            do { try check(o) } catch { return nil }
            messages.append(.object(o))
        }
        return batch ? .array(messages) : messages.first
    }

    private static func check(_ o: [String: JSONValue]) throws(Refusal) {
        let id = o["id"] ?? .null
        guard o["jsonrpc"] == .string("2.0") else {
            throw Refusal(code: -32600, message: "invalid request: jsonrpc must be \"2.0\"", id: validID(id))
        }
        switch id {
        case .null, .string, .integer: break
        default: throw Refusal(code: -32600, message: "invalid request: an id is a string or a number", id: .null)
        }
        let isResponse = o["result"] != nil || o["error"] != nil
        guard isResponse || o["method"]?.string != nil else {
            throw Refusal(code: -32600, message: "invalid request: no method", id: id)
        }
    }

    /// The top-level `"id"` of a line that is not JSON as a whole, where it
    /// can still be read (a string or a whole number, at the object's first
    /// level): its answer then reaches the request that is waiting for it.
    static func readableID(_ line: ArraySlice<UInt8>) -> JSONValue {
        let bytes = Array(line)
        var depth = 0
        var i = 0
        var lastString: (start: Int, end: Int)?
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "\"") {
                let start = i
                i += 1
                while i < bytes.count, bytes[i] != UInt8(ascii: "\"") { i += bytes[i] == UInt8(ascii: "\\") ? 2 : 1 }
                lastString = (start, min(i + 1, bytes.count))
                i += 1
                continue
            }
            switch c {
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
            case UInt8(ascii: ":") where depth == 1:
                if let key = lastString, Array(bytes[key.start..<key.end]) == Array(#""id""#.utf8) {
                    var j = i + 1
                    while j < bytes.count, bytes[j] == 0x20 || bytes[j] == 0x09 { j += 1 }
                    var end = j
                    if j < bytes.count, bytes[j] == UInt8(ascii: "\"") {
                        end = j + 1
                        while end < bytes.count, bytes[end] != UInt8(ascii: "\"") {
                            end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1
                        }
                        end += 1
                    } else {
                        while end < bytes.count, bytes[end] == UInt8(ascii: "-") || (0x30...0x39).contains(bytes[end]) {
                            end += 1
                        }
                    }
                    guard end <= bytes.count, end > j, let id = JSONValue.parsed(bytes[j..<end]) else { return .null }
                    return validID(id)
                }
            default: break
            }
            lastString = c == UInt8(ascii: ":") || c == UInt8(ascii: ",") ? nil : lastString
            i += 1
        }
        return .null
    }

    private static func validID(_ id: JSONValue) -> JSONValue {
        switch id {
        case .string, .integer: id
        default: .null
        }
    }
}
