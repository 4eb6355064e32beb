import CDispatch
internal import CTokenVault
import Dispatch
import FoundationEssentials
import Glibc

/// Threads: one started for a piece of work, a pool kept for calls that may
/// never answer, and the locks and per-thread values their work shares.
extension Posix {
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
