import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

/// The agent itself (docs/agent.md): one request per connection, each on
/// a thread of its own and through a fresh `Context` (the config read again
/// when it changed, the store opened through the process's open libsecret
/// session and the kernel keyring's cached key), so nothing is answered from
/// memory. Requests run side by side: what one request sets (its client, what
/// it prints) is its thread's own (`Context.agentRequest`, `Output`), and
/// what the agent keeps between requests is in `state`, under its lock,
/// which no request holds while it works. Only the renewal of one credential
/// is one at a time, by that credential's renewal lock, as between processes.
final class AgentServer: @unchecked Sendable {
    let settings: Settings
    private let started = Int64(Date().timeIntervalSince1970)

    /// What the agent keeps between requests.
    struct State {
        var requests = 0
        /// When a client last asked for each credential: those are renewed ahead of need.
        var asked: [CredentialID: Int64] = [:]
        /// When a renewal ahead of need last failed for a temporary reason (tried again a minute later).
        var failed: [CredentialID: Int64] = [:]
        /// Renewals ahead of need under way now, each on a thread of its own.
        var renewing: Set<CredentialID> = []
        var renewals = 0
        /// `tokenvault lock` was run: the agent's own passphrase sources are
        /// no longer used (docs/agent.md, "Locked"), only a key a command puts
        /// back in the kernel keyring.
        var locked = false
    }
    private let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)
    private var listener: Int32 = -1
    /// The socket came from systemd, which keeps it: it is not removed on stop.
    private var activated = false

    init(settings: Settings) { self.settings = settings }

    /// The agent's own settings, without its passphrase sources once locked.
    private var own: Settings {
        guard state.withLock({ $0.locked }) else { return settings }
        var environment = settings.environment
        for v in EnvironmentVariable.passphraseSources { environment[v.name] = nil }
        return Settings(environment: environment)
    }

    func serve() throws -> Never {
        ProcessHardening.disableCoreDumps()
        SecretServiceStore.keepsItemPaths = true
        if let passed = activatedSocket() {
            listener = passed
            activated = true
        } else {
            listener = try AgentSocket.listen(AgentSocket.path(settings))
        }
        signal(SIGPIPE, SIG_IGN)
        Posix.spawnThread { self.renewAhead() }
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 { continue }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            guard AgentSocket.peerUID(fd) == getuid() else {
                close(fd)
                continue
            }
            Posix.onWorker { self.handle(fd) }
        }
    }

    /// The socket systemd passed (LISTEN_FDS, LISTEN_PID: fd 3), if any.
    func activatedSocket() -> Int32? {
        guard settings[.listenPID] == String(getpid()), settings[.listenFDs] == "1" else { return nil }
        return 3
    }

    private func handle(_ fd: Int32) {
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let body = AgentSocket.receiveFrame(fd) else { return }
        guard body.first == UInt8(ascii: "{") else {
            _ = AgentSocket.sendFrame(fd, run(AgentCommandRequest(bytes: body)).bytes)
            return
        }
        guard let request = AgentSocket.json(body) else { return }
        var answer: [String: JSONValue] = ["v": .integer(AgentSocket.version)]
        let op = request["op"]?.string
        guard request["v"] == .integer(AgentSocket.version),
            request["scope"] == settings.agentScope || op == "status" || op == "stop" || op == "lock"
        else {
            answer["refused"] = .string("another version or scope")
            _ = AgentSocket.send(fd, .object(answer))
            return
        }
        state.withLock { $0.requests += 1 }
        let (result, _, stderr) = Output.capturing { try serving(own) { try self.answer(request) } }
        switch result {
        case .success(let value): answer["ok"] = value
        case .failure(let error as TokenVaultError): answer["error"] = error.wire
        case .failure(let error): answer["error"] = TokenVaultError.internal(error.errorText).wire
        }
        answer["stderr"] = .string(stderr)
        _ = AgentSocket.send(fd, .object(answer))
        if op == "stop" {
            if !activated { unlink(AgentSocket.path(settings)) }
            exit(0)
        }
    }

    /// Runs a client's command as it would have run itself, with its
    /// environment: same output, same exit status. Declined (the client runs
    /// it) for another scope, for help and version text, and for a vault the
    /// agent cannot open but the client has a passphrase source for.
    private func run(_ request: AgentCommandRequest?) -> AgentCommandReply {
        guard let request else { return .declined("another version") }
        // Only the commands the agent is there for; anything else is the client's own to run.
        guard let command = request.arguments.first, AgentClient.commands.contains(command) else {
            return .declined("not a command the agent runs")
        }
        // The client's settings, with the agent's own passphrase sources (a client never sends its own).
        var environment = request.environment
        let own = self.own
        for v in EnvironmentVariable.passphraseSources { environment[v.name] = own[v] }
        let client = Settings(environment: environment)
        guard client.agentScope == settings.agentScope else { return .declined("another scope") }
        state.withLock { $0.requests += 1 }
        let stdout = Terminal.Stdout(
            isTerminal: request.terminal != nil, columns: request.terminal.flatMap { $0 > 0 ? $0 : nil })
        let (result, out, err) = Output.capturing {
            serving(client, stdout: stdout) {
                TokenVaultMain.execute(request.arguments) { error in
                    if case TokenVaultError.permission = error { return request.hasPassphraseSource }
                    return TokenVaultMain.isHelpText(error)
                }
            }
        }
        guard case .success(let status?) = result else { return .declined("the client's to run") }
        return .ran(status: status, stdout: Array(out.utf8), stderr: Array(err.utf8))
    }

    /// Runs `body` as the agent answering a client of `settings` whose stdout
    /// is `stdout`: each `Context` made meanwhile is the agent's (docs/agent.md).
    private func serving<T>(
        _ settings: Settings, stdout: Terminal.Stdout = Terminal.Stdout(isTerminal: false),
        _ body: () throws -> T
    ) rethrows -> T {
        Context.agentRequest = Context.AgentRequest(settings: settings, stdout: stdout) { id, c, context in
            self.handedOut(id, c, context)
        }
        defer { Context.agentRequest = nil }
        return try body()
    }

    /// A client was handed `c`: it is renewed ahead of need from now on.
    /// One new to the agent, or one due soon, gets the renewal loop's attention now.
    private func handedOut(_ id: CredentialID, _ c: Credential, _ context: Context) {
        let new = state.withLock { $0.asked.updateValue(context.clock.now, forKey: id) == nil }
        let soon = (try? context.config.minValidSeconds).map { $0 + 60 + 16 } ?? 136
        if new || c.expiresAt.map({ $0 - context.clock.now < soon }) == true { wake.signal() }
    }

    private func answer(_ request: JSONValue) throws -> JSONValue {
        switch request["op"]?.string {
        case "status":
            let now = state.withLock { $0 }
            return .object([
                "pid": .integer(Int64(getpid())), "version": .integer(AgentSocket.version),
                "uptime": .integer(Int64(Date().timeIntervalSince1970) - started),
                "requests": .integer(Int64(now.requests)), "kept": .integer(Int64(now.asked.count)),
                "renewals": .integer(Int64(now.renewals)), "same_scope": .bool(request["scope"] == settings.agentScope),
                "locked": .bool(now.locked),
            ])
        case "stop":
            return .object([:])
        case "lock":
            // Its own passphrase sources are not used again; a key in the kernel
            // keyring (put back by a command the user runs) still opens the vault.
            state.withLock { $0.locked = true }
            return .object([:])
        case let op where op == "usable" || op == "stored":
            guard let service = request["service"]?.string, let account = request["account"]?.string else {
                throw TokenVaultError.usage("the request names no service")
            }
            let context = Context()
            defer { context.flushWarnings() }
            let id = CredentialID(service: try ServiceKey(parsing: service), account: account)
            let minValid = request["min_valid"]?.int64.map { Int($0) }
            let refresh = request["refresh"] == .bool(true)
            let c =
                op == "usable"
                ? try context.usable(id, minValid: minValid, refresh: refresh, force: request["force"] == .bool(true))
                : try context.stored(id, minValid: minValid, refresh: refresh)
            return c.wire
        default:
            throw TokenVaultError.usage("unknown request")
        }
    }

    // MARK: Renewal ahead of need

    /// Renews each credential a client asked for within `agent_keep` a little
    /// before it would need renewing on a `get` (`min_valid`), so that `get`
    /// does not wait for the provider: under the one renewal lock every
    /// process and every fleet host takes, so it is one renewal however many
    /// agents and commands want it. A refused renewal is recorded as by any
    /// command, and such a credential is not tried again; a temporary failure
    /// is tried again a minute later.
    private func renewAhead() {
        while true {
            let pause = renewDue()
            _ = wake.wait(timeout: .now() + pause)
        }
    }

    /// Starts the renewals that are due, each on a thread of its own (a
    /// provider that hangs holds up only its own credential); the seconds
    /// until the next one is due.
    private func renewDue() -> Double {
        let asked = state.withLock { $0.asked }
        if asked.isEmpty { return 300 }
        let own = self.own
        return serving(own) {
            let context = Context()
            defer { context.flushWarnings() }
            let now = context.clock.now
            guard let config = try? context.config, let vault = try? context.vault() else { return 60 }
            var next: Int64 = 300
            for (id, at) in asked {
                if now - at > config.agentKeepSeconds {
                    state.withLock { $0.asked[id] = nil }
                    continue
                }
                guard let c = try? vault.load(id), let expires = c.expiresAt, c.refusal == nil,
                    c.refreshToken != nil || context.grant(of: c.provider ?? "")?.fetchesAgain == true
                else { continue }
                // Ahead of `get` by a minute, and a few seconds more that differ per
                // credential, so that many agents do not all wake at once.
                let lead =
                    config.minValidSeconds + 60
                    + Int64(id.description.utf8.reduce(0) { ($0 &* 31 &+ Int($1)) & 0xFFFF } % 16)
                let due = expires - lead
                guard due <= now else {
                    next = min(next, due - now)
                    continue
                }
                // One renewal per credential at a time; the one under way wakes this loop when it ends.
                let wait = state.withLock { s -> Int64? in
                    if s.renewing.contains(id) { return 300 }
                    if let last = s.failed[id], now - last < 60 { return 60 - (now - last) }
                    s.renewing.insert(id)
                    return nil
                }
                if let wait {
                    next = min(next, wait)
                    continue
                }
                Posix.onWorker { self.renew(id, lead: lead, loaded: c, settings: own) }
            }
            return Double(max(next, 1))
        }
    }

    /// One renewal ahead of need, on its own thread.
    private func renew(_ id: CredentialID, lead: Int64, loaded: Credential, settings: Settings) {
        serving(settings) {
            let context = Context()
            defer { context.flushWarnings() }
            let now = context.clock.now
            do {
                _ = try context.refresher().usable(id, minValid: lead, loaded: loaded)
                state.withLock {
                    $0.failed[id] = nil
                    $0.renewals += 1
                    $0.renewing.remove(id)
                }
            } catch {
                state.withLock {
                    $0.failed[id] = now
                    $0.renewing.remove(id)
                }
            }
        }
        wake.signal()
    }
}
