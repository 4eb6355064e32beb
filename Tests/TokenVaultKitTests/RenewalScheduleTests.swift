import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// The agent's book of renewals ahead of need (docs/agent.md), stepped
/// second by second: the exact second a credential falls due, one renewal at
/// a time, the floor after a success, the retry rule after a failure, a
/// refusal never tried again, a credential nobody asks for dropped, and a
/// record stored meanwhile looked at sooner.
final class RenewalScheduleTests: XCTestCase {
    let id = CredentialID(service: try! ServiceKey(parsing: "127.0.0.1:9000"))
    let policy = AheadOfNeed(minValid: 60)

    func record(issued: Int64, lifetime: Int64, refusal: Refusal? = nil) -> Credential {
        var c = Credential(
            service: id.service, type: .oauth2, provider: "local", accessToken: "at-\(issued)", refreshToken: "r",
            expiresAt: issued + lifetime, updatedAt: issued)
        c.refusal = refusal
        return c
    }

    /// One look of the loop at `now`: whether a renewal starts, and the second of the next look.
    func look(_ s: inout RenewalSchedule, _ c: Credential, at now: Int64) -> (start: Bool, next: Int64) {
        var next = now + 300
        let status = CredentialStatus(of: c, now: now, minValid: 60, grant: { _ in .authorizationCode })
        let ids = s.looked(at: now, keep: 3_600)
        guard ids.contains(c.id) else { return (false, next) }
        let start = s.decide(c.id, record: c, status: status, at: now, policy: policy, next: &next)
        return (start, next)
    }

    func testAThirtySecondTokenFallsDueAtItsExactSecondAndRenewsOnceAtATime() {
        var s = RenewalSchedule()
        let c = record(issued: 1_000, lifetime: 30)  // lead: half the lifetime, 15 s
        XCTAssertTrue(s.handedOut(c, at: 1_001, child: ChildContext(), policy: policy), "new: look now")
        XCTAssertEqual(look(&s, c, at: 1_001).next, 1_015)
        XCTAssertEqual(s.entries[id]?.nextRenewal, 1_015)
        XCTAssertFalse(look(&s, c, at: 1_014).start)
        XCTAssertTrue(look(&s, c, at: 1_015).start, "due at expiry minus the lead")
        XCTAssertFalse(look(&s, c, at: 1_016).start, "one renewal at a time")
        s.finished(id, startedAt: 1_015, .renewed(asked: true))
        XCTAssertEqual(s.renewals, 1)
        XCTAssertEqual(s.entries[id]?.last?.outcome, "renewed")
        // The record stored is as short as before and due again at once: the floor first.
        let same = record(issued: 1_000, lifetime: 30)
        let early = look(&s, same, at: 1_017)
        XCTAssertFalse(early.start)
        XCTAssertEqual(early.next, 1_015 + AheadOfNeed.floor)
        XCTAssertTrue(look(&s, same, at: 1_020).start)
        s.finished(id, startedAt: 1_020, .renewed(asked: false))
        XCTAssertEqual(s.renewals, 1, "another process renewed it: not counted")
        XCTAssertEqual(s.entries[id]?.last?.outcome, "renewed by another process")
        // The renewed record: due half its lifetime ahead again.
        XCTAssertEqual(look(&s, record(issued: 1_020, lifetime: 30), at: 1_021).next, 1_035)
    }

    func testAFailureIsTriedAgainByTheRetryRuleNeverInALoop() {
        var s = RenewalSchedule()
        let c = record(issued: 1_000, lifetime: 3_600)
        _ = s.handedOut(c, at: 1_000, child: ChildContext(), policy: policy)
        let due = 1_000 + 3_600 - policy.lead(for: c)
        XCTAssertTrue(look(&s, c, at: due).start)
        s.finished(id, startedAt: due, .failed("cannot reach 127.0.0.1:9000"))
        XCTAssertEqual(s.entries[id]?.last?.outcome, "failed: cannot reach 127.0.0.1:9000")
        var starts = 0
        for second in due + 1...due + 59 where look(&s, c, at: second).start { starts += 1 }
        XCTAssertEqual(starts, 0, "nothing within the minute")
        XCTAssertTrue(look(&s, c, at: due + 60).start, "a minute later")
        // A token with 8 s left: tried again after half of them, the floor at least.
        var short = RenewalSchedule()
        let brief = record(issued: 2_000, lifetime: 8)
        _ = short.handedOut(brief, at: 2_000, child: ChildContext(), policy: policy)
        XCTAssertTrue(look(&short, brief, at: 2_004).start)
        short.finished(id, startedAt: 2_004, .failed("502"))
        XCTAssertEqual(look(&short, brief, at: 2_005).next, 2_004 + AheadOfNeed.floor)
        XCTAssertTrue(look(&short, brief, at: 2_009).start)
    }

