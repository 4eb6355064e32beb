import Foundation
import TokenVaultKit
import XCTest

/// `tokenvault mcp URL` driven by the official MCP Python SDK's stdio client
/// (Tests/Fixtures/mcp_client.py), in front of the SDK's server with its
/// authorization routes (mcp_server.py: /a/mcp, and /b/mcp asking for more
/// scopes), and in front of a broken server (sse_server.py's /mcp/...).
final class MCPBridgeTests: XCTestCase {
    nonisolated(unsafe) static var server: Process!
    nonisolated(unsafe) static var port = 0
    nonisolated(unsafe) static var broken: Process!
    nonisolated(unsafe) static var brokenPort = 0

    static var python: String { Paths.root.appendingPathComponent(".build/mcp-venv/bin/python").path }

    override class func setUp() {
        (server, port) = try! startFixtureServer(
            "mcp_server.py", ["--path", "/a/mcp", "--also", "/b/mcp"], python: python)
        (broken, brokenPort) = try! startFixtureServer("sse_server.py")
    }

    override class func tearDown() {
        for p in [server, broken] where p!.isRunning {
            p!.terminate()
            p!.waitUntilExit()
        }
    }

    var base: String { "http://127.0.0.1:\(Self.port)" }
    var a: String { base + "/a/mcp" }
    var b: String { base + "/b/mcp" }

    func stats() throws -> [String: Int] { try fixtureStats(base + "/stats") }

    func sandbox(browser: Bool = true) -> Sandbox {
        let s = Sandbox()
        if browser { s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path }
        return s
    }

    /// The SDK's client launching `tokenvault mcp URL`: the steps it printed, and its run.
    func client(_ s: Sandbox, _ url: String, _ options: [String] = []) -> ([[String: Any]], Run) {
        Self.client(s, url, options)
    }

    static func client(_ s: Sandbox, _ url: String, _ options: [String] = []) -> ([[String: Any]], Run) {
        var e = s.env
        e["PYTHONDONTWRITEBYTECODE"] = "1"
        let run = runProcess(
            Self.python,
            [Paths.fixtures.appendingPathComponent("mcp_client.py").path] + options + ["--", Paths.binary, "mcp", url],
            env: e, limit: 90)
        return (steps(run), run)
    }

    /// The steps mcp_client.py printed, one JSON object per line.
    static func steps(_ run: Run) -> [[String: Any]] {
        run.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    func calls(_ steps: [[String: Any]]) -> [String] { Self.calls(steps) }

    static func calls(_ steps: [[String: Any]]) -> [String] {
        steps.filter { $0["step"] as? String == "call" && $0["error"] as? Bool == false }.compactMap {
            $0["text"] as? String
        }
    }

    func testTheSDKClientListsAndCallsToolsThroughTheBridge() throws {
        let s = sandbox()
        XCTAssertEqual(s.tv("login", a, limit: 60).status, 0)
        let (steps, run) = client(s, a, ["--calls", "2"])
        XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
        XCTAssertEqual(steps.first?["protocol"] as? String, "2025-11-25")
        XCTAssertEqual(
            steps.first { $0["step"] as? String == "list" }?["tools"] as? [String], ["echo", "locate", "wait"])
        XCTAssertEqual(calls(steps), ["hello 0", "hello 1"])
        let token = s.tv("get", a).out
        XCTAssertFalse(run.stdout.contains(token) || run.stderr.contains(token), "no token in any output")
        XCTAssertEqual(run.stderr, "", "nothing to say when all is well")
    }

    func testManyBridgesAtExpiryMakeOneRefreshAndTheFamilyLives() throws {
        let s = sandbox()
        XCTAssertEqual(s.tv("login", a, limit: 60).status, 0)
        try s.expireStored(a)
        let before = try stats()
        let results = Locked<[[String]]>([])
        let url = a
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            let (steps, _) = Self.client(s, url)
            results.mutate { $0.append(Self.calls(steps)) }
        }
        XCTAssertEqual(results.value, Array(repeating: ["hello 0"], count: 6))
        let after = try stats()
        XCTAssertEqual(after["refreshes"], (before["refreshes"] ?? 0) + 1, "one refresh for every bridge")
        XCTAssertEqual(after["replays"], before["replays"], "no rotated refresh token sent twice")
    }

