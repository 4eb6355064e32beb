import Foundation
import TokenVaultKit
import XCTest

/// `tokenvault mcp URL` at MCP 2026-07-28, driven by the official MCP
/// Python SDK's high-level `Client` over stdio (mcp_client.py --mode),
/// pinned to the revision and negotiating it, in front of the SDK's server
/// (which speaks both eras and checks the routing headers against the
/// body, and issues refresh tokens only for `offline_access`, as OpenID
/// Connect servers do), and in front of a server of the handshake era alone.
final class MCPModernTests: XCTestCase {
    nonisolated(unsafe) static var server: Process!
    nonisolated(unsafe) static var port = 0
    nonisolated(unsafe) static var legacy: Process!
    nonisolated(unsafe) static var legacyPort = 0

    override class func setUp() {
        (server, port) = try! startFixtureServer(
            "mcp_server.py", ["--path", "/m/mcp", "--also", "/n/mcp", "--offline-access"],
            python: MCPBridgeTests.python)
        (legacy, legacyPort) = try! startFixtureServer(
            "mcp_server.py", ["--path", "/l/mcp", "--legacy-only"], python: MCPBridgeTests.python)
    }

    override class func tearDown() {
        for p in [server, legacy] where p!.isRunning {
            p!.terminate()
            p!.waitUntilExit()
        }
    }

    var base: String { "http://127.0.0.1:\(Self.port)" }
    var url: String { base + "/m/mcp" }

    func sandbox() -> Sandbox {
        let s = Sandbox()
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        return s
    }

