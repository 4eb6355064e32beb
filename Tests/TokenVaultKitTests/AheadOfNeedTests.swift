import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// The agent's schedule of renewals ahead of need (docs/agent.md), driven
/// second by second with a test clock, a store in memory and a scripted
/// provider: renewed ahead of every expiry for any lifetime, at most twice
/// per lifetime, and only counted when the provider was asked.
final class AheadOfNeedTests: XCTestCase {
    let id = CredentialID(service: try! ServiceKey(parsing: "127.0.0.1:9000"))
    var runtime: String!

    override func setUp() { runtime = NSTemporaryDirectory() + "tv-ahead-" + UUID().uuidString.prefix(8) }
    override func tearDown() { try? FileManager.default.removeItem(atPath: runtime) }

    func record(issued: Int64, lifetime: Int64?, refresh: String? = "r1", provider: String? = "local") -> Credential {
        Credential(
            service: id.service, type: .oauth2, provider: provider, accessToken: "at-\(issued)", refreshToken: refresh,
            expiresAt: lifetime.map { issued + $0 }, updatedAt: issued)
    }

    func status(_ c: Credential, at now: Int64) -> CredentialStatus {
        CredentialStatus(of: c, now: now, minValid: 60, grant: { _ in .authorizationCode })
    }

    func testTheLeadIsNeverMoreThanHalfTheLifetime() {
        let policy = AheadOfNeed(minValid: 60)
        let jitter = AheadOfNeed.jitter(id)
        XCTAssertTrue((0..<16).contains(jitter))
        XCTAssertEqual(policy.lead(for: record(issued: 1_000, lifetime: 3_600)), 120 + jitter)
        XCTAssertEqual(policy.lead(for: record(issued: 1_000, lifetime: 300)), min(120 + jitter, 150))
        XCTAssertEqual(policy.lead(for: record(issued: 1_000, lifetime: 30)), 15)
        XCTAssertEqual(policy.lead(for: record(issued: 1_000, lifetime: 4)), 2)
        XCTAssertEqual(policy.lead(for: record(issued: 1_000, lifetime: 1)), 1)
        // Issued when nobody knows: the full lead.
        XCTAssertEqual(policy.lead(for: record(issued: 0, lifetime: 30)), 120 + jitter)
    }

    func testItFallsDueAtExactlyExpiryMinusTheLead() {
        let policy = AheadOfNeed(minValid: 60)
        let c = record(issued: 1_000, lifetime: 30)
        XCTAssertEqual(policy.decision(for: c, status: status(c, at: 1_014), now: 1_014), .wait(until: 1_015))
        XCTAssertEqual(policy.decision(for: c, status: status(c, at: 1_015), now: 1_015), .renew)
        XCTAssertEqual(policy.decision(for: c, status: status(c, at: 1_100), now: 1_100), .renew, "expired: at once")
        let forever = record(issued: 1_000, lifetime: nil)
        XCTAssertEqual(
            policy.decision(for: forever, status: status(forever, at: 1_000), now: 1_000), .never("it does not expire"))
        var refused = c
        refused.refusal = Refusal(reason: "invalid_grant", at: 1_001)
        guard case .never = policy.decision(for: refused, status: status(refused, at: 1_020), now: 1_020) else {
            return XCTFail("a refused credential is never renewed ahead")
        }
        let orphan = record(issued: 1_000, lifetime: 30, refresh: nil, provider: nil)
        guard case .never = policy.decision(for: orphan, status: status(orphan, at: 1_020), now: 1_020) else {
            return XCTFail("nothing to renew it with")
        }
    }

