import Dispatch

/// A value made on another thread for this run's first use of a file (a
/// `get`'s head start: docs/benchmarks.md, "The vault read ahead"): made by the
/// run's `Plan` before that thread starts, finished there, and taken once,
/// waited for, by what the plan hands it to.
final class HeadStart<Value>: @unchecked Sendable {
    let path: String
    private let done = DispatchSemaphore(value: 0)
    /// Written once, before `done` is signalled.
    private var value: Value?
    private let taken = Locked(false)

    init(path: String) { self.path = path }

    /// Hands the value (nil: none could be made) to whoever takes it.
    func finish(_ value: Value?) {
        self.value = value
        done.signal()
    }

    /// The value, waited for; nil when none could be made, and for every
    /// taker after the first.
    func take() -> Value? {
        let first = taken.withLock { t -> Bool in
            defer { t = true }
            return !t
        }
        guard first else { return nil }
        done.wait()
        return value
    }
}
