import FoundationEssentials

/// MCP 2026-07-28 and later over HTTP (docs/adapters.md, "MCP servers"):
/// every request is one self-contained POST whose protocol version sits in
/// its own `params._meta`, and whose routing headers the server checks
/// against the body. Computed here from the body alone, as the MCP SDKs'
/// own HTTP clients compute them.
public enum MCPRouting {
    /// Where a request names its protocol version.
    public static let versionKey = "io.modelcontextprotocol/protocolVersion"
    /// The revisions set up by an `initialize` handshake, with a session.
    public static let handshakeVersions: Set<String> = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
    /// The methods whose `Mcp-Name` header mirrors a field of the params.
    static let nameFields = ["tools/call": "name", "prompts/get": "name", "resources/read": "uri"]
    static let paramPrefix = "Mcp-Param-"

    /// The protocol version a message's `params._meta` names when it is
    /// one of the per-request era (not a handshake version); nil otherwise.
    public static func modernVersion(of message: JSONValue) -> String? {
        guard let version = message["params"]?["_meta"]?[versionKey]?.string, !handshakeVersions.contains(version),
            isVisible(version, limit: 64)
        else { return nil }
        return version
    }

    /// True when `s` is 1 to `limit` bytes of visible ASCII (a header value as it is).
    static func isVisible(_ s: String, limit: Int) -> Bool {
        !s.isEmpty && s.utf8.count <= limit && s.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }

    /// A value as a header carries it: visible ASCII without leading or
    /// trailing spaces as it is, anything else as `=?base64?…?=` of its UTF-8.
    public static func headerValue(_ value: String) -> String {
        let plain =
            value.utf8.allSatisfy { (0x20...0x7E).contains($0) } && value.first != " " && value.last != " "
            && !(value.hasPrefix("=?base64?") && value.hasSuffix("?="))
        return plain ? value : "=?base64?" + Data(value.utf8).base64EncodedString() + "?="
    }

    /// An `x-mcp-header` map: for each annotated argument, its path of
    /// `properties` keys and the header token. Empty when an annotation is
    /// invalid (a client drops such a tool).
    public typealias HeaderMap = [[String]: String]

    /// The argument headers a tool's input schema declares: only on a
    /// property reached by `properties` keys alone, of type string, integer
    /// or boolean, named by an RFC 9110 token, each token once (any case).
    public static func headerMap(of schema: JSONValue?) -> HeaderMap? {
        var map: HeaderMap = [:]
        var seen: Set<String> = []
        func walk(_ node: JSONValue, path: [String]) -> Bool {
            guard case .object(let o) = node else { return true }
            if let token = o["x-mcp-header"] {
                guard !path.isEmpty, let t = token.string, isToken(t),
                    let type = o["type"]?.string, ["string", "integer", "boolean"].contains(type),
                    seen.insert(t.lowercased()).inserted
                else { return false }
                map[path] = t
            }
            if case .object(let properties)? = o["properties"] {
                for (name, sub) in properties where !walk(sub, path: path + [name]) { return false }
            }
            return true
        }
        guard let schema, walk(schema, path: []), map.count <= 64 else { return nil }
        return map
    }

    public static func isToken(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 128
            && s.utf8.allSatisfy { c in
                (0x30...0x39).contains(c) || (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c)
                    || "!#$%&'*+-.^_`|~".utf8.contains(c)
            }
    }

    /// The routing headers of `message` at `version`; nil when its method
    /// cannot travel in a header (the request is refused, never sent).
    /// `tools` gives the header map of a tool by name (nil: never listed).
    public static func headers(
        for message: JSONValue, version: String, tools: (String) -> HeaderMap?
    ) -> [String]? {
        guard let method = message["method"]?.string, isVisible(method, limit: 256) else { return nil }
        var h = ["MCP-Protocol-Version: \(version)", "Mcp-Method: \(method)"]
        let params = message["params"]
        if let field = nameFields[method], let name = params?[field]?.string {
            h.append("Mcp-Name: \(headerValue(name))")
        }
        if method == "tools/call", let name = params?["name"]?.string, let map = tools(name) {
            let arguments = params?["arguments"] ?? .object([:])
            for (path, token) in map.sorted(by: { $0.value < $1.value }) {
                var node: JSONValue? = arguments
                for key in path { node = node?[key] }
                let rendered: String? =
                    switch node {
                    case .string(let s): s
                    case .integer(let i): String(i)
                    case .number(let d): String(d)
                    case .bool(let b): b ? "true" : "false"
                    default: nil
                    }
                if let rendered { h.append("\(paramPrefix)\(token): \(headerValue(rendered))") }
            }
        }
        return h
    }
}
