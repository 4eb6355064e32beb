import Dispatch
import FoundationEssentials
import Glibc

/// The bridge's streams beside the answers (docs/adapters.md, "MCP servers"):
/// an answer picked up again after a break, the server's own stream, the end of the session.
extension MCPBridge {
    /// Picks an answer up again after its stream broke: a GET with
    /// `Last-Event-ID`, up to three times. True when the answer came.
    func resume(after lastID: String, request: JSONValue?, token: PresentedToken) -> Bool {
        var last = lastID
        for _ in 0..<3 {
            var x = Transfer()
            var request_ = get(token: token)
            request_.headers.append("Last-Event-ID: \(last)")
            let response = try? transport.stream(request_, idleSeconds: idleSeconds) { status, type, bytes in
                self.receive(&x, status: status, type: type, bytes: bytes, request: request)
            }
            if x.answered { return true }
            if let r = response, !(200..<300).contains(r.status) { return false }
            if x.refused != nil { return false }
            last = x.parser.lastEventID ?? last
        }
        return false
    }

    // MARK: The server's own messages

    /// The GET stream for messages the server sends on its own, once the
    /// session is known; opened again after a break (with `Last-Event-ID`),
    /// given up on when the server offers none (405) or keeps failing.
    func startListening() {
        let start = handshake.state.withLock { s -> Bool in
            guard s.sessionID != nil, !s.listening else { return false }
            s.listening = true
            return true
        }
        guard start else { return }
        Posix.spawnThread { self.listen() }
    }

    private func listen() {
        // Gone: a new session's stream may be opened (a session the server forgot and set up again).
        defer { handshake.state.withLock { $0.listening = false } }
        var last: String?
        // Streams in a row that failed, or closed at once with nothing in them.
        var failures = 0
        while !state.withLock({ $0.closing }), failures < 5 {
            guard let token = try? tokens.token() else { return }
            var x = Transfer()
            var request = get(token: token)
            if let last { request.headers.append("Last-Event-ID: \(last)") }
            let started = DispatchTime.now()
            let response = try? transport.stream(request, idleSeconds: idleSeconds) { status, type, bytes in
                self.receive(&x, status: status, type: type, bytes: bytes, request: nil)
            }
            last = x.parser.lastEventID ?? last
            if let r = response, r.status == 405 || r.status == 404 { return }
            let lasted = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
            let useful = response.map { (200..<300).contains($0.status) } == true && (x.messages > 0 || lasted >= 10)
            failures = useful ? 0 : failures + 1
            // The server's `retry`, never under a second, doubled for each stream in a row that was of no use.
            let retry = max(Double(min(x.parser.retry ?? 1000, 60_000)) / 1000, 1)
            Posix.sleep(min(retry * Double(1 << failures), 60))
        }
        if failures >= 5 {
            tokens.say("\(shown) kept closing its stream of messages of its own; it is not opened again")
        }
    }

    /// DELETE: the session ends with the client's input.
    func endSession() {
        guard handshake.state.withLock({ $0.sessionID }) != nil, let token = try? tokens.token() else { return }
        _ = try? transport.send(get(token: token, method: "DELETE"))
    }
}
