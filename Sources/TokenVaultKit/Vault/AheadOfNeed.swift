import FoundationEssentials

/// When the agent renews a credential ahead of need (docs/agent.md, "Renewal
/// ahead of need"), decided from the credential's state (`CredentialStatus`)
/// and a clock alone, so that it is the same for every lifetime: the lead
/// is `min_valid` + 60 s + a few seconds that differ per credential, but
/// never more than half the token's lifetime. A 300 s token is renewed about
/// two minutes before it expires, a 30 s one about 15 s before, a 4 s one 2 s
/// before: at most twice per lifetime, never in a loop.
public struct AheadOfNeed: Sendable {
    public var minValid: Int64

    public init(minValid: Int64) { self.minValid = minValid }

    /// What to do with a credential now.
    public enum Decision: Equatable, Sendable {
        /// Renew it now.
        case renew
        /// Nothing before this second.
        case wait(until: Int64)
        /// Never ahead of need: no expiry, no way to renew, or refused.
        case never(String)
    }

    /// A few seconds (0 to 15) that differ per credential, so that many
    /// agents do not all wake at once.
    public static func jitter(_ id: CredentialID) -> Int64 {
        Int64(id.description.utf8.reduce(0) { ($0 &* 31 &+ Int($1)) & 0xFFFF } % 16)
    }

    /// How many seconds before its expiry `c` is renewed: by the margin rule
    /// every command follows (`CredentialStatus.margin`), with a minute and
    /// the jitter more than `min_valid`, and one second at least.
    public func lead(for c: Credential) -> Int64 {
        max(CredentialStatus.margin(minValid + 60 + Self.jitter(c.id), for: c), 1)
    }

    /// The second `c` falls due, or why it never does.
    public func decision(for c: Credential, status: CredentialStatus, now: Int64) -> Decision {
        guard let expires = c.expiresAt else { return .never("it does not expire") }
        if let refusal = status.refusal { return .never("the provider refused: \(refusal.reason)") }
        if case .impossible(let why) = status.renewal { return .never(why) }
        let due = expires - lead(for: c)
        return due <= now ? .renew : .wait(until: due)
    }

    /// Renews `c` now through `refresher`, whose state may still say it is
    /// valid for `get` (it is renewed ahead of that: forced, so a temporary
    /// failure is this renewal's error, never the old token handed back):
    /// the refresher takes the renewal lock, and a renewal another process
    /// made meanwhile is taken instead of asking the provider again. The
    /// credential as stored afterwards, and whether the provider was asked
    /// and answered.
    public func renew(_ c: Credential, with refresher: Refresher) throws -> (Credential?, asked: Bool) {
        var asked = false
        var r = refresher
        let told = r.exchanged
        r.exchanged = { id in
            asked = true
            told?(id)
        }
        let renewed = try r.usable(c.id, minValid: minValid, force: true, loaded: c)
        return (renewed, asked)
    }

    /// When to try again after a renewal that failed for now: a minute
    /// later, or sooner when the token has less than two minutes left.
    public func retry(after failure: Int64, for c: Credential) -> Int64 {
        let left = (c.expiresAt ?? failure) - failure
        return failure + min(60, max(left / 2, Self.floor))
    }

    /// The fewest seconds between two renewals of one credential, whatever
    /// the last one's outcome: a renewal that finds the record still due
    /// (another process stored one as short, a clock that jumped) waits too.
    public static let floor: Int64 = 5

    /// The earliest second of the next renewal of `c` after one at `attempt`:
    /// the retry rule after a failure, else the floor.
    public func earliest(after attempt: Int64, failed: Bool, for c: Credential) -> Int64 {
        failed ? retry(after: attempt, for: c) : attempt + Self.floor
    }
}
