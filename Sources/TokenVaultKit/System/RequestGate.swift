import FoundationEssentials
import Glibc

/// A request's or a renewal's leave to act, in the agent, which `lock` and
/// `agent stop` withdraw (docs/agent.md, "Locked"): once closed, nothing
/// more is sent for it (`check`, before each request to the network), and the
/// secret commands it runs are ended at once. What it sent before is
/// finished and stored: a rotated refresh token is never lost.
public final class RequestGate: @unchecked Sendable {
    private struct State {
        var closed: String?
        /// Each secret command under way, and whether it leads a process group of its own (ended whole).
        var children: [pid_t: Bool] = [:]
    }
    private let state = Locked(State())

    public init() {}

    /// The reasons it is closed for.
    public static let locked = "tokenvault lock ran", stopped = "the agent was stopped"

    /// Why it was closed (`locked`, `stopped`); nil while open.
    public var closed: String? { state.withLock { $0.closed } }

    /// Throws once closed: the request sends nothing more. A failure for
    /// now (75), not a permission one: a client with a passphrase of its own
    /// would otherwise run it again itself, after the lock.
    public func check() throws {
        guard let why = closed else { return }
        throw TokenVaultError.temporary(
            "\(why) while the agent worked on this request: nothing was sent, and nothing stored changed",
            hint: "run the command again")
    }

    /// Closes it (the first reason stays) and ends its secret commands.
    public func close(_ why: String) {
        let children = state.withLock { s -> [pid_t: Bool] in
            if s.closed == nil { s.closed = why }
            return s.children
        }
        for (pid, group) in children { kill(group ? -pid : pid, SIGKILL) }
    }

    /// A secret command started as `pid` (the leader of its own process
    /// group, `group`): false when the gate is closed (it is ended).
    func started(_ pid: pid_t, group: Bool) -> Bool {
        state.withLock { s in
            guard s.closed == nil else { return false }
            s.children[pid] = group
            return true
        }
    }

    func ended(_ pid: pid_t) { _ = state.withLock { $0.children.removeValue(forKey: pid) } }
}

/// A transport that asks its gate before each request.
struct GatedTransport: HTTPTransport {
    let inner: HTTPTransport
    let gate: RequestGate

    func send(_ request: HTTPRequest) throws -> HTTPResponse {
        try gate.check()
        return try inner.send(request)
    }

    func checkConnects(to url: String) throws {
        try gate.check()
        try inner.checkConnects(to: url)
    }
}
