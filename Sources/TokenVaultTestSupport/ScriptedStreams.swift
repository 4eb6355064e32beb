import Foundation
import TokenVaultKit

/// A streaming transport whose answers a test computes from each request
/// (the MCP bridge sends from several threads at once, so a fixed order of
/// answers would not do): the body is handed to `receive` in two pieces, as
/// a stream arrives, after the headers. Every request is recorded.
public final class ScriptedStreams: HTTPStreamingTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [HTTPRequest] = []
    private var recordedIdle: [Int] = []
    private let answer: @Sendable (HTTPRequest, Cancellation?) -> HTTPResponse

    public init(_ answer: @escaping @Sendable (HTTPRequest) -> HTTPResponse) { self.answer = { r, _ in answer(r) } }

    /// A server that may wait on the stream's cancellation: a stream
    /// cancelled by the time its answer is computed fails, as libcurl's does.
    public init(cancellable answer: @escaping @Sendable (HTTPRequest, Cancellation?) -> HTTPResponse) {
        self.answer = answer
    }

    /// The requests so far, in the order they were sent.
    public var requests: [HTTPRequest] { lock.withLock { recorded } }
    /// Each stream's `idleSeconds`, in the order they were opened.
    public var idleSeconds: [Int] { lock.withLock { recordedIdle } }

    public func send(_ request: HTTPRequest) throws -> HTTPResponse {
        lock.withLock { recorded.append(request) }
        return answer(request, nil)
    }

    public func stream(
        _ request: HTTPRequest, idleSeconds: Int, cancel: Cancellation?, headers: ((HTTPResponse) -> Void)?,
        receive: @escaping (Int, String?, UnsafeRawBufferPointer) -> Bool
    ) throws -> HTTPResponse {
        lock.withLock {
            recorded.append(request)
            recordedIdle.append(idleSeconds)
        }
        var response = answer(request, cancel)
        if cancel?.isCancelled == true { throw TokenVaultError.badInput("the stream was cancelled") }
        headers?(response)
        let body = [UInt8](response.body)
        for piece in [body[..<(body.count / 2)], body[(body.count / 2)...]] where !piece.isEmpty {
            let more = piece.withUnsafeBytes { receive(response.status, response.contentType, $0) }
            if !more { throw TokenVaultError.badInput("the receiver stopped the stream") }
        }
        response.body = Data()
        return response
    }

    /// A JSON-RPC result for `request` (whose body is a message with an id), with `headers`.
    public static func result(
        _ result: String, to request: HTTPRequest, headers: [(name: String, value: String)] = []
    ) -> HTTPResponse {
        let id = (try? JSONSerialization.jsonObject(with: request.body) as? [String: Any])?["id"]
        let idText = (id as? Int).map(String.init) ?? (id as? String).map { "\"\($0)\"" } ?? "null"
        var r = HTTPResponse(
            status: 200, contentType: "application/json",
            body: Data(#"{"jsonrpc":"2.0","id":\#(idText),"result":\#(result)}"#.utf8))
        r.headers = headers
        return r
    }
}