    /// A server that issues 20 s tokens, under the default min_valid (60):
    /// a 50-call session renews at most once (docs/reference.md, "The renewal margin").
    func testAFiftyCallSessionWithTwentySecondTokensRenewsAtMostOnce() throws {
        let (short, shortPort) = try startFixtureServer(
            "mcp_server.py", ["--path", "/a/mcp", "--token-ttl", "20"], python: Self.python)
        defer { short.terminate() }
        let url = "http://127.0.0.1:\(shortPort)/a/mcp"
        let s = sandbox()
        s.expect("login", url, limit: 60)
        let (steps, run) = client(s, url, ["--calls", "50"])
        XCTAssertEqual(calls(steps).count, 50, run.stdout + run.stderr)
        let stats = try fixtureStats("http://127.0.0.1:\(shortPort)/stats")
        XCTAssertLessThanOrEqual(stats["refreshes"] ?? 0, 1, "\(stats)")
    }

    func testATokenRefusedMidSessionIsRenewedOnceAndTheCallSentAgain() throws {
        let s = sandbox()
        XCTAssertEqual(s.tv("login", a, limit: 60).status, 0)
        let before = try stats()
        let (steps, run) = client(s, a, ["--forget-access", base + "/forget-access", "--calls", "2"])
        XCTAssertEqual(calls(steps), ["hello 0", "hello 1"], run.stdout + run.stderr)
        XCTAssertEqual(try stats()["refreshes"], (before["refreshes"] ?? 0) + 1)
    }

    /// A server that forgets the session under the client (a restart, an
    /// idle expiry: HTTP 404 for a known session id): the bridge sets up a new
    /// one with the client's own initialize and sends the request again; the
    /// client sees only its answers.
    func testASessionTheServerForgotIsSetUpAgainByTheBridge() throws {
        let s = sandbox()
        XCTAssertEqual(s.tv("login", a, limit: 60).status, 0)
        let before = try stats()["sessions_forgotten"] ?? 0
        let (steps, run) = client(s, a, ["--forget-access", base + "/forget-sessions", "--calls", "3"])
        XCTAssertEqual(calls(steps), ["hello 0", "hello 1", "hello 2"], run.stdout + run.stderr)
        XCTAssertGreaterThan(try stats()["sessions_forgotten"] ?? 0, before, "the session was forgotten")
        XCTAssertTrue(run.stderr.contains("had forgotten the MCP session; a new one was set up"), run.stderr)
    }

    func testMoreScopesAreAskedForByALoginWhereABrowserCanOpen() throws {
        let s = sandbox()
        XCTAssertEqual(s.tv("login", b, "--scope", "files:read", limit: 60).status, 0)
        // Nobody can answer a login: a JSON-RPC error and one line, at once.
        let nobody = s.env.merging(["BROWSER": ""]) { $1 }
        let saved = s.env
        s.env = nobody.filter { !$0.value.isEmpty }
        let (refused, run) = client(s, b)
        s.env = saved
        XCTAssertTrue(run.stdout.contains("-32003") && run.stdout.contains("asks for more scopes"), run.stdout)
        XCTAssertTrue(
            run.stderr.contains("asks for more scopes (it says: Required scope: files:write); log in with them"),
            run.stderr)
        XCTAssertTrue(calls(refused).isEmpty)
        // Where a browser opens, the login runs with both scopes, and the call goes through.
        let (steps, again) = client(s, b)
        XCTAssertEqual(calls(steps), ["hello 0"], again.stdout + again.stderr)
        XCTAssertEqual(s.tv("get", b, "--field", "scope").out, "files:read files:write")
    }

