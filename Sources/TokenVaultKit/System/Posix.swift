import CDispatch
internal import CTokenVault
import Dispatch
import FoundationEssentials
import Glibc

/// The few things tokenvault took from the whole of Foundation, on the C
/// library instead: the binary links only FoundationEssentials, which keeps
/// ICU and ~2,300 conformance records out of every start.
public enum Posix {
    /// `path` without its last component (NSString.deletingLastPathComponent).
    public static func dirname(_ path: String) -> String {
        var p = Substring(path)
        while p.count > 1, p.hasSuffix("/") { p = p.dropLast() }
        guard let slash = p.lastIndex(of: "/") else { return "" }
        if slash == p.startIndex { return "/" }
        return String(p[..<slash])
    }

    /// The last component of `path` (NSString.lastPathComponent).
    public static func basename(_ path: String) -> String {
        var p = Substring(path)
        while p.count > 1, p.hasSuffix("/") { p = p.dropLast() }
        guard let slash = p.lastIndex(of: "/") else { return String(p) }
        return p.count == 1 ? "/" : String(p[p.index(after: slash)...])
    }

    public static func sleep(_ seconds: Double) {
        guard seconds > 0 else { return }
        var t = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
        var left = timespec()
        while nanosleep(&t, &left) != 0, errno == EINTR { t = left }
    }

    /// Writes all of `bytes` to `fd` (stdout, stderr), retrying short writes.
    public static func write(_ fd: Int32, _ bytes: [UInt8]) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, bytes.count - done) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return }
            done += n
        }
    }

    public static func write(_ fd: Int32, _ text: String) { write(fd, Array(text.utf8)) }

    /// A file as a reader that must notice a replaced or rewritten one
    /// compares it: device, inode, size, and modification and change times.
    public static func identity(_ st: stat) -> [Int] {
        [
            Int(st.st_dev), Int(st.st_ino), Int(st.st_size), Int(st.st_mtim.tv_sec), Int(st.st_mtim.tv_nsec),
            Int(st.st_ctim.tv_sec), Int(st.st_ctim.tv_nsec),
        ]
    }

    /// Runs `body` on a new thread of `stackSize` bytes. `beside`: work meant
    /// to run while this thread goes on (a head start) starts on another CPU
    /// than this thread's, then may run on any (docs/benchmarks.md, "Threads
    /// that start beside the main one").
    public static func spawnThread(
        stackSize: Int = 1 << 20, beside: Bool = false, _ body: @escaping @Sendable () -> Void
    ) {
        final class Box: @unchecked Sendable {
            let body: @Sendable () -> Void
            init(_ b: @escaping @Sendable () -> Void) { body = b }
        }
        var attr = pthread_attr_t.init()
        pthread_attr_init(&attr)
        pthread_attr_setstacksize(&attr, stackSize)
        pthread_attr_setdetachstate(&attr, Int32(PTHREAD_CREATE_DETACHED))
        var run = body
        if beside, tv_thread_attr_elsewhere(&attr) == 1 {
            run = {
                tv_thread_anywhere()
                body()
            }
        }
        let box = Unmanaged.passRetained(Box(run)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, &attr,
            { arg in
                let box = Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue()
                box.body()
                return nil
            }, box)
        pthread_attr_destroy(&attr)
        if rc != 0 {
            Unmanaged<Box>.fromOpaque(box).release()
            body()  // no thread to be had: run it here
        }
    }

    /// Runs `body` on a thread kept for reuse (`WorkerPool.shared`, the pool
    /// of calls that may never answer: a D-Bus call under a deadline). A
    /// process that runs many short jobs creates no thread per job.
    public static func onWorker(_ body: @escaping @Sendable () -> Void) {
        WorkerPool.shared.run(body)
    }

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
        newSession: Bool = false, path: String? = nil
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
        // POSIX_SPAWN_SETSIGDEF, POSIX_SPAWN_SETSIGMASK, and POSIX_SPAWN_SETSID (glibc 2.26).
        posix_spawnattr_setflags(&attributes, Int16(0x04 | 0x08 | (newSession ? 0x80 : 0)))
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
        let pid: pid_t
        do {
            pid = try launch(argv, env: env, actions: &actions)
            if capture { close(pipeFDs[1]) }
        } catch {
            if capture { pipeFDs.forEach { close($0) } }
            throw error
        }
        var output: [UInt8] = []
        if capture {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(pipeFDs[0], &buffer, buffer.count)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { break }
                output += buffer[..<n]
            }
            close(pipeFDs[0])
        }
        guard wait else { return (0, output) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return (exitStatus(status), output)
    }

    /// What a shell says of a child that ended with `status` (waitpid's):
    /// its exit code, or 128 plus the signal that ended it.
    public static func exitStatus(_ status: Int32) -> Int32 {
        status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }
}

