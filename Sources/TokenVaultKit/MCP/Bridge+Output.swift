import Dispatch
import FoundationEssentials
import Glibc

/// What the bridge sends and what it writes (docs/adapters.md, "MCP servers"):
/// the requests of both eras, and each message from the server as one line on stdout.
extension MCPBridge {
    /// What authorizes one request: `Bearer TOKEN`; for a DPoP-bound token,
    /// `DPoP TOKEN` and a fresh proof of this request, with the server's
    /// latest nonce (docs/adapters.md, "MCP servers"). A bound token is never
    /// sent as Bearer.
    func authorization(token: PresentedToken, method: String) -> [String] {
        let now = Int64(Date().timeIntervalSince1970)
        // A proof that cannot be made leaves the request without one: the server refuses it, and says why.
        return (try? token.authorization(method: method, url: url, nonce: nonces.latest(origin), now: now))
            ?? [token.header]
    }

    /// A POST of one message, with the headers its era adds (`MCPExchange`).
    func post(_ body: [UInt8], token: PresentedToken, eraHeaders: [String]) -> HTTPRequest {
        HTTPRequest(
            url: url,
            headers: authorization(token: token, method: "POST") + eraHeaders + [
                "Content-Type: application/json", "Accept: application/json, text/event-stream",
            ], body: Data(body))
    }

    /// A GET (or DELETE) of the handshake era's session.
    func get(token: PresentedToken, method: String = "GET") -> HTTPRequest {
        HTTPRequest(
            method: method, url: url,
            headers: authorization(token: token, method: method) + handshake.headers + ["Accept: text/event-stream"])
    }

    /// Writes one message from the server as one line, after checking it is
    /// strict JSON and a JSON-RPC message or batch (line breaks between its
    /// tokens dropped: JSON strings hold none). Anything else never reaches
    /// the client: an event of a stream is dropped with a line on stderr (the
    /// answer may still come); a whole answer (`whole`) that is none becomes
    /// the JSON-RPC error of the request it answers.
    func emit(_ data: [UInt8], request: JSONValue?, answered: inout Bool, whole: Bool) {
        guard let value = JSONRPC.serverMessage(data) else {
            if whole, let request, !answered {
                answered = true
                fail(request, "\(shown) answered with something that is not a JSON-RPC message")
            } else {
                tokens.say("\(shown) sent a message that is not JSON-RPC; it was dropped")
            }
            return
        }
        let items: [JSONValue] = if case .array(let a) = value { a } else { [value] }
        if let request,
            let answer = items.first(where: { $0["id"] == request && ($0["result"] != nil || $0["error"] != nil) })
        {
            answered = true
            if let first = perRequest.listings.withLock({ $0.removeValue(forKey: request) }),
                let result = answer["result"]
            {
                absorbTools(result, firstPage: first)
            }
        }
        write(String(decoding: data.filter { $0 != 0x0A && $0 != 0x0D }, as: UTF8.self))
    }

    func write(_ line: String) {
        output.withLock { _ in writeLine(line) }
    }

    func fail(_ request: JSONValue?, _ error: Error, code: ErrorCode) {
        let text = (error as? TokenVaultError).map { e in e.errorText + (e.hint.map { "; \($0)" } ?? "") }
        fail(request, text ?? error.errorText, code: code)
    }

    /// A JSON-RPC error for the client (when the message was a request) and one line on stderr.
    func fail(_ request: JSONValue?, _ message: String, code: ErrorCode = .server) {
        tokens.say(message)
        guard let request else { return }
        write(
            JSONValue.object([
                "jsonrpc": .string("2.0"), "id": request,
                "error": .object(["code": .integer(code.rawValue), "message": .string(message)]),
            ]).text)
    }
}