    func routing(_ base: String) throws -> [String: String] {
        let r = runProcess("/usr/bin/curl", ["-s", base + "/last-routing"], env: [:])
        return (try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: String]) ?? [:]
    }

    func step(_ steps: [[String: Any]], _ name: String) -> [String: Any]? {
        steps.first { $0["step"] as? String == name }
    }

    func testAClientPinnedTo20260728ListsAndCallsWithTheRoutingHeaders() throws {
        let s = sandbox()
        s.expect("login", url, limit: 60)
        let (steps, run) = MCPBridgeTests.client(s, url, ["--mode", "2026-07-28", "--region", "Zürich"])
        XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
        XCTAssertEqual(step(steps, "initialize")?["protocol"] as? String, "2026-07-28")
        XCTAssertEqual(step(steps, "list")?["tools"] as? [String], ["echo", "locate", "wait"])
        XCTAssertEqual(MCPBridgeTests.calls(steps), ["hello 0"])
        // The server refuses a call whose Mcp-Param-Region does not match its body.
        XCTAssertEqual(step(steps, "locate")?["text"] as? String, "hi @ Zürich", run.stdout)
        XCTAssertEqual(step(steps, "locate")?["error"] as? Bool, false)
        let last = try routing(base)
        XCTAssertEqual(last["mcp-protocol-version"], "2026-07-28")
        XCTAssertEqual(last["mcp-method"], "tools/call")
        XCTAssertEqual(last["mcp-name"], "locate")
        XCTAssertEqual(last["mcp-param-region"], "=?base64?" + Data("Zürich".utf8).base64EncodedString() + "?=")
        XCTAssertNil(last["mcp-session-id"], "no session in the per-request era")
        XCTAssertEqual(run.stderr, "", "nothing to say when all is well")
    }

    func testAPlainASCIIArgumentTravelsAsItIs() throws {
        let s = sandbox()
        s.expect("login", url, limit: 60)
        let (steps, run) = MCPBridgeTests.client(
            s, url, ["--mode", "2026-07-28", "--calls", "0", "--region", "eu-west-1"])
        XCTAssertEqual(step(steps, "locate")?["text"] as? String, "hi @ eu-west-1", run.stdout + run.stderr)
        XCTAssertEqual(try routing(base)["mcp-param-region"], "eu-west-1")
    }

    func testAnAutoNegotiatingClientLandsOn20260728Silently() throws {
        let s = sandbox()
        s.expect("login", url, limit: 60)
        let (steps, run) = MCPBridgeTests.client(s, url, ["--mode", "auto"])
        XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
        XCTAssertEqual(step(steps, "initialize")?["protocol"] as? String, "2026-07-28")
        XCTAssertEqual(step(steps, "locate")?["text"] as? String, "hi @ Zürich", run.stdout)
        XCTAssertEqual(run.stderr, "")
    }

    func testAgainstAServerOfTheHandshakeEraTheProbeFailsQuietlyAndTheClientFallsBack() throws {
        let s = sandbox()
        let legacy = "http://127.0.0.1:\(Self.legacyPort)/l/mcp"
        XCTAssertEqual(s.tv("login", legacy, limit: 60).status, 0)
        let (steps, run) = MCPBridgeTests.client(s, legacy, ["--mode", "auto"])
        XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
        XCTAssertEqual(step(steps, "initialize")?["protocol"] as? String, "2025-11-25")
        XCTAssertEqual(MCPBridgeTests.calls(steps), ["hello 0"])
        XCTAssertEqual(run.stderr, "", "a refused server/discover is a normal negotiation")
    }

    func testThreeBridgesStartedAtExpiryCostOneRefreshAndTheFamilyLives() throws {
        let s = sandbox()
        s.expect("login", url, limit: 60)
        try s.expireStored(url)
        let before = try fixtureStats(base + "/stats")
        let results = Locked<[[String]]>([])
        let url = self.url
        DispatchQueue.concurrentPerform(iterations: 3) { _ in
            let (steps, _) = MCPBridgeTests.client(s, url, ["--mode", "2026-07-28"])
            results.mutate { $0.append(MCPBridgeTests.calls(steps)) }
        }
        XCTAssertEqual(results.value, Array(repeating: ["hello 0"], count: 3))
        let after = try fixtureStats(base + "/stats")
        XCTAssertEqual(after["refreshes"], (before["refreshes"] ?? 0) + 1, "one refresh for all three bridges")
        XCTAssertEqual(after["replays"], before["replays"], "no rotated refresh token sent twice")
        // The family lives: a renewal after the three still works.
        try s.expireStored(url)
        XCTAssertEqual(s.tv("get", url).status, 0)
    }

    /// One line of the per-request era, as a client writes it on stdin.
    static func modern(_ id: Int, _ method: String, _ params: [String: Any]) -> String {
        var p = params
        p["_meta"] = [
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": ["name": "raw", "version": "1"],
            "io.modelcontextprotocol/clientCapabilities": [:] as [String: Any],
        ]
        let o: [String: Any] = ["jsonrpc": "2.0", "id": id, "method": method, "params": p]
        return String(decoding: try! JSONSerialization.data(withJSONObject: o), as: UTF8.self)
    }

    func testACallOfAToolNeverListedCarriesItsHeadersAndACancelledCallClosesItsExchange() throws {
        let s = sandbox()
        s.expect("login", url, limit: 60)
        let before = try fixtureStats(base + "/stats")
        let lines = [
            Self.modern(1, "tools/call", ["name": "locate", "arguments": ["text": "hi", "region": "Zürich"]]),
            Self.modern(2, "tools/call", ["name": "wait", "arguments": ["seconds": 60]]),
            #"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user"}}"#,
            #"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#,
            Self.modern(3, "tools/list", [:]),
        ]
        let file = s.home + "/raw.jsonl"
        try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let (steps, run) = MCPBridgeTests.client(s, url, ["--raw", file, "--hold", "3"])
        let answers = steps.filter { $0["step"] as? String == "raw" }.compactMap { step -> [String: Any]? in
            guard let line = step["line"] as? String else { return nil }
            return try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
        let byID = Dictionary(answers.map { ($0["id"] as? Int ?? -1, $0) }) { a, _ in a }
        let text = ((byID[1]?["result"] as? [String: Any])?["content"] as? [[String: Any]])?.first?["text"] as? String
        XCTAssertEqual(text, "hi @ Zürich", run.stdout)
        XCTAssertNil(byID[2], "a cancelled request gets no answer")
        XCTAssertNotNil(
            (byID[3]?["result"] as? [String: Any])?["tools"], "a request after it is answered: \(run.stdout)")
        XCTAssertEqual(answers.count, 2, "nothing else: the notifications were not sent as requests")
        // With the call still under way when stdin ends, the bridge waits 5 s more for it before it exits.
        let exited = steps.first { $0["step"] as? String == "exit" }
        XCTAssertLessThan(exited?["after_stdin"] as? Double ?? 99, 4, "nothing was under way when stdin ended")
        // The server saw the cancelled call's request go away.
        func cancelled() -> Int {
            ((try? fixtureStats(base + "/stats"))?["waits_cancelled"] ?? 0) - (before["waits_cancelled"] ?? 0)
        }
        XCTAssertTrue(eventually(5) { cancelled() > 0 })
        XCTAssertEqual(cancelled(), 1)
        let exit = steps.first { $0["step"] as? String == "exit" }
        XCTAssertEqual(exit?["stderr"] as? String, "", "nothing on stderr")
    }

    func testOfflineAccessIsAskedForWhereTheServerListsItAndTheGrantRenews() throws {
        let s = sandbox()
        let login = s.tv("login", url, limit: 60)
        XCTAssertEqual(login.status, 0, login.stderr)
        XCTAssertFalse(login.stderr.contains("no refresh token"), login.stderr)
        XCTAssertEqual(
            s.tv("get", url, "--field", "scope").out.split(separator: " ").sorted(), ["files:read", "offline_access"])
        let status = s.tv("status", url, "--json")
        XCTAssertTrue(
            status.out.contains(#""can_refresh":true"#) || status.out.contains(#""can_refresh" : true"#), status.out)
        let before = try fixtureStats(base + "/stats")
        try s.expireStored(url)
        XCTAssertEqual(s.tv("get", url).status, 0)
        XCTAssertEqual(try fixtureStats(base + "/stats")["refreshes"], (before["refreshes"] ?? 0) + 1)
        // A server that does not list it is not asked for it.
        let legacy = "http://127.0.0.1:\(Self.legacyPort)/l/mcp"
        XCTAssertEqual(s.tv("login", legacy, limit: 60).status, 0)
        XCTAssertEqual(s.tv("get", legacy, "--field", "scope").out, "files:read")
    }

    func testASubscriptionStreamIsCarriedAndItsEventsArrive() throws {
        let s = sandbox()
        s.expect("login", url, limit: 60)
        let (steps, run) = MCPBridgeTests.client(
            s, url, ["--mode", "2026-07-28", "--calls", "0", "--listen", base + "/tools-changed", "--quiet", "2"])
        XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
        XCTAssertNotNil(step(steps, "listening"), run.stdout)
        XCTAssertEqual(step(steps, "event")?["kind"] as? String, "ToolsListChanged", run.stdout + run.stderr)
        XCTAssertEqual(try routing(base)["mcp-method"], "subscriptions/listen")
        XCTAssertEqual(run.stderr, "")
    }

    func testA401RenewsOnceAndA403StepsUpAt20260728() throws {
        let s = sandbox()
        s.expect("login", url, limit: 60)
        let before = try fixtureStats(base + "/stats")
        let (steps, run) = MCPBridgeTests.client(
            s, url, ["--mode", "2026-07-28", "--calls", "2", "--forget-access", base + "/forget-access"])
        XCTAssertEqual(MCPBridgeTests.calls(steps), ["hello 0", "hello 1"], run.stdout + run.stderr)
        XCTAssertEqual(try fixtureStats(base + "/stats")["refreshes"], (before["refreshes"] ?? 0) + 1)
        // A resource that wants more scopes: one login for them (a browser opens here), then the call.
        let more = base + "/n/mcp"
        XCTAssertEqual(s.tv("login", more, "--scope", "files:read", limit: 60).status, 0)
        let (stepped, again) = MCPBridgeTests.client(s, more, ["--mode", "2026-07-28"])
        XCTAssertEqual(MCPBridgeTests.calls(stepped), ["hello 0"], again.stdout + again.stderr)
        XCTAssertEqual(
            s.tv("get", more, "--field", "scope").out.split(separator: " ").sorted(),
            ["files:read", "files:write", "offline_access"])
    }
}
