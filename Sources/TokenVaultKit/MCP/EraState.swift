/// What each era of the protocol keeps while the bridge runs (docs/adapters.md,
/// "MCP servers"), held by the bridge and handed to that era's exchange: the
/// bridge itself keeps only what both eras share (closing, the logins it ran,
/// the era of the client's last request).

/// MCP 2025-11-25 and before: the session `initialize` set up, the protocol
/// version it named, the GET stream, and the client's own handshake, kept to
/// set up a session again when the server forgets its own.
final class HandshakeSession: Sendable {
    struct State {
        var sessionID: String?
        var protocolVersion: String?
        var listening = false
        /// The client's `initialize` and `notifications/initialized`.
        var initialize: JSONValue?
        var initialized: [UInt8]?
    }
    let state = Locked(State())
    /// One new session at a time, for every request that met the same 404.
    let renegotiation = Locked(0)

    /// The headers that carry the session on each message of the era.
    var headers: [String] {
        let (sessionID, protocolVersion) = state.withLock { ($0.sessionID, $0.protocolVersion) }
        return (sessionID.map { ["Mcp-Session-Id: \($0)"] } ?? [])
            + (protocolVersion.map { ["MCP-Protocol-Version: \($0)"] } ?? [])
    }

    /// Keeps the client's `initialize` and `notifications/initialized`.
    func keep(_ message: JSONValue, body: [UInt8]) {
        switch message["method"]?.string {
        case "initialize": state.withLock { $0.initialize = message }
        case "notifications/initialized": state.withLock { $0.initialized = body }
        default: break
        }
    }
}

/// MCP 2026-07-28 and later: the `x-mcp-header` map of each tool seen in a
/// listing, the client's listings on their way, and the cancellation of
/// each request under way.
final class PerRequestState: Sendable {
    let toolMaps = Locked<[String: MCPRouting.HeaderMap]>([:])
    /// Tool listings under way, by request id: true for a first page (no
    /// cursor), whose answer replaces the `x-mcp-header` maps kept.
    let listings = Locked<[JSONValue: Bool]>([:])
    let cancels = Locked<[JSONValue: Cancellation]>([:])
    /// The bridge listed the tools itself (once at most).
    private let listedTools = Locked(false)

    /// True the first time it is asked: the bridge lists the tools itself once.
    func firstListing() -> Bool { listedTools.once(\.self) }

    /// A request is done: its cancellation and a listing left unanswered go.
    func done(_ request: JSONValue) {
        cancels.withLock { $0[request] = nil }
        listings.withLock { _ = $0.removeValue(forKey: request) }
    }
}
