import Dispatch

/// A value made on another thread for this process's first use of a file
/// (the `get` hot path: docs/benchmarks.md, "The vault read ahead"): marked
/// before that thread starts, finished there, and taken once, waited for, by
/// the first use of the same path. There is at most one per slot.
final class Ahead<Value>: @unchecked Sendable {
    let path: String
    private let done = DispatchSemaphore(value: 0)
    /// Written once, before `done` is signalled.
    private var value: Value?

    fileprivate init(path: String) { self.path = path }

    /// Hands the value (nil: none could be made) to whoever takes it.
    func finish(_ value: Value?) {
        self.value = value
        done.signal()
    }

    fileprivate func wait() -> Value? {
        done.wait()
        return value
    }
}

/// Where an `Ahead` waits to be taken.
final class AheadSlot<Value>: Sendable {
    private let pending = Locked<Ahead<Value>?>(nil)

    /// Marks `path` as being made ahead; the caller finishes it on another thread.
    func mark(path: String) -> Ahead<Value> {
        let ahead = Ahead<Value>(path: path)
        pending.withLock { $0 = ahead }
        return ahead
    }

    /// What was made ahead for `path` (or, with nil, for any path), waited
    /// for and taken once; nil when nothing was.
    func take(path: String?) -> Value? {
        let ahead = pending.withLock { p -> Ahead<Value>? in
            guard let a = p, path == nil || a.path == path else { return nil }
            p = nil
            return a
        }
        return ahead?.wait()
    }
}
