import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// Whose requests the agent answers (docs/agent.md): a client's setup
/// compared with the agent's in what the request can use, with the
/// config's decisions filled in on both sides.
final class AgentScopeTests: XCTestCase {
    let base = [
        "HOME": "/home/u", "XDG_RUNTIME_DIR": "/run/user/1000",
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
    ]

    func differences(_ client: [String: String], agent: [String: String] = [:], config: Config? = nil) -> [String] {
        let ours = Settings(environment: base.merging(agent) { $1 })
        let theirs = Settings(environment: base.merging(client) { $1 })
        return AgentScope.differences(theirs.agentScope, from: ours, config: config)
    }

    func testTheSameSetupIsAnsweredAndAnotherBusIsNamed() {
        XCTAssertEqual(differences([:]), [])
        XCTAssertEqual(differences(["DBUS_SESSION_BUS_ADDRESS": "unix:path=/tmp/other"]), ["bus"])
        XCTAssertEqual(
            differences(["XDG_CONFIG_HOME": "/elsewhere", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/tmp/other"]),
            ["bus", "config"])
        XCTAssertEqual(AgentScope.differences(nil, from: Settings(environment: base), config: nil), ["the protocol"])
    }

    /// `TOKENVAULT_BACKEND=auto` is no difference where the config says auto or nothing.
    func testWhatTheConfigDecidesIsFilledInOnBothSides() throws {
        XCTAssertEqual(differences(["TOKENVAULT_BACKEND": "auto"]), [])
        XCTAssertEqual(differences(["TOKENVAULT_BACKEND": "AUTO "]), [], "spelled as the variable is read")
        // Another backend, and with it what only one of the two uses (no vault file here: auto never opens it).
        XCTAssertEqual(
            differences(["TOKENVAULT_BACKEND": "file"]),
            ["TOKENVAULT_BACKEND", "TOKENVAULT_DBUS_TIMEOUT", "TOKENVAULT_UNLOCK_TIMEOUT", "key_ttl"])
        let file = try Config.parse(#"backend = "file""#)
        XCTAssertEqual(differences(["TOKENVAULT_BACKEND": "file"], config: file), [])
    }

    /// A setting counts only on the backend that uses it.
    func testASettingCountsOnlyWhereItIsUsed() {
        let etcd = ["TOKENVAULT_BACKEND": "etcd", "TOKENVAULT_ETCD_ENDPOINTS": "https://a:2379"]
        XCTAssertEqual(
            differences(etcd.merging(["TOKENVAULT_ETCD_ENDPOINTS": "https://b:2379"]) { $1 }, agent: etcd),
            ["TOKENVAULT_ETCD_ENDPOINTS"])
        let file = ["TOKENVAULT_BACKEND": "file"]
        XCTAssertEqual(differences(file.merging(["TOKENVAULT_ETCD_PREFIX": "other/"]) { $1 }, agent: file), [])
        XCTAssertEqual(differences(file.merging(["TOKENVAULT_DBUS_TIMEOUT": "7"]) { $1 }, agent: file), [])
        let secrets = ["TOKENVAULT_BACKEND": "secret-service"]
        XCTAssertEqual(
            differences(secrets.merging(["TOKENVAULT_DBUS_TIMEOUT": "7"]) { $1 }, agent: secrets),
            ["TOKENVAULT_DBUS_TIMEOUT"])
        XCTAssertEqual(differences(secrets.merging(["TOKENVAULT_KEY_TTL": "60"]) { $1 }, agent: secrets), [])
        XCTAssertEqual(differences(file.merging(["TOKENVAULT_KEY_TTL": "60"]) { $1 }, agent: file), ["key_ttl"])
    }
}
