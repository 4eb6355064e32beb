import TokenVaultKit

/// A clock the test moves (`now` in unix seconds), for the policies that
/// decide by the time: renewal ahead of need, hand-out, the daily warning.
public final class TestClock: Clock, @unchecked Sendable {
    public var now: Int64
    public init(_ now: Int64) { self.now = now }
}
