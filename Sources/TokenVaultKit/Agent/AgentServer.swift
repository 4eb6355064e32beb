import Dispatch
import FoundationEssentials
import Glibc

/// The agent itself (docs/agent.md): one request per connection, each on
/// a thread of its own and through a fresh `Session` (the config read again
/// when it changed, the store opened through the process's open libsecret
/// session and the kernel keyring's cached key), so nothing is answered from
/// memory. Requests run side by side: each runs with its client's settings,
/// a command through the function the command line hands the agent
/// (`runCommand`: it parses, runs and captures what the command prints on
/// that thread), a credential through a `Session` whose notices are the
/// request's own; and
/// what the agent keeps between requests is in `state`, under its lock,
/// which no request holds while it works. Only the renewal of one credential
/// is one at a time, by that credential's renewal lock, as between processes.
public final class AgentServer: @unchecked Sendable {
    let settings: Settings
    /// Where the agent's own notices go (its log: stderr in the foreground).
    let notices: Notices
    /// Runs a client's command as the command line would for the client, in
    /// a session of `plan` (the client's settings, marked as the agent's own)
    /// that reports each credential handed out through the `AgentRequest`:
    /// its exit status and what it printed, or nil when the client must run
    /// it itself (help text, a vault only the client can open).
    public typealias CommandRunner = @Sendable (AgentCommandRequest, Plan, Session.AgentRequest) -> AgentCommandReply?
    let runCommand: CommandRunner
    /// What decides the agent's idle stop and its renewals: the system's, or a test's.
    var clock: Clock { settings.clock }
    let started: Int64

    /// What the agent keeps between requests.
    struct State {
        var requests = 0
        /// When the last request came (an agent started on first use stops after `agent_idle`).
        var lastRequest: Int64 = 0
        /// The credentials clients asked for, renewed ahead of need (docs/agent.md).
        var schedule = RenewalSchedule()
        /// `tokenvault lock` was run: the agent's own passphrase sources are
        /// no longer used (docs/agent.md, "Locked"), only a key a command puts
        /// back in the kernel keyring.
        var locked = false
        /// Requests being answered and renewals under way: the agent leaves
        /// only once none is (a rotated refresh token is stored first).
        var inFlight = 0
        /// It is leaving: no new renewal starts.
        var leaving = false
        /// The gates of the requests and renewals under way, which `lock`
        /// and `stop` close (docs/agent.md, "Locked").
        var gates: [ObjectIdentifier: RequestGate] = [:]
    }
    let state = Locked(State())
    let wake = DispatchSemaphore(value: 0)
    var listener: Int32 = -1
    /// The socket came from systemd, which keeps it: it is neither shut nor
    /// removed on stop (AgentServer+Listener.swift).
    var activated = false
    /// The socket file as it was when the agent began to serve (device, inode):
    /// one removed or replaced by another agent's is no longer its own.
    var socketIdentity: (dev_t, ino_t)?
    /// Written once when the agent stops listening: the accept loop's poll
    /// wakes and polls the listener no more.
    var stopEnds: [Int32] = [-1, -1]
    /// Three kinds of work, three pools: a request that waits (on a slow
    /// provider, behind another's renewal) never holds up another request, a
    /// renewal, or a D-Bus call under its deadline (`Posix.onWorker`'s own
    /// pool); none of them reads a request (the accept loop does).
    let requests = WorkerPool(most: 512)
    /// What it keeps across the stores it opens: where Secret Service items
    /// were found, the records it decoded (forgotten at `lock`).
    let caches = AgentCaches()
    let renewals = WorkerPool(most: 64)

    /// Started by a command on first use: it stops after `agent_idle` without a request.
    let startedOnUse: Bool

    /// `settings` with the directory it was started in: where its own
    /// relative paths and secret commands are taken from, though it works in /.
    public init(settings: Settings, startedOnUse: Bool = false, notices: Notices, runCommand: @escaping CommandRunner) {
        var settings = settings
        if settings.child.directory == nil { settings.child.directory = ChildContext.currentDirectory }
        self.settings = settings
        self.startedOnUse = startedOnUse
        self.notices = notices
        self.runCommand = runCommand
        started = settings.clock.now
        state.withLock { $0.lastRequest = started }
    }

