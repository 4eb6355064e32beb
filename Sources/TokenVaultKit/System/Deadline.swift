import Dispatch
import FoundationEssentials
import Glibc

/// Runs `body` on a worker thread and gives up waiting after `seconds`:
/// a D-Bus peer that never answers must not hang the command. An abandoned
/// call is left to finish or die with the process. With `waiting`, a wait
/// over a second is shown on a terminal (`WaitLine`) by the waiting thread
/// itself, in one-second slices: no thread more than the call's own.
func withDeadline<T: Sendable>(
    _ seconds: Double, waiting describe: ((_ elapsed: Int) -> String)? = nil,
    _ body: @escaping @Sendable () -> T
) -> T? {
    PendingCall(body).wait(seconds, waiting: describe)
}

/// A call started on a worker thread, waited for in one or more spells: a
/// call that outlived one deadline can be waited for longer without being
/// made again (a second call to a provider that holds the first would ask
/// its user twice).
final class PendingCall<T: Sendable>: @unchecked Sendable {
    private let box = DeadlineBox<T>()
    private let finished = Locked(false)

    init(_ body: @escaping @Sendable () -> T) {
        let box = self.box
        Posix.onWorker {
            box.value = body()
            box.done.signal()
        }
    }

    /// Its answer, when it came within `seconds` (from now); nil otherwise.
    func wait(_ seconds: Double, waiting describe: ((_ elapsed: Int) -> String)? = nil) -> T? {
        if finished.withLock({ $0 }) { return box.value }
        guard let describe, WaitLine.enabled else {
            guard box.done.wait(timeout: .now() + seconds) == .success else { return nil }
            return done()
        }
        let deadline = DispatchTime.now() + seconds
        var elapsed = 0
        defer { if elapsed > 0 { WaitLine.clear() } }
        while box.done.wait(timeout: min(.now() + 1, deadline)) == .timedOut {
            guard DispatchTime.now() < deadline else { return nil }
            elapsed += 1
            WaitLine.draw(describe(elapsed))
        }
        return done()
    }

    private func done() -> T? {
        finished.withLock { $0 = true }
        return box.value
    }
}

private final class DeadlineBox<T>: @unchecked Sendable {
    var value: T?
    let done = DispatchSemaphore(value: 0)
}