    /// A provider whose every answer is a token of `lifetime` seconds.
    func refresher(
        _ store: MemoryStore, _ clock: TestClock, lifetime: Int, answers: Int
    ) -> (Refresher, ScriptedTransport) {
        let t = ScriptedTransport(
            (0..<answers).map {
                ScriptedTransport.json(
                    #"{"access_token":"at-new-\#($0)","refresh_token":"r-new-\#($0)","expires_in":\#(lifetime)}"#)
            })
        let config = try! Config.parse(
            """
            [providers.local]
            token_url = "http://127.0.0.1:9000/token"
            client_id = "cid"
            """)
        let r = Refresher(
            vault: CredentialVault(store: store, runtimeDirectory: runtime), transport: t, clock: clock,
            providers: ProviderTable(config: config), warn: { _ in })
        return (r, t)
    }

    /// Runs the agent's loop second by second for `seconds`: every renewal it
    /// makes, and whether a token was ever found expired.
    func simulate(lifetime: Int64, seconds: Int64) throws -> (exchanges: Int, counted: Int, expiredAt: [Int64]) {
        let store = MemoryStore()
        let clock = TestClock(1_000)
        try store.save(record(issued: 1_000, lifetime: lifetime))
        let (refresher, transport) = refresher(store, clock, lifetime: Int(lifetime), answers: 1_000)
        let policy = AheadOfNeed(minValid: 60)
        var counted = 0
        var expired: [Int64] = []
        for now in 1_000...(1_000 + seconds) {
            clock.now = now
            let c = try XCTUnwrap(store.load(id))
            if c.isExpired(at: now) { expired.append(now) }
            if policy.decision(for: c, status: status(c, at: now), now: now) == .renew {
                let (_, asked) = try policy.renew(c, with: refresher)
                if asked { counted += 1 }
            }
        }
        return (transport.requests.count, counted, expired)
    }

    func testEveryExpiryIsRenewedAheadForLongAndShortLifetimes() throws {
        // Keycloak's 300 s, a 30 s token, one shorter than the lead, and one of 4 s.
        for lifetime: Int64 in [300, 30, 20, 4] {
            let seconds = lifetime * 6
            let run = try simulate(lifetime: lifetime, seconds: seconds)
            XCTAssertEqual(run.expiredAt, [], "\(lifetime) s: never found expired")
            XCTAssertEqual(run.counted, run.exchanges, "\(lifetime) s: every renewal asked the provider")
            XCTAssertGreaterThanOrEqual(run.exchanges, 6, "\(lifetime) s: renewed in every lifetime")
            XCTAssertLessThanOrEqual(run.exchanges, 12 + 1, "\(lifetime) s: at most about twice per lifetime")
        }
    }

    func testARenewalSomeoneElseMadeIsTakenNotCounted() throws {
        let store = MemoryStore()
        let clock = TestClock(1_020)
        let old = record(issued: 1_000, lifetime: 30)
        try store.save(old)
        // Another process renewed meanwhile: the agent's loaded copy is stale.
        var theirs = record(issued: 1_019, lifetime: 30)
        theirs.accessToken = "theirs"
        try CredentialVault(store: store, runtimeDirectory: runtime).write(theirs)
        let (refresher, transport) = refresher(store, clock, lifetime: 30, answers: 1)
        let (c, asked) = try AheadOfNeed(minValid: 60).renew(old, with: refresher)
        XCTAssertEqual(c?.accessToken, "theirs")
        XCTAssertFalse(asked)
        XCTAssertEqual(transport.requests.count, 0)
    }

    func testAFailureForNowIsTriedAgainSoonerForAShortToken() {
        let policy = AheadOfNeed(minValid: 60)
        XCTAssertEqual(policy.retry(after: 1_000, for: record(issued: 900, lifetime: 3_600)), 1_060)
        XCTAssertEqual(policy.retry(after: 1_000, for: record(issued: 990, lifetime: 30)), 1_010)
        XCTAssertEqual(policy.retry(after: 1_000, for: record(issued: 980, lifetime: 22)), 1_005)
    }

    /// A provider down for a minute: each renewal ahead of need fails for now.
    /// The failure is the renewal's error (never "renewed by another
    /// process", which the loop would take for success and try again at
    /// once), and the loop, run as the agent runs it, asks no more often
    /// than the retry rule says.
    func testAnOutageIsAFailureAndIsAskedAtMostOncePerRetry() throws {
        let store = MemoryStore()
        let clock = TestClock(1_000)
        try store.save(record(issued: 1_000, lifetime: 20))
        let config = try Config.parse(
            """
            [providers.local]
            token_url = "http://127.0.0.1:9000/token"
            client_id = "cid"
            """)
        let t = ScriptedTransport(
            (0..<1_000).map { _ in ScriptedTransport.json(#"{"error":"unavailable"}"#, status: 503) })
        let refresher = Refresher(
            vault: CredentialVault(store: store, runtimeDirectory: runtime), transport: t, clock: clock,
            providers: ProviderTable(config: config), warn: { _ in })
        let policy = AheadOfNeed(minValid: 60)
        var attempt: (at: Int64, failed: Bool)?
        var failures = 0
        // Ten calls a second for a minute, as a loop woken by every outcome would make.
        for tenth in 0..<600 {
            let now = 1_000 + Int64(tenth / 10)
            clock.now = now
            let c = try XCTUnwrap(store.load(id))
            guard policy.decision(for: c, status: status(c, at: now), now: now) == .renew else { continue }
            if let last = attempt, now < policy.earliest(after: last.at, failed: last.failed, for: c) { continue }
            do {
                _ = try policy.renew(c, with: refresher)
                attempt = (now, false)
            } catch TokenVaultError.temporary {
                attempt = (now, true)
                failures += 1
            }
        }
        XCTAssertGreaterThan(failures, 0, "the outage is seen as a failure")
        XCTAssertEqual(failures, t.requests.count, "every request that went out failed and was counted")
        // Due at 1010; then every 5 s (the floor) while it has less than 10 s left.
        XCTAssertLessThanOrEqual(t.requests.count, 60 / Int(AheadOfNeed.floor) + 1, "\(t.requests.count) requests")
        XCTAssertEqual(try store.load(id)?.accessToken, "at-1000", "nothing stored is altered")
    }

    func testTheNextRenewalWaitsForTheFloorWhateverTheOutcome() {
        let policy = AheadOfNeed(minValid: 60)
        let c = record(issued: 990, lifetime: 3_600)
        XCTAssertEqual(policy.earliest(after: 1_000, failed: false, for: c), 1_000 + AheadOfNeed.floor)
        XCTAssertEqual(policy.earliest(after: 1_000, failed: true, for: c), 1_060)
    }
}