    /// The agent's own settings, without its passphrase sources once locked.
    var own: Settings {
        guard state.withLock({ $0.locked }) else { return settings }
        var environment = settings.environment
        for v in EnvironmentVariable.passphraseVariables { environment[v.name] = nil }
        return Settings(environment: environment)
    }

    /// Every byte the agent frees is overwritten: glibc's malloc perturbs
    /// what is freed, with the per-thread cache off so that no free skips it.
    /// What the agent decrypted for a client, and every copy a request made of
    /// it, is gone once dropped, not left in freed heap (docs/security.md). The
    /// tunables are read at start only: the agent runs itself again with them,
    /// once, as the same process (a socket from systemd stays fd 3 of this pid).
    static func wipeWhatIsFreed() {
        let ours = "glibc.malloc.tcache_count=0:glibc.malloc.perturb=165"
        let given = getenv("GLIBC_TUNABLES").map { String(cString: $0) }
        guard given?.contains("glibc.malloc.perturb=") != true else { return }
        setenv("GLIBC_TUNABLES", given.map { ours + ":" + $0 } ?? ours, 1)
        execv("/proc/self/exe", CommandLine.unsafeArgv)
        unsetenv("GLIBC_TUNABLES")  // not run again: it serves as it is
        if let given { setenv("GLIBC_TUNABLES", given, 1) }
    }