/// A mutex for a few words of shared state.
public final class PosixLock: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    public init() { pthread_mutex_init(&mutex, nil) }
    deinit { pthread_mutex_destroy(&mutex) }
    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return try body()
    }
}

/// A value the threads of a process share, read and changed under its lock.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = PosixLock()
    private var value: Value

    public init(_ value: Value) { self.value = value }

    public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try lock.withLock { try body(&value) }
    }

    /// True the first time only: sets the flag at `key` and says whether it was unset.
    public func once(_ key: WritableKeyPath<Value, Bool>) -> Bool {
        withLock { v in
            defer { v[keyPath: key] = true }
            return !v[keyPath: key]
        }
    }
}

/// Threads kept for reuse: each runs a job, then waits idle for the next
/// (1 MiB of stack each). At most `most` of them: a job beyond that waits in
/// line for the first free one. One idle for `idleSeconds` leaves. Work that
/// may wait long gets a pool of its own, so that it never holds up work of
/// another kind: the agent answers requests, renews and makes its D-Bus calls
/// from three (docs/agent.md, "Requests side by side").
public final class WorkerPool: @unchecked Sendable {
    /// `Posix.onWorker`'s: calls made under a deadline (`withDeadline`).
    public static let shared = WorkerPool(most: 32)
    static let idleSeconds = 30.0
    public let most: Int

    public init(most: Int) { self.most = most }

    final class Worker: @unchecked Sendable {
        let ready = DispatchSemaphore(value: 0)
        /// Set under `state`'s lock by whoever hands the worker a job.
        var job: (@Sendable () -> Void)?
    }

    private struct State {
        var idle: [Worker] = []
        var threads = 0
        var waiting: [@Sendable () -> Void] = []
    }
    private let state = Locked(State())

    /// Runs `body` on an idle thread of the pool, a new one, or (all `most`
    /// busy) the first that comes free.
    public func run(_ body: @escaping @Sendable () -> Void) {
        let (handed, start) = state.withLock { s -> (Worker?, Worker?) in
            if let worker = s.idle.popLast() {
                worker.job = body
                return (worker, nil)
            }
            guard s.threads < most else {
                s.waiting.append(body)
                return (nil, nil)
            }
            s.threads += 1
            let worker = Worker()
            worker.job = body
            return (nil, worker)
        }
        handed?.ready.signal()
        if let start { Posix.spawnThread { [self] in loop(start) } }
    }

    private func loop(_ worker: Worker) {
        while true {
            let job = state.withLock { _ in worker.job }
            job?()
            let next = state.withLock { s -> Bool in
                worker.job = s.waiting.isEmpty ? nil : s.waiting.removeFirst()
                if worker.job == nil { s.idle.append(worker) }
                return worker.job != nil
            }
            if next { continue }
            if worker.ready.wait(timeout: .now() + Self.idleSeconds) == .success { continue }
            // Idle long enough: leave, unless a job was handed over meanwhile.
            let leave = state.withLock { s -> Bool in
                guard let i = s.idle.firstIndex(where: { $0 === worker }) else { return false }
                s.idle.remove(at: i)
                s.threads -= 1
                return true
            }
            if leave { return }
            worker.ready.wait()
        }
    }
}

/// A value each thread has its own of: what one of the agent's requests sets
/// (its client, what it printed) is seen only by the thread that answers it,
/// so requests run side by side (docs/agent.md, "Requests side by side").
/// The threads that use it are kept ones (`WorkerPool`): a value is
/// reset by whoever set it, not at the thread's end.
public final class ThreadLocal<Value>: @unchecked Sendable {
    private final class Box {
        let value: Value
        init(_ value: Value) { self.value = value }
    }
    private var key = pthread_key_t()

    public init() { pthread_key_create(&key, nil) }

    public var value: Value? {
        get { pthread_getspecific(key).map { Unmanaged<Box>.fromOpaque($0).takeUnretainedValue().value } }
        set {
            if let old = pthread_getspecific(key) { Unmanaged<Box>.fromOpaque(old).release() }
            pthread_setspecific(key, newValue.map { Unmanaged.passRetained(Box($0)).toOpaque() })
        }
    }
}
