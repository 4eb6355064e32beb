import Foundation
import XCTest

/// `login URL` and `tokenvault mcp URL` in front of a hostile MCP server and
/// authorization server (Tests/Fixtures/hostile_mcp.py), driven by a client
/// that sends by the clock (bridge_driver.py): nothing stored is lost, no
/// answer holds up another, and nothing but JSON-RPC reaches the client.
final class HostileServerTests: XCTestCase {
    nonisolated(unsafe) static var server: Process!
    nonisolated(unsafe) static var port = 0

    override class func setUp() { (server, port) = try! startFixtureServer("hostile_mcp.py") }

    override class func tearDown() {
        if server.isRunning {
            server.terminate()
            server.waitUntilExit()
        }
    }

    var base: String { "http://127.0.0.1:\(Self.port)" }
    func url(_ mode: String) -> String { base + "/\(mode)/mcp" }
    func stats() throws -> [String: Int] { try fixtureStats(base + "/stats") }

    func sandbox() -> Sandbox {
        let s = Sandbox()
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        return s
    }

    /// A sandbox holding a token for the resource `mode`.
    func sandbox(holdingTokenFor mode: String) -> Sandbox {
        let s = sandbox()
        XCTAssertEqual(s.tv("set", "127.0.0.1:\(Self.port)/\(mode)/mcp", stdin: "t0k3n-\(mode)").status, 0)
        return s
    }

    struct Drive {
        /// Each line the bridge wrote, with the second it came.
        var lines: [(t: Double, message: [String: Any]?)]
        var stderr: String
        var peakKiB: Int
        /// Each line as written.
        var raw: [String] = []
        func answer(_ id: Int) -> (t: Double, message: [String: Any])? {
            for l in lines { if let m = l.message, m["id"] as? Int == id { return (l.t, m) } }
            return nil
        }
    }