    public func serve() throws -> Never {
        Self.wipeWhatIsFreed()
        ProcessHardening.disableCoreDumps()
        // No mount kept busy by the directory it was started in (docs/agent.md).
        _ = chdir("/")
        // No request reads the agent's own stdin or terminal: a command that
        // reads stdin is its client's to run (AgentCommandRequest).
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        if null > 0 {
            dup2(null, 0)
            close(null)
        }
        guard Descriptors.pipe(&stopEnds) else {
            throw TokenVaultError.internal("pipe: \(String(cString: strerror(errno)))")
        }
        if let passed = activatedSocket() {
            listener = passed
            activated = true
        } else {
            // One agent per runtime directory: a second one started meanwhile leaves at once.
            try PrivateDirectory.ensure(settings.runtimeDirectory)
            guard let held = try FileLock(path: AgentSocket.lockPath(settings), wait: false) else { exit(0) }
            _ = held  // held for the process's life; the kernel drops it when the agent ends
            listener = try AgentSocket.listen(AgentSocket.path(settings))
        }
        var st = stat()
        if lstat(AgentSocket.path(settings), &st) == 0, st.st_mode & S_IFMT == S_IFSOCK {
            socketIdentity = (st.st_dev, st.st_ino)
        }
        signal(SIGPIPE, SIG_IGN)
        // SIGTERM, SIGINT and SIGHUP are waited for on a thread of their own,
        // which leaves as the idle stop does; every other thread blocks them.
        var stops = sigset_t()
        sigemptyset(&stops)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&stops, signal) }
        pthread_sigmask(SIG_BLOCK, &stops, nil)
        let waited = stops
        Posix.spawnThread {
            var set = waited
            var caught: Int32 = 0
            sigwait(&set, &caught)
            self.leave()
        }
        Posix.spawnThread { self.renewAheadOfNeed() }
        Posix.spawnThread { self.watch() }
        acceptRequests()
    }

    /// Every few seconds (a stat or two, nothing else): the agent leaves when
    /// its socket was removed or replaced (by another agent, or with its
    /// runtime directory at logout), and, when started on first use, once
    /// nobody asked it anything for `agent_idle` seconds (docs/agent.md); a
    /// renewal's end counts as activity.
    private func watch() {
        let every = 3.0
        while true {
            Posix.sleep(every)
            if let (dev, ino) = socketIdentity {
                var st = stat()
                let path = AgentSocket.path(settings)
                if lstat(path, &st) != 0 || st.st_dev != dev || st.st_ino != ino {
                    socketIdentity = nil  // not ours to remove
                    leave()
                }
            }
            forgetRecordsOnceTheKeyIsGone()
            guard startedOnUse else { continue }
            if idleOver(
                at: clock.now, idle: (try? Config.load(settings, cache: caches.config))?.agentIdleSeconds ?? 3600)
            {
                leave()
            }
        }
    }

    /// An agent started on first use is to leave at `now`: nobody asked it
    /// anything for `idle` seconds (0: never), the end of a renewal counting
    /// as activity. One started by hand or by systemd stays.
    func idleOver(at now: Int64, idle: Int64) -> Bool {
        startedOnUse && idle > 0 && now - state.withLock { $0.lastRequest } >= idle
    }

    /// The records the agent decoded stay no longer than the vault's key
    /// (docs/security.md): once it has expired from the kernel keyring, they go.
    private func forgetRecordsOnceTheKeyIsGone() {
        guard !caches.decodedRecords.isEmpty else { return }
        let vault = try? Backends(settings: settings, keyCache: KernelKeyring()).fileVault()
        if let vault, vault.exists, !vault.health().keyCached { caches.decodedRecords.forget() }
    }

    /// A gate for one request or renewal, closed by `lock` and `stop` until `done`.
    func openGate() -> RequestGate {
        let gate = RequestGate()
        let leaving = state.withLock { s -> Bool in
            s.gates[ObjectIdentifier(gate)] = gate
            return s.leaving
        }
        if leaving { gate.close(RequestGate.stopped) }
        return gate
    }

    func done(_ gate: RequestGate) {
        _ = state.withLock { $0.gates.removeValue(forKey: ObjectIdentifier(gate)) }
    }

    /// Closes every gate: nothing more is sent for what is under way, and its
    /// secret commands end (docs/agent.md, "Locked").
    func closeGates(_ why: String) {
        let gates = state.withLock { Array($0.gates.values) }
        for gate in gates { gate.close(why) }
    }

    /// Leaves: stops listening (its socket removed, if still its own), then
    /// exits once no request is being answered and no renewal is under way —
    /// a refresh the provider already answered is stored first; one that has
    /// sent nothing yet sends nothing, and its secret commands are ended.
    func leave() -> Never {
        stopListening()
        state.withLock { $0.leaving = true }
        closeGates(RequestGate.stopped)
        // Bounded by the longest a renewal can take (the HTTP timeout) and some.
        _ = settled(within: Double((try? Config.load(settings, cache: caches.config))?.timeout ?? 30) + 30)
        exit(0)
    }

    /// Waits up to `seconds` (real ones: threads are at work) until no
    /// request is being answered and no renewal is under way; true once so.
    func settled(within seconds: Double) -> Bool {
        let start = Date()
        while state.withLock({ $0.inFlight }) > 0 {
            guard Date().timeIntervalSince(start) < seconds else { return false }
            Posix.sleep(0.05)
        }
        return true
    }

    /// Answers one request whose frame has arrived whole (`body`), on a
    /// worker of `requests`; the connection is closed after.
    func handle(_ fd: Int32, _ body: [UInt8]) {
        state.withLock { $0.inFlight += 1 }
        defer {
            close(fd)
            state.withLock { $0.inFlight -= 1 }
        }
        // A client outside the agent's world is handed only what the agent holds (docs/security.md).
        let confinement = PeerWorld.outside(pid: AgentSocket.peerPID(fd)).map(Confinement.init(why:))
        // `lock` and `stop` close it: this request sends nothing after they are confirmed.
        let gate = openGate()
        defer { done(gate) }
        let request: JSONValue
        switch AgentRequestFrame(body: body) {
        case .command(let command):
            _ = AgentSocket.sendFrame(fd, run(command, confinement: confinement, gate: gate).bytes)
            return
        case .query(let query?): request = query
        case .query(nil): return
        }
        var answer: [String: JSONValue] = ["v": .integer(AgentSocket.version)]
        let op = request["op"]?.string
        guard request["v"] == .integer(AgentSocket.version),
            request["build"]?.string == AgentSocket.build || op == "status" || op == "stop" || op == "lock"
        else {
            answer["refused"] = .string(AgentClient.anotherBuild)
            _ = AgentSocket.send(fd, .object(answer))
            return
        }
        guard differences(request["scope"]).isEmpty || op == "status" || op == "stop" || op == "lock" else {
            answer["refused"] = .string("another version or scope")
            _ = AgentSocket.send(fd, .object(answer))
            return
        }
        state.withLock {
            $0.requests += 1
            $0.lastRequest = self.clock.now
        }
        // `stop`: gone from the socket before it answers; it exits once nothing is in flight.
        if op == "stop" { stopListening() }
        let said = NoticeBuffer()
        let result = Result {
            try self.answer(request, notices: said.notices, confinement: confinement, gate: gate)
        }
        let leftUndone = (op == "usable" || op == "stored") && gate.closed == RequestGate.stopped
        if confinement?.refused == true || leftUndone {
            // Neither an answer nor a failure: the client runs it itself.
            answer["declined"] = .string((leftUndone ? AgentDecline.clientsToRun : .confined).words)
            _ = AgentSocket.send(fd, .object(answer))
            return
        }
        switch result {
        case .success(let value): answer["ok"] = value
        case .failure(let error as TokenVaultError): answer["error"] = error.wire
        case .failure(let error): answer["error"] = TokenVaultError.internal(error.errorText).wire
        }
        answer["stderr"] = .string(said.text)
        _ = AgentSocket.send(fd, .object(answer))
        if op == "stop" { Posix.spawnThread { self.leave() } }
    }

    /// Runs a client's command as it would have run itself, with its
    /// environment: same output, same exit status. Declined (the client runs
    /// it) for another scope, for help and version text, and for a vault the
    /// agent cannot open but the client has a passphrase source for.
    private func run(_ request: AgentCommandRequest?, confinement: Confinement?, gate: RequestGate) -> AgentCommandReply
    {
        guard let request else { return .declined(.anotherVersion) }
        guard request.build == AgentSocket.build else { return .declined(.anotherBuild) }
        // Only the commands the agent is there for; anything else is the client's own to run.
        guard let command = request.arguments.first, AgentClient.commands.contains(command) else {
            return .declined(.notACommand)
        }
        guard !AgentCommandRequest.readsStandardInput(request.arguments) else {
            return .declined(.readsStdin)
        }
        // Relative paths and secret commands are the client's directory's: none known, none guessed.
        guard let directory = request.child.directory, directory.hasPrefix("/") else {
            return .declined(.unknownDirectory)
        }
        // The client's settings, with the agent's own passphrase sources (a client never sends its own).
        var environment = request.environment
        let own = self.own
        for v in EnvironmentVariable.passphraseVariables { environment[v.name] = own[v] }
        var client = Settings(environment: environment)
        client.child = request.child
        client.child.confined = confinement
        client.child.gate = gate
        client.clientCanUnlock = request.hasPassphraseSource
        // Nothing is kept past the client's process: the agent keeps nothing of it either.
        if AgentCommandRequest.keepsNothing(request.arguments, client)
            || (try? Config.load(client, cache: caches.config))?.backendChoice == BackendChoice.none
        {
            return .declined(.clientsToRun)
        }
        let differ = differences(client.agentScope)
        guard differ.isEmpty else { return declined(for: differ) }
        state.withLock {
            $0.requests += 1
            $0.lastRequest = self.clock.now
        }
        let reply = runCommand(request, Plan(settings: client, isAgent: true, configCache: caches.config), self.request)
        // It needed more than the agent holds (a renewal, a secret command): the confined client's own to run.
        if confinement?.refused == true { return .declined(.confined) }
        // The agent is leaving, and this sent nothing: the client runs it itself.
        if gate.closed == RequestGate.stopped { return .declined(.clientsToRun) }
        return reply ?? .declined(.clientsToRun)
    }

    /// What a context of the agent's does beyond a command's (docs/agent.md):
    /// each credential it hands out is kept renewed from then on.
    var request: Session.AgentRequest {
        Session.AgentRequest(caches: caches) { id, c, context in self.handedOut(id, c, context) }
    }

    /// A client was handed `c`: it is renewed ahead of need from now on.
    /// One new to the agent, or one due soon, gets the renewal loop's attention now.
    private func handedOut(_ id: CredentialID, _ c: Credential, _ context: Session) {
        let now = context.clock.now
        let policy = AheadOfNeed(minValid: (try? context.config.minValidSeconds) ?? 60)
        // A confined client's world decides nothing of the renewals (docs/security.md).
        var child = context.settings.child.confined == nil ? context.settings.child : nil
        child?.gate = nil  // the request's own
        // New to the agent, or a record stored meanwhile falling due before the one the loop waits for.
        let sooner = state.withLock { $0.schedule.handedOut(c, at: now, child: child, policy: policy) }
        if sooner { wake.signal() }
    }
}
