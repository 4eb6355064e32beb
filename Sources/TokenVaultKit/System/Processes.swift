import CDispatch
internal import CTokenVault
import Dispatch
import FoundationEssentials
import Glibc

/// Child processes: started in the background, detached as a daemon, or run
/// to their end with their output; and how a shell reports their end.
extension Posix {
    /// Starts `argv` in the background with stdin from /dev/null and its
    /// output on tokenvault's stderr; its process id.
    public static func startInBackground(_ argv: [String], env: [String: String]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, 2, 1)
        return try launch(argv, env: env, actions: &actions)
    }

    /// Starts `argv` as a daemon: its own session, stdin, stdout and stderr
    /// on /dev/null; its process id. `path`: the program, when `argv[0]` is
    /// only the name it shows in `ps`.
    public static func startDetached(_ argv: [String], env: [String: String], path: String? = nil) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        return try launch(argv, env: env, actions: &actions, newSession: true, path: path)
    }

    /// Every child starts with no signal blocked and SIGPIPE, SIGTERM, SIGINT
    /// and SIGHUP at their defaults, whatever this process (the agent, which
    /// ignores SIGPIPE and waits for SIGTERM on a thread of its own) set; and
    /// with stdin, stdout and stderr alone: no descriptor this process got from
    /// its own parent reaches it (an agent started on use would keep a pipe of
    /// the shell that ran the first command open for an hour).
    private static func launch(
        _ argv: [String], env: [String: String], actions: inout posix_spawn_file_actions_t,
        newSession: Bool = false, newGroup: Bool = false, path: String? = nil
    ) throws -> pid_t {
        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        tv_spawn_close_from(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        // POSIX_SPAWN_SETSIGDEF, POSIX_SPAWN_SETSIGMASK, POSIX_SPAWN_SETSID (glibc 2.26), POSIX_SPAWN_SETPGROUP.
        if newGroup { posix_spawnattr_setpgroup(&attributes, 0) }
        posix_spawnattr_setflags(
            &attributes, Int16(0x04 | 0x08 | (newSession ? 0x80 : 0) | (newGroup && !newSession ? 0x02 : 0)))
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path ?? argv[0], &actions, &attributes, cArgs, cEnv)
        guard rc == 0 else {
            throw TokenVaultError.internal("cannot start \(path ?? argv[0]): \(String(cString: strerror(rc)))")
        }
        return pid
    }

    /// Starts `argv` (a path and its arguments) with `env` and stdin from
    /// /dev/null; stdout to /dev/null, or captured when `capture`; stderr
    /// shared with tokenvault's when `showErrors` (a secret command's own
    /// messages), else to /dev/null. Waits for it when `wait`; its exit
    /// status and output.
    @discardableResult
    public static func spawn(
        _ argv: [String], env: [String: String], capture: Bool, showErrors: Bool = false,
        wait: Bool, directory: String? = nil
    ) throws -> (status: Int32, output: [UInt8]) {
        let (pid, out) = try start(argv, env: env, capture: capture, showErrors: showErrors, directory: directory)
        var output: [UInt8] = []
        if capture {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(out, &buffer, buffer.count)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { break }
                output += buffer[..<n]
            }
            close(out)
        }
        guard wait else { return (0, output) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return (exitStatus(status), output)
    }

    /// `argv` started as `spawn` and `spawnBounded` start it: stdin from
    /// /dev/null, in `directory`; stdout into a pipe whose read end is
    /// returned (`capture`; else -1 and stdout to /dev/null); stderr shared with
    /// tokenvault's when `showErrors`, else to /dev/null; in a process group
    /// of its own with `newGroup`.
    private static func start(
        _ argv: [String], env: [String: String], capture: Bool, showErrors: Bool, directory: String?,
        newGroup: Bool = false
    ) throws -> (pid: pid_t, output: Int32) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let directory { tv_spawn_chdir(&actions, directory) }
        var pipeFDs: [Int32] = [-1, -1]
        if capture {
            guard Descriptors.pipe(&pipeFDs) else {
                throw TokenVaultError.internal("cannot create a pipe: \(String(cString: strerror(errno)))")
            }
            posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if !showErrors { posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) }
        do {
            let pid = try launch(argv, env: env, actions: &actions, newGroup: newGroup)
            if capture { close(pipeFDs[1]) }
            return (pid, capture ? pipeFDs[0] : -1)
        } catch {
            if capture { pipeFDs.forEach { close($0) } }
            throw error
        }
    }

    /// How a bounded child ended (`spawnBounded`).
    public enum BoundedEnd: Equatable {
        /// It exited, with this status (128 + a signal that ended it).
        case exited(Int32)
        /// It printed more than it may: ended.
        case tooLarge
        /// It ran longer than it may: ended.
        case tooSlow
    }

    /// `argv` with its stdout captured and stdin from /dev/null, ended (with
    /// its process group, `newGroup`) once it has printed more than
    /// `maxOutput` bytes or run `seconds`. `started` is told its pid first,
    /// and may refuse it (it is then ended at once).
    public static func spawnBounded(
        _ argv: [String], env: [String: String], directory: String?, newGroup: Bool, maxOutput: Int,
        seconds: Double, started: (pid_t) -> Bool = { _ in true }
    ) throws -> (end: BoundedEnd, output: [UInt8]) {
        let (pid, out) = try start(
            argv, env: env, capture: true, showErrors: true, directory: directory, newGroup: newGroup)
        defer { close(out) }
        func end() { kill(newGroup ? -pid : pid, SIGKILL) }
        var output: [UInt8] = []
        var ended: BoundedEnd?
        if !started(pid) {
            end()
            ended = .exited(128 + SIGKILL)
        }
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ended == nil {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else {
                end()
                ended = .tooSlow
                break
            }
            var fd = pollfd(fd: out, events: Int16(POLLIN), revents: 0)
            let ready = poll(&fd, 1, Int32(min(left * 1000, 1000).rounded(.up)))
            if ready < 0, errno == EINTR { continue }
            if ready == 0 { continue }
            let n = read(out, &buffer, buffer.count)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            output += buffer[..<n]
            if output.count > maxOutput {
                end()
                ended = .tooLarge
            }
        }
        Sodium.wipe(&buffer)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return (ended ?? .exited(exitStatus(status)), output)
    }

    /// What a shell says of a child that ended with `status` (waitpid's):
    /// its exit code, or 128 plus the signal that ended it.
    public static func exitStatus(_ status: Int32) -> Int32 {
        status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }
}