    /// Runs `tokenvault mcp URL` driven by the clock: `sends` are (second, line).
    /// In this process where the sandbox allows it, unless `measured` (the
    /// bridge's own memory is looked at): then the binary, under bridge_driver.py.
    func drive(
        _ s: Sandbox, _ url: String, _ sends: [(Double, String)], until ids: [Int] = [], limit: Double = 30,
        measured: Bool = false
    ) throws -> Drive {
        if !measured, s.inProcess, InProcess.runsInProcess(["get"], env: s.env) {
            let run = InProcess.bridge(
                url, env: s.env, sends: sends.map { (at: $0.0, line: $0.1) }, until: Set(ids), limit: limit)
            return Drive(
                lines: run.lines.map { l in
                    (l.t, try? JSONSerialization.jsonObject(with: Data(l.line.utf8)) as? [String: Any])
                }, stderr: run.stderr, peakKiB: 0, raw: run.lines.map(\.line))
        }
        var args = [Paths.fixtures.appendingPathComponent("bridge_driver.py").path]
        for (t, line) in sends { args += ["--at", String(t), line] }
        args += ["--until-ids", ids.map(String.init).joined(separator: ","), "--limit", String(limit)]
        args += ["--", Paths.binary, "mcp", url]
        let run = runProcess("/usr/bin/python3", args, env: s.env, limit: limit + 30)
        var drive = Drive(lines: [], stderr: "", peakKiB: 0)
        for raw in run.stdout.split(separator: "\n") {
            let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: Any], String(raw))
            if let line = o["line"] as? String {
                let message = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                drive.lines.append((o["t"] as? Double ?? -1, message))
                drive.raw.append(line)
            } else {
                drive.stderr = o["stderr"] as? String ?? ""
                drive.peakKiB = o["peak_kib"] as? Int ?? 0
            }
        }
        return drive
    }

    static let initialize =
        #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#
    static let initialized = #"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
    static func call(_ id: Int) -> String {
        #"{"jsonrpc":"2.0","id":\#(id),"method":"tools/call","params":{"name":"echo","arguments":{}}}"#
    }
    static func ping(_ id: Int) -> String { #"{"jsonrpc":"2.0","id":\#(id),"method":"ping"}"# }

    // MARK: Registration

    func testAHostileRegistrationIsRefusedAndNothingIsKept() throws {
        let s = sandbox()
        let login = s.tv("login", url("space"), limit: 60)
        XCTAssertEqual(login.status, 65, login.stderr)
        XCTAssertTrue(login.stderr.contains("127.0.0.1:\(Self.port)"), "the server is named: \(login.stderr)")
        XCTAssertTrue(login.stderr.contains("client_id that has white space"), login.stderr)
        XCTAssertTrue(login.stderr.contains("nothing was kept"), login.stderr)
        let list = s.tv("list", "--json")
        XCTAssertEqual(list.status, 0, list.stderr)
        XCTAssertEqual(list.out, "[]")
        XCTAssertEqual(s.tv("delete", "127.0.0.1:\(Self.port)/as-space", "--account", "tokenvault:client:00").status, 3)
        let providers =
            (try? String(contentsOfFile: s.env["XDG_CONFIG_HOME"]! + "/tokenvault/providers.toml", encoding: .utf8))
            ?? ""
        XCTAssertFalse(providers.contains("bad id"), providers)
        let doctor = s.tv("doctor")
        XCTAssertFalse(doctor.stdout.contains("unusable"), doctor.stdout)
    }

    /// RFC 7592: a registration the server lets tokenvault manage is checked
    /// before an authorization, and deleted with the last resource using it.
    func testAManagedRegistrationIsCheckedBeforeALoginAndDeletedWithItsLastResource() throws {
        let s = sandbox()
        let before = try stats()
        XCTAssertEqual(s.tv("login", url("ok"), limit: 60).status, 0)
        // The server forgets its clients: the next login asks before it authorizes.
        _ = runProcess("/usr/bin/curl", ["-s", "-X", "POST", base + "/forget-clients"], env: [:])
        let again = s.tv("login", url("ok"), "--timeout", "20", limit: 60)
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertTrue(again.stderr.contains("again: it no longer knows client"), again.stderr)
        XCTAssertTrue(again.stderr.contains("removed 1 registration"), again.stderr)
        let middle = try stats()
        XCTAssertEqual((middle["registrations"] ?? 0) - (before["registrations"] ?? 0), 2)
        XCTAssertGreaterThanOrEqual((middle["client_checks"] ?? 0) - (before["client_checks"] ?? 0), 1)
        // The last resource of that server deleted: its registration goes too, there and here.
        let deleted = s.tv("delete", url("ok"))
        XCTAssertEqual(deleted.status, 0, deleted.stderr)
        XCTAssertTrue(deleted.stderr.contains("deleted tokenvault's registration"), deleted.stderr)
        XCTAssertEqual((try stats()["client_deletes"] ?? 0) - (middle["client_deletes"] ?? 0), 1)
        let fresh = s.tv("login", url("ok"), limit: 60)
        XCTAssertEqual(fresh.status, 0, fresh.stderr)
        XCTAssertTrue(fresh.stderr.contains("registered tokenvault at"), "none kept: registered anew: \(fresh.stderr)")
    }

    // MARK: No answer holds up another

    func testAPingAndACancellationPassASlowCall() throws {
        let s = sandbox(holdingTokenFor: "slow")
        let cancel =
            #"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user"}}"#
        let d = try drive(
            s, url("slow"),
            [(0, Self.initialize), (0.2, Self.initialized), (0.5, Self.call(2)), (1.0, Self.ping(3)), (1.5, cancel)],
            until: [1, 3], limit: 15)
        let ping = try XCTUnwrap(d.answer(3), "the ping was answered: \(d.stderr)")
        XCTAssertLessThan(ping.t, 6, "while the call takes 20 s")
        let seen = try XCTUnwrap(
            JSONSerialization.jsonObject(
                with: Data(runProcess("/usr/bin/curl", ["-s", base + "/seen"], env: [:]).stdout.utf8))
                as? [[String: Any]])
        let call = try XCTUnwrap(seen.last { $0["method"] as? String == "tools/call" })
        let cancelled = try XCTUnwrap(
            seen.last { $0["method"] as? String == "notifications/cancelled" }, "the cancellation reached the server")
        let after = (cancelled["at"] as? Double ?? 0) - (call["at"] as? Double ?? 0)
        XCTAssertLessThan(after, 6, "at once, not after the call's 20 s")
        XCTAssertGreaterThan(after, 0, "after the call it cancels")
    }

    func testAServerThatTakesACallAndNeverAnswersHoldsNothingElse() throws {
        let s = sandbox(holdingTokenFor: "silent")
        let d = try drive(
            s, url("silent"), [(0, Self.initialize), (0.3, Self.call(2)), (0.8, Self.ping(3)), (1.2, Self.ping(4))],
            until: [1, 3, 4], limit: 15)
        XCTAssertLessThan(try XCTUnwrap(d.answer(3)).t, 6)
        XCTAssertLessThan(try XCTUnwrap(d.answer(4)).t, 6)
    }

    // MARK: An answer on a stream that stays open

    func testAnInitializeAnswerOnAnOpenStreamIsPassedOnAtOnce() throws {
        let s = sandbox(holdingTokenFor: "keepopen")
        let d = try drive(s, url("keepopen"), [(0, Self.initialize), (0.2, Self.ping(2))], until: [1, 2], limit: 15)
        let answer = try XCTUnwrap(d.answer(1), "answered while the stream stays open: \(d.stderr)")
        XCTAssertLessThan(answer.t, 6, "the server keeps the stream open for 60 s")
        XCTAssertNotNil((answer.message["result"] as? [String: Any])?["protocolVersion"])
        XCTAssertLessThan(try XCTUnwrap(d.answer(2)).t, 6)
    }

    func testAStreamThatFloodsAfterItsAnswerIsNotHeld() throws {
        let s = sandbox(holdingTokenFor: "flood")
        let d = try drive(s, url("flood"), [(0, Self.initialize)], until: [1], limit: 8, measured: true)
        XCTAssertLessThan(try XCTUnwrap(d.answer(1), d.stderr).t, 6)
        XCTAssertGreaterThan(d.peakKiB, 0)
        XCTAssertLessThan(d.peakKiB, 200 * 1024, "1 MiB events pass through; none is held")
    }

    func testAStreamThatAsksForNoDelayIsNotABusyLoop() throws {
        let s = sandbox(holdingTokenFor: "retry0")
        let before = try stats()["gets"] ?? 0
        let d = try drive(s, url("retry0"), [(0, Self.initialize)], limit: 6)
        XCTAssertNotNil(d.answer(1))
        let gets = (try stats()["gets"] ?? 0) - before
        XCTAssertGreaterThan(gets, 0, "the stream was opened")
        XCTAssertLessThanOrEqual(gets, 4, "retry: 0 is floored to a second and backed off")
    }

    // MARK: Only JSON-RPC reaches the client

    /// What is not a JSON-RPC message is that request's error; any valid
    /// JSON-RPC message is passed on as it came, a string cut inside an
    /// emoji (an unpaired surrogate escape) too.
    func testOnlyJSONRPCMessagesReachTheClient() throws {
        let s = sandbox(holdingTokenFor: "junk")
        let d = try drive(
            s, url("junk"), [(0, Self.initialize)] + (2...6).map { (0.3, Self.call($0)) }, until: [1, 2, 3, 4, 5],
            limit: 15)
        let cut = d.raw.filter { $0.contains(#""id":6"#) }
        XCTAssertEqual(cut, [#"{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"cut \ud83d"}]}}"#])
        for (l, raw) in zip(d.lines, d.raw) where !cut.contains(raw) {
            let m = try XCTUnwrap(l.message, "every line is a JSON object")
            XCTAssertEqual(m["jsonrpc"] as? String, "2.0")
        }
        for id in 2...5 {
            let a = try XCTUnwrap(d.answer(id)?.message, "\(id) answered")
            XCTAssertEqual((a["error"] as? [String: Any])?["code"] as? Int, -32002, "\(id): \(a)")
        }
        XCTAssertEqual(d.lines.count, 6)
    }

    // MARK: What servers send: nested JSON, empty routing values

    static func modern(_ id: Int, _ method: String, _ params: String = "") -> String {
        #"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":{\#(params)"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
    }

    /// JSON nested 400 deep (2 KB) in a listing or an SSE event: passed on
    /// as it came, in either era (the bridge reads a server's message for its
    /// envelope alone, with no limit on depth); the bridge answers the next one.
    func testNestedJSONIsPassedOnAsItCame() throws {
        let s = sandbox(holdingTokenFor: "nested")
        let handshake = try drive(
            s, url("nested"),
            [
                (0, Self.initialize), (0.3, #"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#), (0.3, Self.call(3)),
                (1.0, Self.ping(4)),
            ], until: [1, 2, 3, 4], limit: 15)
        let modern = try drive(
            s, url("nested"),
            [
                (0, Self.modern(2, "tools/list")), (0, Self.modern(3, "tools/call", #""name":"echo","arguments":{},"#)),
                (0.5, Self.modern(4, "ping")),
            ], until: [2, 3, 4], limit: 15)
        for (era, d) in [("handshake", handshake), ("2026-07-28", modern)] {
            for id in [2, 3] {
                let a = try XCTUnwrap(d.answer(id)?.message, "\(era): \(id) answered")
                XCTAssertNotNil(a["result"], "\(era) \(id): \(a)")
            }
            XCTAssertNotNil(d.answer(4)?.message["result"], "\(era): the bridge serves on: \(d.stderr)")
        }
        XCTAssertGreaterThanOrEqual(try stats()["nested_answers"] ?? 0, 4)
    }

    /// A call of a tool never listed makes the bridge list the tools first;
    /// a server that pages without end is listed no further once the call is cancelled.
    func testACancelledCallStopsTheBridgesOwnListing() throws {
        let s = sandbox(holdingTokenFor: "pages")
        let before = try stats()["pages"] ?? 0
        let cancel =
            #"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
        _ = try drive(
            s, url("pages"), [(0, Self.modern(2, "tools/call", #""name":"unknown","arguments":{},"#)), (1.5, cancel)],
            limit: 6)
        let pages = (try stats()["pages"] ?? 0) - before
        XCTAssertLessThanOrEqual(pages, 3, "\(pages) pages asked for a cancelled call")
    }

    func lastHeaders() -> String {
        runProcess("/usr/bin/curl", ["-s", base + "/last-headers"], env: ["PATH": "/usr/bin:/bin"]).stdout
    }

    /// An empty argument value and an empty tool name still travel as
    /// headers at 2026-07-28 (libcurl would drop `Name: `): the server sees them.
    func testEmptyRoutingValuesAreSentEmpty() throws {
        let s = sandbox(holdingTokenFor: "routing")
        let d = try drive(
            s, url("routing"),
            [(0, Self.modern(2, "tools/call", #""name":"echo","arguments":{"region":""},"#))], until: [2], limit: 15)
        XCTAssertNotNil(d.answer(2)?.message["result"], d.stderr)
        var headers =
            try JSONSerialization.jsonObject(with: Data(lastHeaders().utf8))
            as? [String: String]
        XCTAssertEqual(headers?["mcp-param-region"], "", "\(headers ?? [:])")
        XCTAssertEqual(headers?["mcp-name"], "echo")
        let unnamed = try drive(
            s, url("routing"), [(0, Self.modern(3, "tools/call", #""name":"","arguments":{},"#))], until: [3],
            limit: 15)
        XCTAssertNotNil(unnamed.answer(3)?.message, unnamed.stderr)
        headers =
            try JSONSerialization.jsonObject(with: Data(lastHeaders().utf8))
            as? [String: String]
        XCTAssertEqual(headers?["mcp-name"], "", "\(headers ?? [:])")
    }

    /// An authorization server that answers a renewal with JSON nested 400
    /// deep: that renewal's error (65); the agent, which renews for every
    /// credential, serves on.
    func testANestedTokenAnswerDoesNotTakeTheAgentAway() throws {
        let s = sandbox()
        s.env["TOKENVAULT_KEY_TTL"] = "900"
        XCTAssertEqual(s.tv("login", url("nested"), limit: 60).status, 0)
        XCTAssertEqual(s.tv("set", "api.other.example", stdin: "other-token").status, 0)
        s.expect("agent")
        addTeardownBlock { _ = s.tv("agent", "stop") }
        let pid = try XCTUnwrap(
            (try JSONSerialization.jsonObject(with: Data(s.expect("agent", "status", "--json").stdout.utf8))
                as? [String: Any])?["pid"] as? Int)
        let key = "127.0.0.1:\(Self.port)/nested/mcp"
        try s.expireStored(key)
        let before = try stats()["nested_refreshes"] ?? 0
        let r = s.tv("get", key)
        XCTAssertEqual(r.status, 65, r.stderr)
        XCTAssertGreaterThan(try stats()["nested_refreshes"] ?? 0, before, "the renewal was asked")
        XCTAssertFalse(processGone(Int32(pid)), "the agent lives")
        XCTAssertEqual(s.expect("get", "api.other.example").stdout, "other-token\n")
        XCTAssertEqual(
            (try JSONSerialization.jsonObject(with: Data(s.expect("agent", "status", "--json").stdout.utf8))
                as? [String: Any])?["pid"] as? Int, pid, "the same agent answered")
    }

    // MARK: A server that always wants more

    func testAServerThatAlwaysAsksForMoreScopesGetsOneLoginPerBridge() throws {
        let s = sandbox()
        XCTAssertEqual(s.tv("login", url("scope403"), limit: 60).status, 0)
        let before = try stats()
        let d = try drive(
            s, url("scope403"), [(0, Self.initialize), (1, Self.call(2)), (2, Self.call(3))], until: [1, 2, 3],
            limit: 40)
        let after = try stats()
        XCTAssertEqual((after["authorizations"] ?? 0) - (before["authorizations"] ?? 0), 1, "one step-up login")
        XCTAssertLessThanOrEqual((after["registrations"] ?? 0) - (before["registrations"] ?? 0), 1)
        for id in 1...3 {
            let a = try XCTUnwrap(d.answer(id)?.message, "\(id) answered")
            XCTAssertEqual((a["error"] as? [String: Any])?["code"] as? Int, -32003, "\(id): \(a)")
        }
        let later = ((d.answer(3)?.message["error"] as? [String: Any])?["message"] as? String) ?? ""
        XCTAssertTrue(later.contains("tokenvault login \(url("scope403")) --scope"), later)
        XCTAssertEqual(s.tv("get", url("scope403")).status, 0, "the grant is kept")
    }

    /// A sandbox whose config has a client of the user's own that needs no
    /// person (client credentials) at the resource `mode`'s authorization server.
    func sandbox(withMachineClientFor mode: String) throws -> Sandbox {
        let s = sandbox()
        try s.writeConfig(
            """
            [providers.machine]
            issuer = "\(base)/as-ok"
            grant = "client_credentials"
            client_id = "machine"
            client_secret = "machine-secret"
            resources = ["\(url(mode))"]
            """)
        return s
    }

    /// A resource never chooses the powers of a client of the user's own
    /// that needs no person: its first login asks for the scopes its table
    /// gives (none here: the server's default), and a 403 for more makes the
    /// bridge name the login with them, never start one; the table kept in
    /// providers.toml names no scope the resource chose.
    func testAResourceNeverChoosesAConfidentialClientsScopes() throws {
        let s = try sandbox(withMachineClientFor: "scope403")
        let before = try stats()
        let login = s.tv("login", url("scope403"), limit: 60)
        XCTAssertEqual(login.status, 0, login.stderr)
        var after = try stats()
        XCTAssertEqual(
            (after["token_grant:client_credentials"] ?? 0) - (before["token_grant:client_credentials"] ?? 0), 1)
        XCTAssertEqual((after["token_scope:-"] ?? 0) - (before["token_scope:-"] ?? 0), 1, "no scope asked for")
        let d = try drive(s, url("scope403"), [(0, Self.initialize), (1, Self.call(2))], until: [1, 2], limit: 30)
        after = try stats()
        let refused = try XCTUnwrap(d.answer(2)?.message["error"] as? [String: Any])
        XCTAssertEqual(refused["code"] as? Int, -32003, "\(refused)")
        XCTAssertTrue(
            (refused["message"] as? String ?? "").contains("tokenvault login \(url("scope403")) --scope extra"),
            "\(refused)")
        XCTAssertEqual(
            (after["token_grant:client_credentials"] ?? 0) - (before["token_grant:client_credentials"] ?? 0), 1,
            "no login for the scopes the resource chose")
        let kept = try String(
            contentsOfFile: s.env["XDG_CONFIG_HOME"]! + "/tokenvault/providers.toml", encoding: .utf8)
        XCTAssertFalse(kept.contains("extra"), kept)
        XCTAssertTrue(!kept.contains("scopes") || kept.contains("scopes = []"), kept)
    }

    /// A server that refuses every token (401), the one just renewed too:
    /// the bridge renews once, then answers each message with the error, never
    /// trading its grant again for every message.
    func testATokenRefusedRightAfterItsRenewalIsNotRenewedForEveryMessage() throws {
        let s = try sandbox(withMachineClientFor: "reject")
        XCTAssertEqual(s.tv("login", url("reject"), limit: 60).status, 0)
        func trades() throws -> Int {
            try stats().filter { $0.key.hasPrefix("token_grant:") }.values.reduce(0, +)
        }
        let before = try trades()
        let pings = (2...6).map { (Double($0 - 1) * 0.3, #"{"jsonrpc":"2.0","id":\#($0),"method":"ping"}"#) }
        let d = try drive(s, url("reject"), [(0, Self.initialize)] + pings, until: Array(1...6), limit: 30)
        for id in 1...6 {
            let a = try XCTUnwrap(d.answer(id)?.message, "\(id) answered")
            XCTAssertNotNil(a["error"], "\(id): \(a)")
        }
        XCTAssertEqual(try trades() - before, 1, "one renewal for six refused messages")
        let later = ((d.answer(6)?.message["error"] as? [String: Any])?["message"] as? String) ?? ""
        XCTAssertTrue(later.contains("not renewed again for every message"), later)
    }

    /// A server whose logins are refused at once: the bridge starts one
    /// login by itself (one browser window), none again after the refusal,
    /// and every request after it gets an error naming `tokenvault login URL`.
    func testARefusedLoginIsNotStartedAgainForEveryMessage() throws {
        let s = sandbox()
        let opened = s.home + "/browser-opened"
        s.env["BROWSER_LOG"] = opened
        let before = try stats()["authorizations"] ?? 0
        let call = { (id: Int) in #"{"jsonrpc":"2.0","id":\#(id),"method":"tools/call","params":{"name":"x"}}"# }
        let d = try drive(s, url("denied"), (1...6).map { (Double($0 - 1) * 1.5, call($0)) }, until: Array(1...6))
        for id in 1...6 {
            XCTAssertNotNil(d.answer(id), "answered: \(id)")
        }
        let opens = ((try? String(contentsOfFile: opened, encoding: .utf8)) ?? "").split(separator: "\n").count
        XCTAssertEqual(opens, 1, "one browser window for six messages")
        XCTAssertEqual(try stats()["authorizations"] ?? 0, before + 1)
        let last = try XCTUnwrap(d.answer(6)?.message["error"] as? [String: Any])
        XCTAssertTrue((last["message"] as? String ?? "").contains("tokenvault login \(url("denied"))"), "\(last)")
    }
}
