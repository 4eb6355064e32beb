import Foundation
import XCTest

/// What the MCP conformance suite's client authorization scenarios
/// (Tests/Fixtures/conformance_server.py, ported from the suite's
/// src/scenarios/client/auth/) share: a scenario's server, a sandbox whose
/// browser follows redirects, the suite's checks as the server recorded
/// them, and a host's way of running tokenvault — `login URL`, then
/// `tokenvault mcp URL` carrying a call at each revision's wire (2025-11-25,
/// the handshake era; 2026-07-28, the per-request era). Each test is named
/// after its scenario, and a failure names the suite's check id.
class ConformanceTestCase: XCTestCase {
    struct Scenario {
        let process: Process
        let port: Int
        var url: String { "http://127.0.0.1:\(port)/mcp" }
        var origin: String { "http://127.0.0.1:\(port)" }
    }

    func start(_ name: String, _ extra: [String] = []) throws -> Scenario {
        let (process, port) = try startFixtureServer("conformance_server.py", ["--scenario", name] + extra)
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

    /// The suite's checks the server recorded, with those it computes at the end.
    func checks(_ scenario: Scenario) throws -> [[String: Any]] {
        let r = runProcess("/usr/bin/curl", ["-s", "http://127.0.0.1:\(scenario.port)/checks"], env: [:])
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]], r.stdout)
    }

    /// Fails at the caller for every FAILURE or WARNING check (a SHOULD the
    /// suite reports is one tokenvault keeps), and for each of `required`
    /// never recorded as SUCCESS.
    func assertPassed(
        _ scenario: Scenario, _ required: [String], file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let all = try checks(scenario)
        for c in all where ["FAILURE", "WARNING"].contains(c["status"] as? String) {
            XCTFail(
                "check \(c["id"] ?? "?") \(c["status"] ?? ""): \(c["description"] ?? "") \(c["details"] ?? "")",
                file: file, line: line)
        }
        for id in required
        where !all.contains(where: { $0["id"] as? String == id && $0["status"] as? String == "SUCCESS" }) {
            XCTFail("check \(id) never passed: \(all)", file: file, line: line)
        }
    }

    /// How many checks of `id` the server recorded.
    func count(_ scenario: Scenario, _ id: String) throws -> Int {
        try checks(scenario).filter { $0["id"] as? String == id }.count
    }

    static let handshake = [
        #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        #"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        #"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#,
    ]
    static let perRequest = [
        #"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
    ]
    static let eras = [("2025-11-25", handshake), ("2026-07-28", perRequest)]

    /// The bridge's answer to the call (id 2) at one revision's wire: the
    /// JSON-RPC message, or nil when none came; and the bridge's stderr.
    func call(_ s: Sandbox, _ url: String, _ lines: [String]) -> (answer: [String: Any]?, stderr: String) {
        // In this process where nothing needs one (the bridge's logic, not its process, is what the
        // suite judges); else the binary, driven by bridge_driver.py.
        if s.inProcess, InProcess.runsInProcess(["get"], env: s.env) {
            let run = InProcess.bridge(
                url, env: s.env, sends: lines.enumerated().map { (Double($0.offset) * 0.2, $0.element) }, until: [2],
                limit: 25)
            for raw in run.lines.map(\.line) {
                guard let m = try? JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: Any],
                    m["id"] as? Int == 2
                else { continue }
                return (m, run.stderr)
            }
            return (nil, run.lines.map(\.line).joined(separator: "\n") + run.stderr)
        }
        var args = [Paths.fixtures.appendingPathComponent("bridge_driver.py").path]
        for (i, l) in lines.enumerated() { args += ["--at", String(Double(i) * 0.2), l] }
        args += ["--until-ids", "2", "--limit", "25", "--", Paths.binary, "mcp", url]
        let run = runProcess("/usr/bin/python3", args, env: s.env, limit: 60)
        for raw in run.stdout.split(separator: "\n") {
            guard let o = try? JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: Any],
                let text = o["line"] as? String,
                let m = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                m["id"] as? Int == 2
            else { continue }
            return (m, run.stderr)
        }
        return (nil, run.stdout + run.stderr)
    }

    /// The bridge carries a call at both revisions' wires; the call's answer is a result.
    func assertCallsGoThrough(_ s: Sandbox, _ url: String, file: StaticString = #filePath, line: UInt = #line) {
        for (era, lines) in Self.eras {
            let (answer, stderr) = call(s, url, lines)
            XCTAssertNotNil(
                answer?["result"], "\(era): the call went through: \(answer ?? [:]) \(stderr)", file: file, line: line)
        }
    }

    func login(_ s: Sandbox, _ scenario: Scenario, file: StaticString = #filePath, line: UInt = #line) {
        let r = s.tv("login", scenario.url, limit: 60)
        XCTAssertEqual(r.status, 0, r.stderr, file: file, line: line)
    }

    /// The scenario end to end as a host runs it: a login, a call at each era, every check passed.
    func assertScenario(
        _ name: String, _ required: [String], file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let c = try start(name)
        let s = sandbox()
        login(s, c, file: file, line: line)
        assertCallsGoThrough(s, c.url, file: file, line: line)
        try assertPassed(c, required, file: file, line: line)
    }
}
