import Foundation
import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// The agent's idle stop on a test clock (docs/agent.md, "Started on first
/// use"): an agent started on first use leaves after `agent_idle` seconds
/// without a request, a renewal's end counts as activity, and once it has
/// begun to leave no renewal starts and it exits only when the renewal
/// under way is stored.
final class AgentServerTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "tv-agent-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(
            atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func server(_ clock: TestClock, startedOnUse: Bool = true) -> AgentServer {
        var settings = Settings(environment: [
            "HOME": dir, "XDG_RUNTIME_DIR": dir, "TOKENVAULT_BACKEND": "file", "TOKENVAULT_CONFIG": dir + "/none.toml",
        ])
        settings.clock = clock
        return AgentServer(settings: settings, startedOnUse: startedOnUse, notices: .none) { _, _, _ in nil }
    }

    let id = CredentialID(service: try! ServiceKey(parsing: "api.example.com"))

    func testAnIdleStopDuringARenewalWaitsForItAndStartsNoOther() throws {
        let clock = TestClock(1_000)
        let agent = server(clock)
        // A renewal under way since second 1,030.
        agent.state.withLock { $0.inFlight += 1 }
        clock.now = 1_059
        XCTAssertFalse(agent.idleOver(at: clock.now, idle: 60), "59 s without a request")
        clock.now = 1_060
        XCTAssertTrue(agent.idleOver(at: clock.now, idle: 60), "the exact second")
        XCTAssertFalse(agent.idleOver(at: clock.now, idle: 0), "agent_idle = 0: never")
        XCTAssertFalse(server(clock, startedOnUse: false).idleOver(at: 5_000, idle: 60), "started by hand: stays")
        // A credential a client asked for long ago (beyond agent_keep): a look at the schedule drops it.
        let asked = Credential(service: id.service, type: .oauth2, accessToken: "a", expiresAt: 2_000, updatedAt: 1)
        let policy = AheadOfNeed(minValid: 60)
        let control = server(clock)
        for a in [agent, control] {
            _ = a.state.withLock { $0.schedule.handedOut(asked, at: -100_000, child: ChildContext(), policy: policy) }
        }
        _ = control.renewDue()
        XCTAssertTrue(control.state.withLock { $0.schedule.entries.isEmpty }, "serving: the schedule was looked at")
        agent.stopListening()
        XCTAssertTrue(agent.state.withLock { $0.leaving })
        XCTAssertEqual(agent.renewDue(), 300)
        XCTAssertEqual(agent.state.withLock { $0.schedule.entries.count }, 1, "leaving: the schedule is not looked at")
        XCTAssertFalse(agent.settled(within: 0.2), "the renewal under way is not cut short")
        clock.now = 1_070
        agent.renewalEnded(id, startedAt: 1_030, .renewed(asked: true))
        XCTAssertTrue(agent.settled(within: 5), "stored: it may exit")
    }

    func testARenewalsEndCountsAsActivity() {
        let clock = TestClock(1_000)
        let agent = server(clock)
        agent.state.withLock { $0.inFlight += 1 }
        clock.now = 1_050
        agent.renewalEnded(id, startedAt: 1_040, .failed("the provider did not answer"))
        XCTAssertFalse(agent.idleOver(at: 1_100, idle: 60), "50 s after the renewal ended")
        XCTAssertTrue(agent.idleOver(at: 1_110, idle: 60))
        XCTAssertEqual(agent.state.withLock { $0.inFlight }, 0)
    }
}
