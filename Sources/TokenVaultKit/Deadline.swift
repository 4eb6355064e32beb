import Dispatch
import FoundationEssentials
import Glibc

/// Runs `body` on its own thread and gives up waiting after `seconds`:
/// a D-Bus peer that never answers must not hang the command. An abandoned
/// call is left to finish or die with the process.
func withDeadline<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () -> T) -> T? {
    let box = DeadlineBox<T>()
    Posix.spawnThread(stackSize: 1 << 20) {
        box.value = body()
        box.done.signal()
    }
    guard box.done.wait(timeout: .now() + seconds) == .success else { return nil }
    return box.value
}

private final class DeadlineBox<T>: @unchecked Sendable {
    var value: T?
    let done = DispatchSemaphore(value: 0)
}
