import Dispatch
import FoundationEssentials
import Glibc

/// Where the bridge's token comes from (`BridgeCredential`, or a test's
/// double): the vault's token, its renewal, a login, and a line on stderr.
public protocol BridgeTokenSource: AnyObject, Sendable {
    /// The token to send now, renewed first when it is about to expire.
    func token() throws -> PresentedToken
    /// After the server refused `rejected` (401): a renewed token.
    func renewed(after rejected: PresentedToken) throws -> PresentedToken
    /// The server asked for `scopes` (403 insufficient_scope), or refused a
    /// renewed token (401; no scopes: the login asks for what it held): true
    /// once a login finished; false when nobody can answer a login here, or
    /// when a login could give nothing the grant does not hold already.
    func stepUp(_ scopes: [String]) throws -> Bool
    /// One line on stderr.
    func say(_ line: String)
}

/// `tokenvault mcp URL` (docs/adapters.md, "MCP servers"): a stdio MCP
/// server that forwards every JSON-RPC message from stdin to a remote MCP
/// server over Streamable HTTP, with the vault's token, and writes every
/// message the server sends to stdout, one per line. stdout carries nothing else.
public final class MCPBridge: @unchecked Sendable {
    /// JSON-RPC error codes of the bridge (the implementation-defined range).
    public enum ErrorCode: Int64 {
        case authorization = -32001
        case server = -32002
        case scope = -32003
        case invalid = -32600
    }

    let url: String
    let transport: any HTTPStreamingTransport
    let tokens: BridgeTokenSource
    /// Seconds a stream may stay silent before it is closed.
    let idleSeconds: Int
    /// The two eras of the protocol (docs/adapters.md, "MCP servers").
    public enum Era: Sendable, Equatable {
        /// 2025-11-25 and before: `initialize`, a session, the GET stream.
        case handshake
        /// 2026-07-28 and later: each request on its own, with its routing headers.
        case perRequest(version: String)
    }

    /// What the bridge's threads share, under one lock: what both eras share.
    struct Shared {
        var closing = false
        /// A login for more scopes ran: at most one while the bridge runs
        /// (a server can always name another scope).
        var steppedUp = false
        /// A login after a renewed token was refused ran: at most one.
        var loggedInAgain = false
        /// The era the client's last request chose: a notification, which
        /// names no version, is of that era (`era(of:)`).
        var clientEra = Era.handshake
    }
    let state = Locked(Shared())
    /// What each era keeps, handed to its exchange.
    let handshake = HandshakeSession()
    let perRequest = PerRequestState()
    /// Whole lines on stdout, one writer at a time.
    let output = Locked(())
    private let inFlight = DispatchGroup()
    let shown: String
    /// The server's origin: where a DPoP nonce it gives applies.
    let origin: String
    /// The servers' latest DPoP nonces: the run's.
    let nonces: DPoPNonces

    /// Where each message for the client goes, one line each: stdout, or a test's list.
    let writeLine: @Sendable (String) -> Void

    public init(
        url: String, transport: any HTTPStreamingTransport, tokens: BridgeTokenSource, idleSeconds: Int = 300,
        nonces: DPoPNonces = DPoPNonces(),
        writeLine: @escaping @Sendable (String) -> Void = { Posix.write(1, $0 + "\n") }
    ) throws {
        guard OAuth2Provider.isSafeEndpoint(url), !url.contains("#") else {
            throw TokenVaultError.usage(
                "\(Quoted.text(url)) is not an https URL (http only for loopback) without a fragment")
        }
        self.url = url
        self.transport = transport
        self.tokens = tokens
        self.idleSeconds = idleSeconds
        self.nonces = nonces
        self.writeLine = writeLine
        shown = OutsideText.line(url, limit: 200)
        origin = DPoPNonces.origin(url)
    }

    /// Reads stdin to its end, forwarding each message; then ends the session
    /// (DELETE) after the answers still on their way (a few seconds at most).
    public func run(input: Int32 = 0) {
        var reader = LineReader(fd: input, maxBytes: JSONRPC.maxLineBytes)
        while let next = reader.next() {
            guard case .line(let bytes) = next else {
                let refusal = JSONRPC.Refusal(
                    code: -32600, message: "the message is larger than \(JSONRPC.maxLineBytes >> 20) MiB", id: .null)
                write(refusal.response)
                continue
            }
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            do {
                let message = try JSONRPC.message(bytes[...])
                dispatch(message, body: bytes)
            } catch {
                write(error.response)
            }
        }
        _ = inFlight.wait(timeout: .now() + 5)
        state.withLock { $0.closing = true }
        endSession()
    }

