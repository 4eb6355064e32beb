import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

/// The agent itself (docs/agent.md): one request per connection, one at a
/// time, each through a fresh `Context` (the config read again, the store
/// opened through the process's open libsecret session and the kernel
/// keyring's cached key), so nothing is answered from memory.
final class AgentServer: @unchecked Sendable {
    let settings: Settings
    private let lock = PosixLock()
    private var requests = 0
    private let started = Int64(Date().timeIntervalSince1970)
    /// When a client last asked for each credential: those are renewed ahead of need.
    private var asked: [CredentialID: Int64] = [:]
    /// When a renewal ahead of need last failed for a temporary reason (tried again a minute later).
    private var failed: [CredentialID: Int64] = [:]
    private var renewals = 0
    private let wake = DispatchSemaphore(value: 0)
    private var listener: Int32 = -1
    /// The socket came from systemd, which keeps it: it is not removed on stop.
    private var activated = false

    init(settings: Settings) { self.settings = settings }

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
        guard request["v"] == .integer(AgentSocket.version),
            request["scope"] == settings.agentScope
                || request["op"]?.string == "status" || request["op"]?.string == "stop"
        else {
            answer["refused"] = .string("another version or scope")
            _ = AgentSocket.send(fd, .object(answer))
            return
        }
        lock.withLock {
            requests += 1
            let (result, _, stderr) = Output.capturing { try serving(settings) { try self.answer(request) } }
            switch result {
            case .success(let value): answer["ok"] = value
            case .failure(let error as TokenVaultError): answer["error"] = error.wire
            case .failure(let error): answer["error"] = TokenVaultError.internal(error.errorText).wire
            }
            answer["stderr"] = .string(stderr)
        }
        _ = AgentSocket.send(fd, .object(answer))
        if request["op"]?.string == "stop" {
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
        // The client's settings, with the agent's own passphrase sources (a client never sends its own).
        var environment = request.environment
        for v in EnvironmentVariable.passphraseSources { environment[v.name] = settings[v] }
        let client = Settings(environment: environment)
        guard client.agentScope == settings.agentScope else { return .declined("another scope") }
        return lock.withLock {
            requests += 1
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
        let new = asked.updateValue(context.clock.now, forKey: id) == nil
        let soon = (try? context.config.minValidSeconds).map { $0 + 60 + 16 } ?? 136
        if new || c.expiresAt.map({ $0 - context.clock.now < soon }) == true { wake.signal() }
    }

    private func answer(_ request: JSONValue) throws -> JSONValue {
        switch request["op"]?.string {
        case "status":
            return .object([
                "pid": .integer(Int64(getpid())), "version": .integer(AgentSocket.version),
                "uptime": .integer(Int64(Date().timeIntervalSince1970) - started),
                "requests": .integer(Int64(requests)), "kept": .integer(Int64(asked.count)),
                "renewals": .integer(Int64(renewals)), "same_scope": .bool(request["scope"] == settings.agentScope),
            ])
        case "stop":
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
            let pause = lock.withLock { serving(settings) { renewDue() } }
            _ = wake.wait(timeout: .now() + pause)
        }
    }

    /// Renews what is due; the seconds until the next one is.
    private func renewDue() -> Double {
        if asked.isEmpty { return 300 }
        let context = Context()
        defer { context.flushWarnings() }
        let now = context.clock.now
        guard let config = try? context.config, let vault = try? context.vault() else { return 60 }
        var next: Int64 = 300
        for (id, at) in asked {
            if now - at > config.agentKeepSeconds {
                asked[id] = nil
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
            if let last = failed[id], now - last < 60 {
                next = min(next, 60 - (now - last))
                continue
            }
            do {
                _ = try context.refresher().usable(id, minValid: lead, loaded: c)
                failed[id] = nil
                renewals += 1
            } catch {
                failed[id] = now
                next = min(next, 60)
            }
        }
        return Double(max(next, 1))
    }
}