    /// With no credential and a browser that can open, the request that
    /// found none waits for the login the bridge starts, and is answered.
    func testTheRequestThatStartsALoginIsAnsweredAfterIt() throws {
        let s = sandbox()
        let (steps, run) = client(s, a)
        XCTAssertEqual(calls(steps), ["hello 0"], run.stdout + run.stderr)
        XCTAssertEqual(s.tv("get", a).status, 0, "the login stored the credential")
    }

    func testANeededLoginIsAJSONRPCErrorNotAHang() throws {
        let s = sandbox(browser: false)
        let (_, run) = client(s, a)
        XCTAssertNotEqual(run.status, 0)
        XCTAssertTrue(run.stdout.contains("-32001"), run.stdout)
        XCTAssertTrue(
            run.stderr.contains("tokenvault: error: no credential stored for 127.0.0.1:\(Self.port)/a/mcp"), run.stderr)
        XCTAssertTrue(run.stderr.contains("run: tokenvault login \(a)"), run.stderr)
    }

    /// Raw lines to `tokenvault mcp URL`: each line it answers with.
    func raw(
        _ s: Sandbox, _ url: String, _ lines: [String], hold: Double = 0
    ) throws -> (answers: [[String: Any]], stderr: String) {
        let input = s.home + "/raw.txt"
        try (lines.joined(separator: "\n") + "\n").write(toFile: input, atomically: true, encoding: .utf8)
        let run = runProcess(
            Self.python,
            [
                Paths.fixtures.appendingPathComponent("mcp_client.py").path, "--raw", input, "--hold", String(hold),
                "--", Paths.binary, "mcp",
                url,
            ],
            env: s.env, limit: 90)
        var answers: [[String: Any]] = []
        var stderr = ""
        for step in run.stdout.split(separator: "\n").compactMap({
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }) {
            if let line = step["line"] as? String {
                // stdout carries only JSON-RPC messages, one per line.
                let message = try XCTUnwrap(
                    try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
                XCTAssertEqual(message["jsonrpc"] as? String, "2.0")
                answers.append(message)
            }
            if let e = step["stderr"] as? String { stderr = e }
        }
        return (answers, stderr)
    }

    func errorCode(_ m: [String: Any]) -> Int? { (m["error"] as? [String: Any])?["code"] as? Int }

    func testMalformedInputGetsJSONRPCErrorsAndNothingIsForwarded() throws {
        let s = sandbox()
        XCTAssertEqual(s.tv("login", a, limit: 60).status, 0)
        let before = try stats()
        let (answers, _) = try raw(
            s, a,
            [
                "not json", #"{"jsonrpc":"1.0","id":3,"method":"x"}"#, "[]",
                #"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#,
                String(repeating: "x", count: 5 << 20),
            ])
        XCTAssertEqual(answers.map(errorCode), [-32700, -32600, -32600, -32600, -32600])
        XCTAssertEqual(answers[1]["id"] as? Int, 3, "the id is kept when it can be read")
        XCTAssertEqual(try stats()["refreshes"], before["refreshes"])
        XCTAssertEqual(s.tv("get", a).status, 0, "nothing stored was touched")
    }

    func testABrokenServerGivesJSONRPCErrorsAndNothingIsLost() throws {
        let s = sandbox()
        let root = "127.0.0.1:\(Self.brokenPort)/mcp"
        for m in ["huge", "cut", "resume", "garbage"] {
            XCTAssertEqual(s.tv("set", "\(root)/\(m)", stdin: "t0k3n-\(m)").status, 0)
        }
        let call = #"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}"#
        func answer(_ mode: String) throws -> ([[String: Any]], String) { try raw(s, "http://\(root)/\(mode)", [call]) }

        let (huge, hugeErr) = try answer("huge")
        XCTAssertEqual(huge.map(errorCode), [-32002])
        XCTAssertTrue(hugeErr.contains("sent an event larger than 4 MiB"), hugeErr)
        let (cut, _) = try answer("cut")
        XCTAssertEqual(cut.count, 2)
        XCTAssertEqual(cut[0]["method"] as? String, "notifications/message", "what came before the cut is passed on")
        XCTAssertEqual(errorCode(cut[1]), -32002)
        XCTAssertEqual(cut[1]["id"] as? Int, 7)
        let (resumed, _) = try answer("resume")
        XCTAssertEqual(resumed.count, 2, "\(resumed)")
        XCTAssertEqual(
            (resumed.last?["result"] as? [String: Any])?["resumed"] as? Bool, true, "picked up by Last-Event-ID")
        let (garbage, garbageErr) = try answer("garbage")
        XCTAssertEqual(garbage.count, 1)
        XCTAssertNotNil(garbage[0]["result"])
        XCTAssertTrue(garbageErr.contains("sent a message that is not JSON-RPC; it was dropped"), garbageErr)
        for m in ["huge", "cut", "resume", "garbage"] {
            XCTAssertEqual(s.tv("get", "\(root)/\(m)").out, "t0k3n-\(m)")
        }
    }

    func testPrintConfigPrintsTheClientSnippet() throws {
        let s = sandbox()
        let r = s.tv("mcp", a, "--print-config")
        XCTAssertEqual(r.status, 0)
        let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        // The absolute path, as setup mcp writes it: a client's PATH may not hold it.
        XCTAssertEqual(
            o["command"] as? String, URL(fileURLWithPath: Paths.binary).resolvingSymlinksInPath().path)
        XCTAssertTrue((o["command"] as? String ?? "").hasPrefix("/"))
        XCTAssertEqual(o["args"] as? [String], ["mcp", a])
        let other = s.tv("mcp", a, "--account", "work", "--print-config")
        XCTAssertTrue(other.stdout.contains(#"["mcp","\#(a)","--account","work"]"#), other.stdout)
        XCTAssertEqual(s.tv("mcp", "not-a-url").status, 64)
        XCTAssertEqual(s.tv("mcp", "http://mcp.example.com/mcp").status, 64, "plain http only on loopback")
    }

    func testTheSessionIsCarriedTheServersOwnStreamReadAndEndedWithStdin() throws {
        let s = sandbox()
        let url = "http://127.0.0.1:\(Self.brokenPort)/mcp/push"
        XCTAssertEqual(s.tv("set", url.replacingOccurrences(of: "http://", with: ""), stdin: "t0k3n-push").status, 0)
        let (answers, stderr) = try raw(
            s, url,
            [
                #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
                #"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                #"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
            ], hold: 2)
        XCTAssertEqual(stderr, "")
        XCTAssertEqual(answers.compactMap { $0["id"] as? Int }, [1, 2])
        XCTAssertEqual(
            answers.compactMap { ($0["params"] as? [String: Any])?["data"] as? String }, ["pushed"],
            "the server's own message came on the GET stream")
        let seen = try XCTUnwrap(
            JSONSerialization.jsonObject(
                with: Data(
                    runProcess(
                        "/usr/bin/curl", ["-s", "http://127.0.0.1:\(Self.brokenPort)/push-seen"],
                        env: ["PATH": "/usr/bin:/bin"]
                    ).stdout.utf8)) as? [[String: Any]])
        let methods = seen.map { $0["method"] as? String ?? "?" }
        XCTAssertEqual(methods.first, "POST")
        XCTAssertEqual(methods.last, "DELETE", "the session ends when stdin closes: \(methods)")
        XCTAssertTrue(methods.contains("GET"))
        // After initialize every request carries the session and the protocol version.
        for request in seen.dropFirst() {
            XCTAssertEqual(request["session"] as? String, "push-1", "\(request)")
            XCTAssertEqual(request["version"] as? String, "2025-11-25", "\(request)")
        }
        XCTAssertNil(seen[0]["session"] as? String)
        XCTAssertTrue(
            seen.contains { $0["method"] as? String == "GET" && $0["last_event"] as? String == "p1" },
            "the stream is opened again after its last event: \(seen)")
    }
}
