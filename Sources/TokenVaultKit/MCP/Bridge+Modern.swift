import Dispatch
import FoundationEssentials
import Glibc

/// The bridge in the per-request era, MCP 2026-07-28 and later
/// (docs/adapters.md, "MCP servers"): no client notification reaches the
/// server, a cancelled request closes its exchange, the `x-mcp-header`
/// maps come from the tool listings, and a JSON-RPC error is an answer
/// whatever its HTTP status.
extension MCPBridge {
    /// A notification of the per-request era: none is sent to the server
    /// (the revision has none from the client); `notifications/cancelled`
    /// closes the exchange of the request it names.
    func notified(_ message: JSONValue) {
        guard message["method"]?.string == "notifications/cancelled", let id = message["params"]?["requestId"] else {
            return
        }
        cancels.withLock { $0[id] }?.cancel()
    }

    /// Keeps the `x-mcp-header` map of each tool of a listing (a tool whose
    /// annotations are invalid mirrors nothing): those of the current listing
    /// only, as the SDK's client does, so a first page replaces what was kept
    /// (a server that renames its tools at every listing grows nothing).
    func absorbTools(_ result: JSONValue, firstPage: Bool) {
        guard case .array(let tools)? = result["tools"] else { return }
        toolMaps.withLock { maps in
            if firstPage { maps = [:] }
            for tool in tools {
                guard let name = tool["name"]?.string else { continue }
                maps[name] = MCPRouting.headerMap(of: tool["inputSchema"]) ?? [:]
            }
        }
    }

    /// Before a call of a tool no listing showed: the bridge lists the
    /// tools itself, once while it runs, with the call's `_meta` (at most
    /// 100 pages), so that the call carries its `Mcp-Param-*` headers. The
    /// listing stops with the call: a cancelled call sends no more pages,
    /// and the page under way is closed.
    func listToolsOnce(
        unless name: String, like message: JSONValue, version: String, token: String, cancel: Cancellation?
    ) {
        let first = state.once(\.listedTools)
        guard first, toolMaps.withLock({ $0[name] }) == nil else { return }
        var cursor: String?
        for page in 0..<100 where cancel?.isCancelled != true {
            var params: [String: JSONValue] = ["_meta": message["params"]?["_meta"] ?? .object([:])]
            if let cursor { params["cursor"] = .string(cursor) }
            let listing = JSONValue.object([
                "jsonrpc": .string("2.0"), "id": .string("tokenvault-tools-\(page)"),
                "method": .string("tools/list"), "params": .object(params),
            ])
            guard let headers = MCPRouting.headers(for: listing, version: version, tools: { _ in nil }),
                let response = try? whole(
                    post(Array(listing.text.utf8), token: token, routing: headers), cancel: cancel),
                (200..<300).contains(response.status), let result = Self.answer(in: response)?["result"]
            else { return }
            absorbTools(result, firstPage: page == 0)
            guard let next = result["nextCursor"]?.string, !next.isEmpty else { return }
            cursor = next
        }
    }

    /// One exchange read whole (at most `JSONRPC.maxLineBytes`), closed as
    /// soon as `cancel` is set.
    private func whole(_ request: HTTPRequest, cancel: Cancellation?) throws -> HTTPResponse {
        var body: [UInt8] = []
        var response = try transport.stream(
            request, idleSeconds: idleSeconds, cancel: cancel, headers: nil,
            receive: { _, _, bytes in
                body += bytes
                return body.count <= JSONRPC.maxLineBytes
            })
        response.body = Data(body)
        return response
    }

    /// The JSON-RPC answer in a whole response: its JSON body, or the first
    /// answer among the events of a stream.
    static func answer(in response: HTTPResponse) -> JSONValue? {
        let bytes = [UInt8](response.body)
        guard response.contentType?.lowercased().hasPrefix("text/event-stream") == true else {
            return JSONRPC.serverMessage(bytes)
        }
        var parser = ServerSentEventParser(maxEventBytes: JSONRPC.maxLineBytes)
        let events = (try? parser.feed(bytes)) ?? []
        return events.lazy.compactMap { JSONRPC.serverMessage(Array($0.data.utf8)) }.first {
            $0["result"] != nil || $0["error"] != nil
        }
    }

    /// A refusal whose body is a JSON-RPC error (an unknown method, a
    /// version the server does not speak, a header that does not match):
    /// passed on as the answer to `request`, with nothing on stderr (a
    /// client negotiating the era expects it). False when it is none.
    func answerWithError(_ body: [UInt8], request: JSONValue?) -> Bool {
        guard let value = JSONRPC.serverMessage(body), case .object(let error)? = value["error"],
            error["code"]?.int64 != nil, error["message"]?.string != nil
        else { return false }
        guard let request else { return true }
        var kept: [String: JSONValue] = ["code": error["code"]!, "message": error["message"]!]
        if let data = error["data"] { kept["data"] = data }
        write(JSONValue.object(["jsonrpc": .string("2.0"), "id": request, "error": .object(kept)]).text)
        return true
    }
}
