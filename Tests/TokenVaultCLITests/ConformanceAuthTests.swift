import Foundation
import XCTest

/// The MCP conformance suite's client authorization scenarios
/// (Tests/Fixtures/conformance_server.py, ported from the suite's
/// src/scenarios/client/auth/), run as a host runs tokenvault: `login URL`,
/// then `tokenvault mcp URL` carrying a call at each revision's wire
/// (2025-11-25, the handshake era; 2026-07-28, the per-request era). Each
/// test is named after the scenario, and a failure names the suite's check id.
final class ConformanceAuthTests: XCTestCase {
    struct Scenario {
        let process: Process
        let port: Int
        var url: String { "http://127.0.0.1:\(port)/mcp" }
    }

    func start(_ name: String) throws -> Scenario {
        let (process, port) = try startFixtureServer("conformance_server.py", ["--scenario", name])
        addTeardownBlock {
            process.terminate()
            process.waitUntilExit()
        }
        return Scenario(process: process, port: port)
    }

    func sandbox() -> Sandbox {
        let s = Sandbox()
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        return s
    }

    /// The suite's checks the server recorded.
    func checks(_ scenario: Scenario) throws -> [[String: Any]] {
        let r = runProcess("/usr/bin/curl", ["-s", "http://127.0.0.1:\(scenario.port)/checks"], env: [:])
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]], r.stdout)
    }

    /// Fails at the caller for every FAILURE check, and for each of `required` never recorded as SUCCESS.
    func assertPassed(
        _ scenario: Scenario, _ required: [String], file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let all = try checks(scenario)
        for c in all where c["status"] as? String == "FAILURE" {
            XCTFail(
                "check \(c["id"] ?? "?") failed: \(c["description"] ?? "") \(c["details"] ?? "")", file: file,
                line: line)
        }
        for id in required
        where !all.contains(where: { $0["id"] as? String == id && $0["status"] as? String == "SUCCESS" }) {
            XCTFail("check \(id) never passed: \(all)", file: file, line: line)
        }
    }

    static let handshake = [
        #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        #"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        #"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#,
    ]
    static let perRequest = [
        #"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
    ]

    /// The bridge carries a call at both revisions' wires; the call's answer is a result.
    func assertCallsGoThrough(_ s: Sandbox, _ url: String, file: StaticString = #filePath, line: UInt = #line) {
        for (era, lines) in [("2025-11-25", Self.handshake), ("2026-07-28", Self.perRequest)] {
            var args = [Paths.fixtures.appendingPathComponent("bridge_driver.py").path]
            for (i, l) in lines.enumerated() { args += ["--at", String(Double(i) * 0.2), l] }
            args += ["--until-ids", "2", "--limit", "15", "--", Paths.binary, "mcp", url]
            let run = runProcess("/usr/bin/python3", args, env: s.env, limit: 45)
            let answered = run.stdout.split(separator: "\n").contains { raw in
                guard let o = try? JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: Any],
                    let text = o["line"] as? String,
                    let m = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
                else { return false }
                return m["id"] as? Int == 2 && m["result"] != nil
            }
            XCTAssertTrue(
                answered, "\(era): the call went through: \(run.stdout) \(run.stderr)", file: file, line: line)
        }
    }

    func login(_ s: Sandbox, _ scenario: Scenario, file: StaticString = #filePath, line: UInt = #line) {
        let r = s.tv("login", scenario.url, limit: 60)
        XCTAssertEqual(r.status, 0, r.stderr, file: file, line: line)
    }

    // MARK: Discovery (auth/metadata-*)

    func testMetadataDefault() throws {
        let c = try start("metadata-default")
        let s = sandbox()
        login(s, c)
        assertCallsGoThrough(s, c.url)
        try assertPassed(c, ["authorization-pkce", "authorization-resource", "token-resource", "token-pkce-verifier"])
    }

    func testMetadataVar1() throws {
        let c = try start("metadata-var1")
        let s = sandbox()
        login(s, c)
        assertCallsGoThrough(s, c.url)
        try assertPassed(c, ["authorization-pkce", "token-resource"])
    }

    /// PRM at the root only, naming the origin as the resource; the AS at a path.
    func testMetadataVar2() throws {
        let c = try start("metadata-var2")
        let s = sandbox()
        login(s, c)
        assertCallsGoThrough(s, c.url)
        try assertPassed(c, ["authorization-resource", "token-resource"])
    }

    func testMetadataVar3() throws {
        let c = try start("metadata-var3")
        let s = sandbox()
        login(s, c)
        assertCallsGoThrough(s, c.url)
        try assertPassed(c, ["authorization-pkce", "token-resource"])
    }

    // MARK: Token endpoint authentication (auth/token-endpoint-auth-*, auth/pre-registration)

    func testTokenEndpointAuthBasic() throws {
        let c = try start("token-endpoint-auth-basic")
        let s = sandbox()
        login(s, c)
        assertCallsGoThrough(s, c.url)
        try assertPassed(c, ["token-endpoint-auth-method"])
    }

    func testTokenEndpointAuthPost() throws {
        let c = try start("token-endpoint-auth-post")
        let s = sandbox()
        login(s, c)
        assertCallsGoThrough(s, c.url)
        try assertPassed(c, ["token-endpoint-auth-method"])
    }

    func testTokenEndpointAuthNone() throws {
        let c = try start("token-endpoint-auth-none")
        let s = sandbox()
        login(s, c)
        assertCallsGoThrough(s, c.url)
        try assertPassed(c, ["token-endpoint-auth-method"])
    }

    /// A client configured for the issuer, a server that lists only
    /// client_secret_basic: Basic is used; a wrong secret's hint names the
    /// config.toml table that holds it.
    func testPreRegistration() throws {
        let c = try start("pre-registration")
        let s = sandbox()
        let table = """
            [providers.conformance]
            issuer = "http://127.0.0.1:\(c.port)"
            client_id = "conformance-client"
            client_secret = "%@"
            """
        try s.writeConfig(table.replacingOccurrences(of: "%@", with: "conformance-secret"))
        login(s, c)
        assertCallsGoThrough(s, c.url)
        try assertPassed(c, ["token-endpoint-auth-method"])
        // The same client with a wrong secret: 76, and the hint says where the secret is.
        try s.writeConfig(table.replacingOccurrences(of: "%@", with: "wrong"))
        let again = s.tv("login", c.url, "--account", "second", limit: 60)
        XCTAssertEqual(again.status, 76, again.stderr)
        XCTAssertTrue(
            again.stderr.contains("[providers.conformance] in \(s.env["XDG_CONFIG_HOME"]!)/tokenvault/config.toml"),
            again.stderr)
        XCTAssertFalse(again.stderr.contains("providers.toml"), again.stderr)
    }

    // MARK: auth/resource-mismatch

    func testResourceMismatch() throws {
        let c = try start("resource-mismatch")
        let s = sandbox()
        let r = s.tv("login", c.url, limit: 60)
        XCTAssertEqual(r.status, 78, r.stderr)
        XCTAssertTrue(r.stderr.contains("describes another resource"), r.stderr)
        try assertPassed(c, [])
    }
}
