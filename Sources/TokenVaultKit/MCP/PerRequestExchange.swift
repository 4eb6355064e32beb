import Dispatch
import FoundationEssentials
import Glibc

/// MCP 2026-07-28 and later (docs/adapters.md, "MCP servers"): each request
/// on its own, with routing headers computed from its body and no session;
/// no client notification reaches the server, a cancelled request closes
/// its exchange, the `x-mcp-header` maps come from the tool listings, and
/// a JSON-RPC error is an answer whatever its HTTP status.
struct PerRequestExchange: MCPExchange {
    let version: String
    /// The era's tool maps, listings and cancellations, the bridge's.
    let state: PerRequestState
    var era: MCPBridge.Era { .perRequest(version: version) }

    /// A notification goes no further (`notifications/cancelled` closes the
    /// exchange of the request it names); a request can be cancelled, and a
    /// listing of the tools is awaited.
    func admit(_ message: JSONValue, request: JSONValue?, to bridge: MCPBridge) -> Bool {
        guard let request else {
            if message["method"]?.string == "notifications/cancelled", let id = message["params"]?["requestId"] {
                state.cancels.withLock { $0[id] }?.cancel()
            }
            return false
        }
        if message["method"]?.string == "tools/list" {
            let first = message["params"]?["cursor"] == nil
            state.listings.withLock { $0[request] = first }
        }
        state.cancels.withLock { $0[request] = Cancellation() }
        return true
    }

    func cancellation(of request: JSONValue) -> Cancellation? { state.cancels.withLock { $0[request] } }

    func done(_ request: JSONValue) { state.done(request) }

    /// The message's routing headers (a call of a tool no listing showed
    /// lists the tools first).
    func headers(
        for message: JSONValue, request: JSONValue?, token: PresentedToken, cancel: Cancellation?, on bridge: MCPBridge
    ) -> [String]? {
        if message["method"]?.string == "tools/call", let name = message["params"]?["name"]?.string {
            bridge.listToolsOnce(unless: name, like: message, version: version, token: token, cancel: cancel)
            if cancel?.isCancelled == true { return nil }
        }
        let routed = MCPRouting.headers(for: message, version: version) { name in
            state.toolMaps.withLock { $0[name] }
        }
        if routed == nil {
            bridge.fail(request, "invalid request: its method cannot be sent as an HTTP header", code: .invalid)
        }
        return routed
    }

    func holdsEvents(_ message: JSONValue) -> Bool { false }

    /// A subscription's stream stays open for as long as the server keeps it.
    func idleSeconds(for message: JSONValue, otherwise: Int) -> Int {
        message["method"]?.string == "subscriptions/listen" ? 86400 : otherwise
    }

    /// A refusal whose body is a JSON-RPC error (an unknown method, a
    /// version the server does not speak, a header that does not match) is
    /// the answer, with nothing on stderr: a client negotiating the era expects it.
    func answered(refusal: HTTPResponse, body: [UInt8], request: JSONValue?, on bridge: MCPBridge) -> Bool {
        bridge.answerWithError(body, request: request)
    }

    func sent(on bridge: MCPBridge) {}
}

/// The per-request era's tool listings and answers.
extension MCPBridge {
    /// Keeps the `x-mcp-header` map of each tool of a listing (a tool whose
    /// annotations are invalid mirrors nothing): those of the current listing
    /// only, as the SDK's client does, so a first page replaces what was kept
    /// (a server that renames its tools at every listing grows nothing).
    func absorbTools(_ result: JSONValue, firstPage: Bool) {
        guard case .array(let tools)? = result["tools"] else { return }
        perRequest.toolMaps.withLock { maps in
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
        unless name: String, like message: JSONValue, version: String, token: PresentedToken, cancel: Cancellation?
    ) {
        let first = perRequest.firstListing()
        guard first, perRequest.toolMaps.withLock({ $0[name] }) == nil else { return }
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
                    bound: token.key != nil,
                    { self.post(Array(listing.text.utf8), token: token, eraHeaders: headers) }, cancel: cancel),
                (200..<300).contains(response.status), let result = Self.answer(in: response)?["result"]
            else { return }
            absorbTools(result, firstPage: page == 0)
            guard let next = result["nextCursor"]?.string, !next.isEmpty else { return }
            cursor = next
        }
    }

    /// One exchange read whole (at most `JSONRPC.maxLineBytes`), closed as
    /// soon as `cancel` is set; made again once (a fresh proof) when a
    /// resource asks for its DPoP nonce.
    private func whole(bound: Bool, _ request: () -> HTTPRequest, cancel: Cancellation?) throws -> HTTPResponse {
        var nonced = false
        while true {
            var body: [UInt8] = []
            var response = try transport.stream(
                request(), idleSeconds: idleSeconds, cancel: cancel,
                headers: { _ = self.nonces.kept(from: $0, origin: self.origin) },
                receive: { _, _, bytes in
                    body += bytes
                    return body.count <= JSONRPC.maxLineBytes
                })
            if !nonced, DPoPNonces.asksForNonce(response), bound {
                nonced = true
                continue
            }
            response.body = Data(body)
            return response
        }
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

    /// A refusal whose body is a JSON-RPC error, passed on as the answer to
    /// `request`; false when it is none.
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
