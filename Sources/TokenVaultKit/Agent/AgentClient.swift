import Dispatch
import FoundationEssentials
import Glibc

/// A command's side of the agent (docs/agent.md): one request per
/// connection. Anything short of a proper answer — no agent, a dead socket,
/// another version, another scope, a vault the agent cannot open but this
/// command could — sends the command the direct way, at once.
public enum AgentClient {
    /// Seconds a client waits for an answer when it has not read the config
    /// (the agent may be renewing: the config's HTTP timeout, 30 s by default, and some).
    public static let defaultTimeout = 45

    /// The commands the agent runs whole for a client (docs/agent.md): they
    /// print, and read neither a terminal nor stdin.
    public static let commands = ["get", "header", "status", "list"]

    /// What an agent of this version says to a client of another build (of the JSON protocol).
    public static let anotherBuild = AgentDecline.anotherBuild.words

    /// An agent that declined this client's build or protocol version (an
    /// upgrade, a removal, another copy of tokenvault) is stopped, so that it
    /// neither serves on nor puts a key back in the cache (docs/agent.md,
    /// "Upgrades"); the next command starts one of its own build. It is asked
    /// over its socket (every build of this protocol answers `stop`, with its
    /// pid). A signal goes only to a pid the agent reported that is also the
    /// socket's listener (SO_PEERCRED) and reads as a tokenvault agent in
    /// /proc: never to a process that merely holds the socket, such as
    /// systemd for a socket unit. Nil when no agent answered.
    @discardableResult
    public static func stopOther(_ settings: Settings) -> StoppedAgent? {
        guard let fd = AgentSocket.connect(AgentSocket.path(settings), seconds: 5) else { return nil }
        defer { close(fd) }
        let listener = AgentSocket.peerPID(fd)
        let request: JSONValue = .object([
            "v": .integer(AgentSocket.version), "op": .string("stop"), "build": .string(AgentSocket.build),
        ])
        guard AgentSocket.send(fd, request), let answer = AgentSocket.receive(fd) else { return nil }
        let reported = (answer["ok"]?["pid"] ?? answer["pid"])?.int64.flatMap { pid_t(exactly: $0) }
        let stopped = StoppedAgent(pid: reported, ownsSocket: reported != nil && reported == listener)
        if answer["v"] != .integer(AgentSocket.version) || answer["ok"] == nil,
            let pid = reported, stopped.ownsSocket, isAgentProcess(pid)
        {
            kill(pid, SIGTERM)  // another protocol that has no `stop` for this one
        }
        return stopped
    }

    /// An agent asked to stop: its pid as it reported it, and whether the
    /// socket is its own (else systemd's, which starts the next agent itself).
    public struct StoppedAgent {
        public var pid: pid_t?
        public var ownsSocket: Bool

        public init(pid: pid_t?, ownsSocket: Bool) {
            (self.pid, self.ownsSocket) = (pid, ownsSocket)
        }

        /// Waits up to `seconds` for the agent to have left; true once it has.
        public func waitGone(_ seconds: Double) -> Bool {
            guard let pid else { return false }
            let until = Date().timeIntervalSince1970 + seconds
            while access("/proc/\(pid)", F_OK) == 0 {
                guard Date().timeIntervalSince1970 < until else { return false }
                Posix.sleep(0.05)
            }
            return true
        }
    }

