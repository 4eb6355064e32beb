import Dispatch
import FoundationEssentials
import Glibc

/// Where time comes from, so tests can set it.
public protocol Clock: Sendable {
    /// Unix seconds.
    var now: Int64 { get }
}

public struct SystemClock: Clock {
    public init() {}
    public var now: Int64 { Int64(Date().timeIntervalSince1970) }
}

public struct FixedClock: Clock {
    public var now: Int64
    public init(_ now: Int64) { self.now = now }
}
