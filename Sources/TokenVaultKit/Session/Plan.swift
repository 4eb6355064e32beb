import Dispatch
import Glibc

/// What one run decides once, before its command needs it (docs/design.md,
/// "A run: its session and its plan"): whether an agent answers it, which
/// backend and who chose it, whether there is a session bus to ask. Every
/// part of the run that needs one of these asks the plan, never the air
/// again. A `get`'s head start (the Secret Service readied, or the config
/// read and the file vault opened, while its arguments are parsed) is made
/// here and passed to what uses it, taken once. ("Ahead" is left to the
/// agent's renewals ahead of need.)
///
/// Each answer is kept as first given, whichever thread asked; a head
/// start is finished on another thread and waited for by its taker.
public final class Plan: @unchecked Sendable {
    public let settings: Settings

    /// What the entry point found when it offered its command to the agent
    /// (`AgentClient.run`), for the rest of the run.
    public struct AgentFinding: Sendable, Equatable {
        /// No agent listened (no socket, or one left by an agent that is gone).
        public var unanswered = false
        /// One answered and did not run the command: nothing more is asked of it.
        public var declined = false
        /// The one that answered was of another build and was stopped: this
        /// run starts one of its own (unless systemd owns the socket).
        public var replaced = false

        public init(unanswered: Bool = false, declined: Bool = false, replaced: Bool = false) {
            self.unanswered = unanswered
            self.declined = declined
            self.replaced = replaced
        }
    }

    public let agentFinding: AgentFinding
    /// This run is the agent's own (a client's request, or its renewals): it never asks an agent.
    public let isAgent: Bool

    /// The agent's config cache (nil in a command, which reads the config once).
    public let configCache: ConfigCache?

    public init(
        settings: Settings, agentFinding: AgentFinding = AgentFinding(), isAgent: Bool = false,
        configCache: ConfigCache? = nil
    ) {
        self.settings = settings
        self.agentFinding = agentFinding
        self.isAgent = isAgent
        self.configCache = configCache
    }

    // MARK: The agent

    /// The answers so far.
    private struct Answers {
        var agent: Bool?
        var backend: Result<(choice: BackendChoice, chosenBy: Settings.ChosenBy), Error>?
        var missingBus: String??
    }
    private let answers = Locked(Answers())

    /// The answer at `key`: the first one given, decided (outside the lock)
    /// when none is yet; whichever thread asks first.
    private func once<T>(_ key: WritableKeyPath<Answers, T?>, _ decide: () -> T) -> T {
        if let known = answers.withLock({ $0[keyPath: key] }) { return known }
        let decided = decide()
        return answers.withLock { a in
            if a[keyPath: key] == nil { a[keyPath: key] = decided }
            return a[keyPath: key]!
        }
    }

    /// An agent's socket is there to try (one lstat, the first time it is
    /// asked): not in the agent itself, not with `TOKENVAULT_AGENT=off`, and
    /// not once the entry point found none answering or was declined.
    public var agentAnswers: Bool {
        once(\.agent) {
            guard !isAgent, settings.agentAllowed, !agentFinding.declined, !agentFinding.unanswered else {
                return false
            }
            var st = stat()
            return lstat(AgentSocket.path(settings), &st) == 0 && st.st_mode & S_IFMT == S_IFSOCK
        }
    }

    // MARK: The backend and the bus

    /// The backend and who chose it: `TOKENVAULT_BACKEND`, else the config's
    /// `backend`, else auto. Decided the first time it is asked (a config
    /// that cannot be read is that time's error, and every later one's).
    public func backend(config: () throws -> Config) throws -> (choice: BackendChoice, chosenBy: Settings.ChosenBy) {
        try once(\.backend) { Result { try settings.backend(config: config) } }.get()
    }

    /// Why there is no session bus to ask, or nil when there is one.
    public var missingBus: String? {
        once(\.missingBus) { SecretServiceStore.missingBus(settings) }
    }

    // MARK: The head start

    // Set by `startHeadStart` on the main thread before the command opens anything; read after.
    /// The config being read, for the run's first load of it.
    private(set) var configHeadStart: HeadStart<Result<Config, Error>>?
    /// The file vault being opened, for the store's first read of it.
    private(set) var vaultHeadStart: HeadStart<VaultHeadStart.Opened>?
    /// The Secret Service being readied, for the store's first call.
    private(set) var secretServiceHeadStart: SecretServiceHeadStart?

    /// The `get` hot path (docs/benchmarks.md): while the command line is
    /// parsed, the Secret Service is readied -- or, when it will not be
    /// asked, the config read and the file vault opened. Nothing when an
    /// agent answers (it holds all of that already). Call once, on the main
    /// thread, before the command opens anything.
    public func startHeadStart() {
        guard !agentAnswers, configHeadStart == nil, secretServiceHeadStart == nil else { return }
        if let started = SecretServiceHeadStart.start(settings, missingBus: missingBus) {
            secretServiceHeadStart = started
            return
        }
        let config = HeadStart<Result<Config, Error>>(path: settings.configPath)
        let vault = HeadStart<VaultHeadStart.Opened>(path: settings.vaultPath)
        configHeadStart = config
        vaultHeadStart = vault
        let (settings, missingBus) = (self.settings, self.missingBus)
        Posix.spawnThread(stackSize: 1 << 22, beside: true) {
            vault.finish(FileStore.openForHeadStart(settings, missingBus: missingBus))
            config.finish(Result { try Config.loadNow(settings, cache: nil) })
        }
    }

    /// Drops, and wipes, what the head start made and nobody took (a command that
    /// failed first): the next run reads the files as they are then.
    public func dropHeadStart() {
        _ = configHeadStart?.take()
        vaultHeadStart?.take()?.plain.wipe()
    }

    /// The config as its first load takes it: what the head start read, else read now.
    public func loadConfig() throws -> Config {
        if let read = configHeadStart?.take() { return try Config.load(settings, headStart: read) }
        return try Config.load(settings, cache: configCache)
    }
}