    /// `pid` is this user's tokenvault agent: `tokenvault agent …` by its
    /// command line, of this uid.
    public static func isAgentProcess(_ pid: pid_t) -> Bool {
        var st = stat()
        guard stat("/proc/\(pid)", &st) == 0, st.st_uid == getuid(),
            let line = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))
        else { return false }
        let argv = line.split(separator: 0, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        return argv.count >= 2 && Posix.basename(argv[0]).hasPrefix("tokenvault") && argv[1] == "agent"
    }

    /// What became of a command offered to the agent (`run`).
    public enum Offer {
        /// The agent ran it: what it printed on each stream, and its exit status.
        case ran(status: Int32, stdout: [UInt8], stderr: [UInt8])
        /// Run it here; what the offer found is the plan's for the rest of
        /// the run, and `said` the line `--verbose` prints about it.
        case direct(Plan.AgentFinding, said: String?)
    }

    /// Has the agent run `args` when it is one of `commands` and an agent of
    /// this scope answers; `terminal`: this process's stdout is a terminal
    /// that many columns wide (0: it does not say), nil: it is not one. No
    /// JSON and no argument parsing on this side: a `get` costs little more
    /// than starting the process.
    public static func run(_ args: [String], terminal: Int?) -> Offer {
        guard let first = args.first, commands.contains(first), !AgentCommandRequest.readsStandardInput(args) else {
            return .direct(Plan.AgentFinding(), said: nil)
        }
        let sources = EnvironmentVariable.passphraseVariables
        let settings = Settings.reading(EnvironmentVariable.sentToAgent + sources)
        guard !AgentCommandRequest.keepsNothing(args, settings) else {
            return .direct(Plan.AgentFinding(), said: nil)
        }
        guard Plan(settings: settings).agentAnswers else {
            return .direct(Plan.AgentFinding(unanswered: settings.agentAllowed), said: nil)
        }
        guard let fd = AgentSocket.connect(AgentSocket.path(settings), seconds: defaultTimeout) else {
            return .direct(Plan.AgentFinding(unanswered: true), said: nil)  // a socket left by an agent that is gone
        }
        defer { close(fd) }
        var environment = settings.environment
        for v in sources { environment[v.name] = nil }
        // A terminal on stdin is a passphrase source too: the prompt (docs/reference.md).
        let request = AgentCommandRequest(
            arguments: args, environment: environment,
            hasPassphraseSource: sources.contains { settings[$0] != nil } || isatty(0) == 1,
            terminal: terminal, child: clientContext)
        let reply =
            AgentSocket.sendFrame(fd, request.bytes)
            ? AgentSocket.receiveFrame(fd).flatMap(AgentCommandReply.init) : nil
        if case .ran(let status, let out, let err)? = reply { return .ran(status: status, stdout: out, stderr: err) }
        // The command runs here, and does not ask again.
        var finding = Plan.AgentFinding(declined: true)
        if case .declined(let why)? = reply, why.isOtherBuild, let stopped = stopOther(settings) {
            // An agent of this build is started, unless systemd owns the socket and starts it.
            finding.replaced = stopped.ownsSocket
        } else if case .declined(.sessionGone)? = reply {
            finding.replaced = true  // it leaves by itself
        }
        // `--verbose` says why (docs/agent.md, "Falling back").
        let why = if case .declined(let why)? = reply { why.words } else { "it did not answer" }
        return .direct(
            finding,
            said: args.contains("--verbose") ? "the agent did not run this command (\(why)); running it here" : nil)
    }

    /// After a command the agent could have answered, when none listened:
    /// starts one in the background for the commands after it (docs/agent.md,
    /// "Started on first use"), unless `agent = false` in the config or
    /// TOKENVAULT_AGENT=off. Detached in a session of its own, without a
    /// passphrase source (it answers from the key this command cached, or
    /// declines); one agent per runtime directory, however many start it
    /// (its lock decides). It stops after `agent_idle` seconds without a request.
    public static func startOnFirstUse(_ args: [String], plan: Plan) {
        let (found, settings) = (plan.agentFinding, plan.settings)
        guard (found.unanswered && !found.declined) || found.replaced, let first = args.first, commands.contains(first)
        else { return }
        guard settings.agentStartsOnUse, !AgentCommandRequest.keepsNothing(args, settings),
            let config = try? Config.load(settings), config.startsAgent, config.backendChoice != BackendChoice.none
        else { return }
        // The agent stopped for another build leaves once its work is done: a moment.
        var free = AgentSocket.lockFree(settings)
        for _ in 0..<(found.replaced ? 40 : 0) where !free {
            Posix.sleep(0.05)
            free = AgentSocket.lockFree(settings)
        }
        guard free, let me = realpath("/proc/self/exe", nil) else { return }
        defer { Glibc.free(me) }
        // Started in / (AgentServer.serve) with what reaches the session and its settings alone.
        _ = try? Posix.startDetached(
            ["tokenvault", "agent", "--foreground", "--started-on-use"],
            env: ChildEnvironment.forAgent(settings.environment), path: String(cString: me))
    }

    /// This process as a command the agent runs for it sees it: its whole
    /// environment and its working directory (docs/agent.md).
    public static var clientContext: ChildContext {
        ChildContext(environment: ProcessInfo.processInfo.environment, directory: ChildContext.currentDirectory)
    }

    /// The agent's answer to `request` (an object; version and scope are
    /// added): its `ok` value, or its failure thrown; what it printed on
    /// stderr goes to `notices`. Nil: go direct.
    public static func ask(
        _ op: String, _ fields: [String: JSONValue], plan: Plan, seconds: Int, notices: Notices
    ) throws -> JSONValue? {
        let settings = plan.settings
        guard plan.agentAnswers, let fd = AgentSocket.connect(AgentSocket.path(settings), seconds: seconds) else {
            return nil
        }
        defer { close(fd) }
        var request = fields
        request["v"] = .integer(AgentSocket.version)
        request["op"] = .string(op)
        request["scope"] = settings.agentScope
        request["build"] = .string(AgentSocket.build)
        let client = clientContext
        request["directory"] = client.directory.map { .string($0) }
        request["environment"] = .object(
            (client.environment ?? [:]).filter { !ChildEnvironment.isPrivate($0.key) }.mapValues { .string($0) })
        guard AgentSocket.send(fd, .object(request)), let answer = AgentSocket.receive(fd) else { return nil }
        guard answer["v"] == .integer(AgentSocket.version), answer["refused"]?.string != anotherBuild else {
            // Another build or protocol version: stopped, and this command goes direct.
            stopOther(settings)
            return nil
        }
        if let error = answer["error"] {
            guard let failure = TokenVaultError(wire: error) else { return nil }
            // The agent cannot open the vault, but this command has a passphrase source of its own.
            if case .permission = failure,
                EnvironmentVariable.passphraseVariables.contains(where: { settings[$0] != nil })
            {
                return nil
            }
            notices.passOn(answer["stderr"]?.string ?? "")
            throw failure
        }
        guard let ok = answer["ok"] else { return nil }
        notices.passOn(answer["stderr"]?.string ?? "")
        return ok
    }

    /// Tells the agent of this runtime directory, if one runs, that the vault
    /// is locked (docs/agent.md, "Locked"), whatever TOKENVAULT_AGENT says: it
    /// confirms, or (another build, no answer) it is asked to stop over its
    /// socket and waited for. Throws when an agent neither confirmed nor
    /// left: it may cache the key again. `lock` has forgotten the key first.
    public static func lock(settings: Settings) throws {
        let path = AgentSocket.path(settings)
        guard let fd = AgentSocket.connect(path, seconds: 2) else { return }  // none, or a socket left behind
        let request: JSONValue = .object([
            "v": .integer(AgentSocket.version), "op": .string("lock"), "scope": settings.agentScope,
            "build": .string(AgentSocket.build),
        ])
        let confirmed =
            AgentSocket.send(fd, request)
            && AgentSocket.receive(fd).map { $0["v"] == .integer(AgentSocket.version) && $0["ok"] != nil } == true
        close(fd)
        if confirmed { return }
        let stopped = stopOther(settings)
        if stopped?.waitGone(3) == true { return }
        let who = stopped?.pid.map { "the agent (process \($0))" } ?? "the agent"
        throw TokenVaultError.temporary(
            "\(who) did not confirm the lock and did not stop, so it may cache the key again; stop it (tokenvault agent stop), then run tokenvault lock again"
        )
    }

    /// A credential from the agent for `op` (`usable` or `stored`), or nil to go direct.
    static func credential(
        _ op: String, _ id: CredentialID, minValid: Int?, refresh: Bool, force: Bool, plan: Plan, timeout: Int,
        notices: Notices
    ) throws -> Credential? {
        var fields: [String: JSONValue] = [
            "service": .string(id.service.description), "account": .string(id.account), "refresh": .bool(refresh),
            "force": .bool(force),
        ]
        if let minValid { fields["min_valid"] = .integer(Int64(minValid)) }
        return try ask(op, fields, plan: plan, seconds: timeout, notices: notices).flatMap(Credential.init(wire:))
    }
}