    /// Every message is forwarded on a thread of its own, so that no answer
    /// (a tool call that runs for minutes, a server that takes a request and
    /// never answers) holds up the messages after it: a `ping` or a
    /// cancellation goes out at once. The next line is read once this message
    /// is under way: one whose exchange holds its events (`initialize`) once
    /// its answer was passed on (what follows carries the session it set
    /// up); any other once the server took it (its first byte) or after half
    /// a second, so that a cancellation sent after its request reaches the
    /// server after it (docs/adapters.md).
    private func dispatch(_ message: JSONValue, body: [UInt8]) {
        let request: JSONValue? =
            if case .object(let o) = message, o["method"] != nil, let id = o["id"], id != .null { id } else { nil }
        let exchange = exchange(for: message, isRequest: request != nil)
        guard exchange.admit(message, request: request, to: self) else { return }
        handshake.keep(message, body: body)
        let holds = exchange.holdsEvents(message)
        let underWay = DispatchSemaphore(value: 0)
        inFlight.enter()
        Posix.spawnThread {
            self.forward(body, message, request: request, exchange: exchange, underWay: underWay)
            underWay.signal()
            self.inFlight.leave()
        }
        if holds { underWay.wait() } else { _ = underWay.wait(timeout: .now() + 0.5) }
        exchange.sent(on: self)
    }

    /// The exchange that carries one message from the client: the only
    /// place that asks which era a message is of (docs/adapters.md, "MCP servers").
    func exchange(for message: JSONValue, isRequest: Bool) -> any MCPExchange {
        switch era(of: message, isRequest: isRequest) {
        case .handshake: HandshakeExchange(session: handshake)
        case .perRequest(let version): PerRequestExchange(version: version, state: perRequest)
        }
    }

    /// The era of one message from the client (docs/adapters.md, "MCP
    /// servers"): a message whose `params._meta` names 2026-07-28 or later
    /// is of the per-request era; any other request is of the handshake era
    /// (`initialize` included: a client that probed with `server/discover`
    /// and fell back is back in that era); a notification naming no version
    /// is of the era of the client's last request.
    func era(of message: JSONValue, isRequest: Bool) -> Era {
        let named = MCPRouting.modernVersion(of: message).map { Era.perRequest(version: $0) }
        return state.withLock { s in
            if isRequest { s.clientEra = named ?? .handshake }
            return named ?? (isRequest ? .handshake : s.clientEra)
        }
    }

    // MARK: One message

    /// How one POST went, as far as the answer to the request is concerned.
    struct Transfer {
        var parser = ServerSentEventParser(maxEventBytes: JSONRPC.maxLineBytes)
        var jsonBody: [UInt8] = []
        var errorBody: [UInt8] = []
        var answered = false
        var refused: String?
        /// The answer to `initialize` streamed: its events are held until the
        /// answer itself comes (at most `maxLineBytes` of them), then passed on.
        var holding = false
        var held: [String] = []
        var heldBytes = 0
        /// The response's status and headers, known once its body starts.
        var head: HTTPResponse?
        /// Messages passed on from this stream.
        var messages = 0
    }

    /// Forwards one message as its era's `exchange` carries it. The same
    /// message is sent again after a renewal, a login for more scopes or a
    /// new login (`retry(after:)`), each at most once.
    private func forward(
        _ body: [UInt8], _ message: JSONValue, request: JSONValue?, exchange: any MCPExchange,
        underWay: DispatchSemaphore
    ) {
        let cancel = request.flatMap { exchange.cancellation(of: $0) }
        defer { if let request { exchange.done(request) } }
        var token: PresentedToken
        do { token = try tokens.token() } catch { return fail(request, error, code: .authorization) }
        guard var eraHeaders = exchange.headers(for: message, request: request, token: token, cancel: cancel, on: self)
        else { return }
        let holds = exchange.holdsEvents(message)
        let idle = exchange.idleSeconds(for: message, otherwise: idleSeconds)
        var attempt = Attempt()
        while true {
            attempt.session = Self.session(in: eraHeaders)
            var x = Transfer()
            x.holding = holds
            let response: HTTPResponse
            do {
                response = try transport.stream(
                    post(body, token: token, eraHeaders: eraHeaders), idleSeconds: idle, cancel: cancel,
                    headers: { head in
                        x.head = head
                        _ = self.nonces.kept(from: head, origin: self.origin)
                    },
                    receive: { status, type, bytes in
                        if !holds { underWay.signal() }
                        let more = self.receive(&x, status: status, type: type, bytes: bytes, request: request)
                        if holds, x.answered { underWay.signal() }
                        return more
                    })
            } catch {
                if cancel?.isCancelled == true { return }  // the client no longer waits for it
                if let refused = x.refused { return fail(request, refused) }
                if x.answered { return }
                if let last = x.parser.lastEventID, resume(after: last, request: request, token: token) { return }
                return fail(request, error, code: .server)
            }
            if (200..<300).contains(response.status) {
                return finish(&x, response, request: request, holding: holds, token: token)
            }
            guard
                let again = retry(
                    after: response, token: token, attempt: &attempt, request: request, errorBody: x.errorBody,
                    exchange: exchange)
            else { return }
            token = again
            if let renewed = attempt.eraHeaders { eraHeaders = renewed }
        }
    }

