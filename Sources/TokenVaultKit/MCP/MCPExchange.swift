import Dispatch
import FoundationEssentials

/// How one era of the protocol carries a message to the server
/// (docs/adapters.md, "MCP servers"). `MCPBridge.exchange(for:isRequest:)`
/// picks one for each message and is the only place that asks which era a
/// message is of; the bridge itself only sends, retries and writes.
protocol MCPExchange: Sendable {
    var era: MCPBridge.Era { get }
    /// Before the message is sent: false when it goes no further.
    func admit(_ message: JSONValue, request: JSONValue?, to bridge: MCPBridge) -> Bool
    /// The headers that carry the era on the message's POST, beside its
    /// authorization; nil when it cannot be sent (its error written) or was
    /// cancelled meanwhile.
    func headers(
        for message: JSONValue, request: JSONValue?, token: PresentedToken, cancel: Cancellation?, on bridge: MCPBridge
    ) -> [String]?
    /// True when the events before the message's answer are held until the
    /// answer comes, and the next message waits for it.
    func holdsEvents(_ message: JSONValue) -> Bool
    /// Seconds the message's stream may stay silent.
    func idleSeconds(for message: JSONValue, otherwise: Int) -> Int
    /// A refusal that is not about the token: true when it was the answer
    /// (written to the client).
    func answered(refusal: HTTPResponse, body: [UInt8], request: JSONValue?, on bridge: MCPBridge) -> Bool
    /// Once the message is under way.
    func sent(on bridge: MCPBridge)
    /// The cancellation of a request under way, where the era has one.
    func cancellation(of request: JSONValue) -> Cancellation?
    /// The request is done (answered, failed or cancelled).
    func done(_ request: JSONValue)
    /// After a 404 for `session` (the one the refused message carried): the
    /// era's headers for the message's second try once a new session was
    /// set up; nil when there is none to set up (the refusal is answered).
    func renegotiated(after session: String?, token: PresentedToken, on bridge: MCPBridge) -> [String]?
}

extension MCPExchange {
    func renegotiated(after session: String?, token: PresentedToken, on bridge: MCPBridge) -> [String]? { nil }
    func cancellation(of request: JSONValue) -> Cancellation? { nil }
    func done(_ request: JSONValue) {}
}

/// MCP 2025-11-25 and before: `initialize` sets up a session, which every
/// later request carries with its protocol version; client notifications
/// go to the server; the server's own messages come on a GET stream; a 404
/// for a session the server forgot sets up a new one with the client's own
/// `initialize`, and the message goes again.
struct HandshakeExchange: MCPExchange {
    /// The era's session, the bridge's.
    let session: HandshakeSession
    var era: MCPBridge.Era { .handshake }

    func admit(_ message: JSONValue, request: JSONValue?, to bridge: MCPBridge) -> Bool { true }

    func headers(
        for message: JSONValue, request: JSONValue?, token: PresentedToken, cancel: Cancellation?, on bridge: MCPBridge
    ) -> [String]? {
        session.headers
    }

    /// The answer to `initialize` goes out with the session it set up, so
    /// the client's next message carries it.
    func holdsEvents(_ message: JSONValue) -> Bool { message["method"]?.string == "initialize" }

    func idleSeconds(for message: JSONValue, otherwise: Int) -> Int { otherwise }

    func answered(refusal: HTTPResponse, body: [UInt8], request: JSONValue?, on bridge: MCPBridge) -> Bool {
        guard refusal.status == 404, session.state.withLock({ $0.sessionID != nil }) else { return false }
        bridge.fail(
            request,
            "\(bridge.shown) no longer knows the MCP session (HTTP 404), and a new one set up with your initialize did not help; this request was not answered"
        )
        return true
    }

    func renegotiated(after session: String?, token: PresentedToken, on bridge: MCPBridge) -> [String]? {
        bridge.renegotiated(after: session, token: token)
    }

    func sent(on bridge: MCPBridge) { bridge.startListening() }
}
