import FoundationEssentials

/// The agent's book of the credentials its clients were handed (docs/agent.md,
/// "Renewal ahead of need"): when each was last asked for, when it next falls
/// due (`AheadOfNeed`), whether a renewal is under way, and how the last one
/// went. Every decision in it is made from the seconds it is given, so the
/// agent's loop and the tests on a test clock take the same steps: `handedOut`
/// when a client gets a credential, `looked` for those still kept, `decide`
/// for each with its stored record, `finished` when a renewal ends.
public struct RenewalSchedule: Sendable {
    /// One credential a client asked for.
    public struct Entry: Sendable {
        /// When a client last asked for it.
        public var askedAt: Int64
        /// When it is next renewed; nil when never ahead of need (`never` says why).
        public var nextRenewal: Int64?
        public var never: String?
        /// The last renewal's second and outcome, in `agent status`'s words.
        public var last: (at: Int64, outcome: String)?
        /// When the last renewal started, and whether it failed for now: the
        /// next one waits (`AheadOfNeed.earliest`), whatever its outcome.
        public var attempt: (at: Int64, failed: Bool)?
        /// A renewal is under way (one per credential at a time).
        public var renewing = false
        /// Where the client that brought the credential to the agent runs a
        /// secret command: its renewals ahead of need run them there too (nil:
        /// the agent's own world, for a credential a confined client asked
        /// for). Another client takes that place only when none had it or the
        /// last renewal there did not succeed (docs/agent.md, "Renewal ahead of need").
        public var child: ChildContext?
        /// The last renewal ahead of need did not succeed.
        public var lastFailed = false
    }

    /// How a renewal ended.
    public enum Outcome: Equatable, Sendable {
        /// Stored: by this renewal (`asked`: the provider answered) or by another process meanwhile.
        case renewed(asked: Bool)
        /// The provider refused: a login is needed; it is not tried again ahead of need.
        case refused(String)
        /// It failed for now: tried again by the retry rule.
        case failed(String)

        var words: String {
            switch self {
            case .renewed(let asked): asked ? "renewed" : "renewed by another process"
            case .refused(let why): "refused: \(why)"
            case .failed(let why): "failed: \(why)"
            }
        }
    }

    public private(set) var entries: [CredentialID: Entry] = [:]
    /// Renewals in which the provider was asked and answered.
    public private(set) var renewals = 0

    public init() {}

    /// A client was handed `c` at `now`: kept renewed from then on, its
    /// secret commands run where `child` says (nil: a confined client's, which
    /// decides nothing). True when the loop should look now: the credential is
    /// new to it, or falls due before the second the loop waits for.
    public mutating func handedOut(_ c: Credential, at now: Int64, child: ChildContext?, policy: AheadOfNeed) -> Bool {
        guard var entry = entries[c.id] else {
            entries[c.id] = Entry(askedAt: now, child: child)
            return true
        }
        entry.askedAt = now
        // Not the last client that asked: the one that brought it, unless its world failed.
        if let child, entry.child == nil || entry.lastFailed { entry.child = child }
        entries[c.id] = entry
        let due = c.expiresAt.map { $0 - policy.lead(for: c) }
        return due.map { $0 < (entry.nextRenewal ?? .max) } ?? false
    }

    /// Forgets every client's environment and directory (`lock`): renewals
    /// run in the agent's own world until a client asks again.
    public mutating func forgetClients() {
        for id in entries.keys { entries[id]?.child = nil }
    }

    /// The credentials to look at `now`; those no client asked for within
    /// `keep` seconds are dropped first (`agent_keep`).
    public mutating func looked(at now: Int64, keep: Int64) -> [CredentialID] {
        entries = entries.filter { now - $0.value.askedAt <= keep }
        return entries.keys.sorted()
    }

    /// What to do with `id`, whose stored record is `c`, at `now`: true when a
    /// renewal is to start (it is then under way until `finished`); `next` is
    /// lowered to the second this one next needs a look.
    public mutating func decide(
        _ id: CredentialID, record c: Credential, status: CredentialStatus, at now: Int64, policy: AheadOfNeed,
        next: inout Int64
    ) -> Bool {
        guard var entry = entries[id] else { return false }
        defer { entries[id] = entry }
        switch policy.decision(for: c, status: status, now: now) {
        case .never(let why):
            (entry.nextRenewal, entry.never) = (nil, why)
            return false
        case .wait(let until):
            (entry.nextRenewal, entry.never) = (until, nil)
            next = min(next, until)
            return false
        case .renew:
            entry.never = nil
            if entry.renewing { return false }
            if let last = entry.attempt {
                let earliest = policy.earliest(after: last.at, failed: last.failed, for: c)
                if now < earliest {
                    entry.nextRenewal = earliest
                    next = min(next, earliest)
                    return false
                }
            }
            (entry.renewing, entry.nextRenewal, entry.attempt) = (true, now, (now, false))
            return true
        }
    }

    /// The renewal of `id` started at `startedAt` ended with `outcome`.
    public mutating func finished(_ id: CredentialID, startedAt: Int64, _ outcome: Outcome) {
        if case .renewed(true) = outcome { renewals += 1 }
        guard var entry = entries[id] else { return }
        var failed = false
        if case .failed = outcome { failed = true }
        (entry.renewing, entry.attempt, entry.last) = (false, (startedAt, failed), (startedAt, outcome.words))
        if case .renewed = outcome { entry.lastFailed = false } else { entry.lastFailed = true }
        entries[id] = entry
    }
}
