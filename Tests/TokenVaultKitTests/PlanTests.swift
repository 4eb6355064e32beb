import Foundation
import Glibc
import XCTest

@testable import TokenVaultKit

/// A run's plan answers "agent?", "backend?" and "bus?" once, the first time
/// each is asked (docs/design.md, "A run: its session and its plan").
final class PlanTests: XCTestCase {
    var dir = ""

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "tv-plan-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(
            atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    var env: [String: String] {
        ["HOME": dir, "XDG_RUNTIME_DIR": dir, "TOKENVAULT_CONFIG": dir + "/config.toml"]
    }

    /// A listening socket where the agent's would be.
    func listen(at path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() { raw[i] = b }
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        XCTAssertEqual(bound, 0)
        return fd
    }

    func testTheAgentIsLookedForOnceAndNeverByTheAgentOrAfterItDeclined() throws {
        let settings = Settings(environment: env)
        try FileManager.default.createDirectory(atPath: settings.runtimeDirectory, withIntermediateDirectories: true)
        let plan = Plan(settings: settings)
        XCTAssertFalse(plan.agentAnswers, "no socket")
        let fd = try listen(at: AgentSocket.path(settings))
        defer { close(fd) }
        XCTAssertFalse(plan.agentAnswers, "asked once: the answer stands for the run")
        XCTAssertTrue(Plan(settings: settings).agentAnswers, "another run looks again")
        XCTAssertFalse(Plan(settings: settings, isAgent: true).agentAnswers, "the agent never asks one")
        XCTAssertFalse(Plan(settings: settings, agentFinding: .init(declined: true)).agentAnswers)
        XCTAssertFalse(Plan(settings: settings, agentFinding: .init(unanswered: true)).agentAnswers)
        var off = env
        off["TOKENVAULT_AGENT"] = "off"
        XCTAssertFalse(Plan(settings: Settings(environment: off)).agentAnswers)
    }

    func testTheBackendIsDecidedOnceWithWhoChoseIt() throws {
        let plan = Plan(settings: Settings(environment: env))
        var asked = 0
        var config = Config()
        config.backend = "file"
        let first = try plan.backend {
            asked += 1
            return config
        }
        XCTAssertEqual(first.choice, .file)
        XCTAssertEqual(first.chosenBy, .config)
        config.backend = "etcd"
        let again = try plan.backend {
            asked += 1
            return config
        }
        XCTAssertEqual(again.choice, .file, "decided once")
        XCTAssertEqual(asked, 1)
        var forced = env
        forced["TOKENVAULT_BACKEND"] = "secret-service"
        let chosen = try Plan(settings: Settings(environment: forced)).backend { config }
        XCTAssertEqual(chosen.choice, .secretService)
        XCTAssertEqual(chosen.chosenBy, .environment)
        struct Unreadable: Error {}
        let broken = Plan(settings: Settings(environment: env))
        XCTAssertThrowsError(try broken.backend { throw Unreadable() })
        XCTAssertThrowsError(try broken.backend { config }, "the first answer, an error, stands")
    }

    func testTheBusIsLookedForOnce() throws {
        let plan = Plan(settings: Settings(environment: env))
        XCTAssertNotNil(plan.missingBus, "no bus named and none at XDG_RUNTIME_DIR/bus")
        let fd = try listen(at: dir + "/bus")
        defer { close(fd) }
        XCTAssertNotNil(plan.missingBus, "asked once")
        XCTAssertNil(Plan(settings: Settings(environment: env)).missingBus)
    }

    /// The store a backend reads first, the one rule the store a run opens
    /// and the read-ahead both follow: auto without a session bus is the file vault.
    func testTheStoreReadFirstIsDecidedOnce() {
        XCTAssertEqual(BackendChoice.auto.readsFirst(missingBus: nil), .secretService)
        XCTAssertEqual(BackendChoice.auto.readsFirst(missingBus: "no session bus"), .file)
        XCTAssertEqual(BackendChoice.secretService.readsFirst(missingBus: "no session bus"), .secretService)
        XCTAssertEqual(BackendChoice.file.readsFirst(missingBus: nil), .file)
        XCTAssertEqual(BackendChoice.etcd.readsFirst(missingBus: nil), .etcd)
        XCTAssertEqual(BackendChoice.none.readsFirst(missingBus: "x"), BackendChoice.none)
    }
}