    func testARefusalIsNeverTriedAgainAheadOfNeed() {
        var s = RenewalSchedule()
        let c = record(issued: 1_000, lifetime: 30)
        _ = s.handedOut(c, at: 1_000, child: ChildContext(), policy: policy)
        XCTAssertTrue(look(&s, c, at: 1_015).start)
        s.finished(id, startedAt: 1_015, .refused("the provider answered invalid_grant"))
        // The refusal is stored with the record (as any command stores it).
        let refused = record(issued: 1_000, lifetime: 30, refusal: Refusal(reason: "invalid_grant", at: 1_015))
        for second: Int64 in 1_016...1_100 { XCTAssertFalse(look(&s, refused, at: second).start) }
        XCTAssertNil(s.entries[id]?.nextRenewal)
        XCTAssertEqual(s.entries[id]?.never?.hasPrefix("the provider refused"), true)
        XCTAssertEqual(s.entries[id]?.last?.outcome, "refused: the provider answered invalid_grant")
    }

    /// A grant the client makes again on its own (a workload's JWT, a token
    /// exchange, an enterprise IdP's ID-JAG) has no refresh token, and is
    /// renewed ahead of need all the same; a token tied to nothing is not.
    func testGrantsWithoutARefreshTokenAreRenewedAheadToo() {
        for grant in [OAuth2Provider.Grant.jwtBearer, .tokenExchange, .idJag, .clientCredentials] {
            var c = record(issued: 1_000, lifetime: 30)
            c.refreshToken = nil
            let status = CredentialStatus(of: c, now: 1_015, minValid: 60, grant: { _ in grant })
            XCTAssertEqual(policy.decision(for: c, status: status, now: 1_015), .renew, "\(grant)")
        }
        var code = record(issued: 1_000, lifetime: 30)
        code.refreshToken = nil
        let status = CredentialStatus(of: code, now: 1_015, minValid: 60, grant: { _ in .authorizationCode })
        XCTAssertEqual(
            policy.decision(for: code, status: status, now: 1_015), .never("there is no refresh token"))
    }

    func testACredentialNobodyAsksForIsDroppedAndAStoredOneIsLookedAtSooner() {
        var s = RenewalSchedule()
        let c = record(issued: 1_000, lifetime: 3_600)
        _ = s.handedOut(c, at: 1_000, child: ChildContext(), policy: policy)
        XCTAssertEqual(s.looked(at: 1_000 + 3_600, keep: 3_600), [id])
        XCTAssertEqual(s.looked(at: 1_000 + 3_601, keep: 3_600), [], "agent_keep passed since the last ask")
        let later = record(issued: 5_000, lifetime: 3_600)
        XCTAssertTrue(s.handedOut(later, at: 5_000, child: ChildContext(), policy: policy), "new again")
        XCTAssertFalse(look(&s, later, at: 5_000).start)
        XCTAssertFalse(s.handedOut(later, at: 5_001, child: ChildContext(), policy: policy), "nothing sooner")
        // A record stored meanwhile with a shorter life falls due before the loop's next look.
        let shorter = record(issued: 5_001, lifetime: 30)
        XCTAssertTrue(s.handedOut(shorter, at: 5_002, child: ChildContext(directory: "/w"), policy: policy))
        XCTAssertEqual(
            s.entries[id]?.child, ChildContext(), "the world of the client that brought it, not the last one's")
    }

    /// Whose world a renewal ahead of need runs in: the client's that brought
    /// the credential; a confined client's never; another client's only once
    /// a renewal there did not succeed.
    func testARenewalRunsInTheWorldOfTheClientThatBroughtIt() {
        var s = RenewalSchedule()
        let c = record(issued: 1_000, lifetime: 3_600)
        _ = s.handedOut(c, at: 1_000, child: nil, policy: policy)
        XCTAssertEqual(s.entries[id]?.child, nil, "a confined client decides nothing: the agent's own world")
        let first = ChildContext(environment: ["A": "1"], directory: "/a")
        _ = s.handedOut(c, at: 1_001, child: first, policy: policy)
        XCTAssertEqual(s.entries[id]?.child, first, "the first client of the agent's world")
        _ = s.handedOut(c, at: 1_002, child: ChildContext(environment: ["B": "2"], directory: "/b"), policy: policy)
        _ = s.handedOut(c, at: 1_003, child: nil, policy: policy)
        XCTAssertEqual(s.entries[id]?.child, first, "not the last to ask")
        var next = Int64.max
        let due = CredentialStatus(of: c, now: 4_590, minValid: 60, grant: { _ in .authorizationCode })
        XCTAssertTrue(s.decide(id, record: c, status: due, at: 4_590, policy: policy, next: &next))
        s.finished(id, startedAt: 4_590, .failed("invalid_client"))
        let second = ChildContext(environment: ["B": "2"], directory: "/b")
        _ = s.handedOut(c, at: 4_591, child: second, policy: policy)
        XCTAssertEqual(s.entries[id]?.child, second, "its world failed: the next client's takes over")
        _ = s.handedOut(c, at: 4_592, child: first, policy: policy)
        XCTAssertEqual(s.entries[id]?.child, first, "while no renewal has succeeded since, each client in turn")
    }
}