    /// A 2xx: what the answer held, written out (an answer that was
    /// `holding`, with the events it held back); an answer cut short is picked up again
    /// where its events had ids, else its error.
    private func finish(
        _ x: inout Transfer, _ response: HTTPResponse, request: JSONValue?, holding: Bool, token: PresentedToken
    ) {
        if holding, !x.answered {
            if !x.jsonBody.isEmpty { x.held.append(String(decoding: x.jsonBody, as: UTF8.self)) }
            x.jsonBody = []
            x.answered = settle(response, held: x.held, request: request, whole: true)
        }
        if !x.jsonBody.isEmpty { emit(x.jsonBody, request: request, answered: &x.answered, whole: true) }
        if x.answered || request == nil { return }
        if let last = x.parser.lastEventID, resume(after: last, request: request, token: token) { return }
        fail(request, "\(shown) closed its answer before it had answered")
    }

    /// One piece of the answer: JSON kept whole, events written as they come
    /// (those before the answer to `initialize` held until it comes).
    /// False stops the transfer (too large).
    func receive(
        _ x: inout Transfer, status: Int, type: String?, bytes: UnsafeRawBufferPointer, request: JSONValue?
    ) -> Bool {
        guard (200..<300).contains(status) else {
            if x.errorBody.count < 4096 { x.errorBody += bytes.prefix(4096 - x.errorBody.count) }
            return true
        }
        guard type?.lowercased().hasPrefix("text/event-stream") == true else {
            x.jsonBody += bytes
            if x.jsonBody.count > JSONRPC.maxLineBytes {
                x.refused = "\(shown) sent an answer larger than \(JSONRPC.maxLineBytes >> 20) MiB"
                return false
            }
            return true
        }
        do {
            for event in try x.parser.feed(bytes) where event.event == "message" && !event.data.isEmpty {
                guard x.holding else {
                    emit(Array(event.data.utf8), request: request, answered: &x.answered, whole: false)
                    x.messages += 1
                    continue
                }
                x.held.append(event.data)
                x.heldBytes += event.data.utf8.count
                if answers(event.data, request) {
                    // The answer came: passed on now, with the session from the headers; the stream goes on.
                    x.holding = false
                    x.answered = settle(x.head, held: x.held, request: request, whole: false)
                    x.held = []
                } else if x.heldBytes > JSONRPC.maxLineBytes {
                    x.refused =
                        "\(shown) sent more than \(JSONRPC.maxLineBytes >> 20) MiB before its answer to initialize"
                    return false
                }
            }
        } catch {
            x.refused = "\(shown) sent an event larger than \(error.limit >> 20) MiB"
            return false
        }
        return true
    }

    /// True when `data` is (or holds) the answer to `request`.
    private func answers(_ data: String, _ request: JSONValue?) -> Bool {
        guard let request, let value = JSONRPC.serverMessage(Array(data.utf8)) else { return false }
        let items: [JSONValue] = if case .array(let a) = value { a } else { [value] }
        return items.contains { $0["id"] == request && ($0["result"] != nil || $0["error"] != nil) }
    }

    /// After `initialize`: the session and protocol version the server chose,
    /// then its answer (held until both are known, so the client's next
    /// message carries them).
    private func settle(_ response: HTTPResponse?, held: [String], request: JSONValue?, whole: Bool) -> Bool {
        let session = response.flatMap(MCPBridge.sessionID(of:))
        var answered = false
        for data in held {
            if let version = MCPBridge.protocolVersion(of: JSONValue.parsed(Data(data.utf8))) {
                handshake.state.withLock { $0.protocolVersion = version }
            }
        }
        handshake.state.withLock { $0.sessionID = session }
        for data in held { emit(Array(data.utf8), request: request, answered: &answered, whole: whole) }
        return answered
    }
}
