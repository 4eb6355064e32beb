import Foundation
import TokenVaultKit
import XCTest

/// `lock` and `agent stop` win over a request under way, `lock` takes the
/// clients' kept environments with the keys, and a secret command has bounds
/// on its output and its time (docs/agent.md, "Locked"; docs/config.md,
/// `command_timeout`).
final class AgentRestraintTests: QuirkProviderTestCase {
    /// A sandbox holding an expired credential of `q`, whose client secret
    /// comes from `command`.
    func sandbox(command: String, extra: String = "") throws -> Sandbox {
        let s = Sandbox()
        s.env["TOKENVAULT_KEY_TTL"] = "900"
        try s.writeConfig(
            """
            min_valid = 1
            \(extra)
            [providers.q]
            service = "api.quirk.example"
            token_url = "http://127.0.0.1:\(Self.port)/secret-rotate"
            client_id = "cid"
            client_secret_command = '\(command)'
            """)
        s.expect(
            "set", "q", "--provider", "q", stdin: #"{"access_token":"old","refresh_token":"r-old","expires_at":1}"#)
        return s
    }

    /// A command that notes its shell's pid, then holds for half a minute.
    let held = #"echo $$ > "$HOME/held"; sleep 30; printf csecret"#

    func startAgent(_ s: Sandbox) throws -> Int32 {
        s.expect("agent")
        addTeardownBlock { _ = s.tv("agent", "stop") }
        return Int32(try XCTUnwrap(s.agentStatus()?["pid"] as? Int))
    }

    /// `get q` in a process of its own, under way until the returned process ends.
    func getInBackground(_ s: Sandbox) throws -> (Process, Pipe) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Paths.binary)
        p.arguments = ["get", "q"]
        p.environment = s.env
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.runNoted()
        return (p, err)
    }

    /// The held command's shell, once it has started.
    func heldShell(_ s: Sandbox) throws -> Int32 {
        var pid: Int32 = 0
        XCTAssertTrue(
            eventually(10) {
                let text = (try? String(contentsOfFile: s.home + "/held", encoding: .utf8)) ?? ""
                pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
                return pid > 0
            }, "the secret command started")
        return pid
    }

    func stored(_ s: Sandbox) -> String {
        s.tv("get", "q", "--field", "refresh_token", "--no-refresh", env: ["TOKENVAULT_AGENT": "off"]).out
    }

    func testALockWinsOverARequestUnderWay() throws {
        let s = try sandbox(command: held)
        _ = try startAgent(s)
        let before = try stats()["/secret-rotate"] ?? 0
        let (get, err) = try getInBackground(s)
        let shell = try heldShell(s)
        s.expect("lock")
        // Confirmed: the command is ended, and the request sends nothing.
        get.waitUntilExit()
        let said = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(get.terminationStatus, 75, said)
        XCTAssertTrue(said.contains("tokenvault lock ran while the agent worked on this request"), said)
        XCTAssertTrue(processGone(shell), "the secret command was ended")
        XCTAssertEqual(try stats()["/secret-rotate"] ?? 0, before, "nothing was sent")
        XCTAssertEqual(stored(s), "r-old", "nothing stored changed")
    }

    /// `agent stop` returns once the agent has left; what it had not sent
    /// is the client's to run, which renews the credential once.
    func testAgentStopReturnsOnceTheAgentHasLeft() throws {
        // Held the first time only: the client's own run of it answers at once.
        let s = try sandbox(command: #"[ -e "$HOME/once" ] || { touch "$HOME/once"; \#(held); }; printf csecret"#)
        let agent = try startAgent(s)
        let before = try stats()["/secret-rotate"] ?? 0
        let (get, err) = try getInBackground(s)
        let shell = try heldShell(s)
        s.expect("agent", "stop", stderr: ["the agent stopped"])
        XCTAssertTrue(processGone(agent), "gone when stop returned")
        XCTAssertTrue(processGone(shell), "its secret command was ended")
        get.waitUntilExit()
        let said = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(get.terminationStatus, 0, said)
        XCTAssertEqual(try stats()["/secret-rotate"] ?? 0, before + 1, "sent once, by the client itself")
        XCTAssertTrue(stored(s).hasPrefix("sr-rt-"))
    }

    /// The environment kept for a credential's renewals (docs/agent.md) is
    /// gone from the agent's memory once `lock` is run.
    func testLockWipesTheClientsEnvironments() throws {
        let s = try sandbox(command: #"printf %s "$TV_CLIENT_SECRET""#)
        let agent = try startAgent(s)
        let mark = "tv-kept-" + UUID().uuidString
        let valid = Int(Date().timeIntervalSince1970) + 3600
        s.expect(
            "set", "q", "--provider", "q",
            stdin: #"{"access_token":"a","refresh_token":"r","expires_at":\#(valid)}"#)
        XCTAssertEqual(s.expect("get", "q", env: ["TV_CLIENT_SECRET": "csecret", "TV_MARK": mark]).stdout, "a\n")
        XCTAssertGreaterThan(occurrencesInMemory(of: mark, pid: agent), 0, "kept for the renewals")
        s.expect("lock")
        XCTAssertEqual(occurrencesInMemory(of: mark, pid: agent), 0, "gone with the keys")
    }

    /// A command that prints more than a secret, or never finishes, is
    /// ended with an error that names its setting; in the agent too.
    func testASecretCommandIsBounded() throws {
        let large = try sandbox(command: #"head -c 100000 /dev/zero | tr "\\0" a"#)
        let before = try stats()["/secret-rotate"] ?? 0
        for env in [["TOKENVAULT_AGENT": "off"], [:]] {
            if env.isEmpty { _ = try startAgent(large) }
            let r = large.tv("get", "q", env: env)
            XCTAssertEqual(r.status, 78, r.stderr)
            XCTAssertTrue(
                r.stderr.contains("client_secret_command of [providers.q] printed more than 64 KiB"), r.stderr)
        }
        let slow = try sandbox(command: held, extra: "command_timeout = 1")
        for env in [["TOKENVAULT_AGENT": "off"], [:]] {
            if env.isEmpty { _ = try startAgent(slow) }
            try? FileManager.default.removeItem(atPath: slow.home + "/held")
            let r = slow.tv("get", "q", env: env)
            XCTAssertEqual(r.status, 78, r.stderr)
            XCTAssertTrue(
                r.stderr.contains(
                    "client_secret_command of [providers.q] did not finish within 1 s (command_timeout in config.toml)"),
                r.stderr)
            XCTAssertTrue(processGone(try heldShell(slow)), "ended")
        }
        XCTAssertEqual(try stats()["/secret-rotate"] ?? 0, before, "nothing was sent")
        XCTAssertEqual(stored(slow), "r-old")
        let wrong = try sandbox(command: "true")
        try wrong.writeConfig("command_timeout = 0\n")
        let r = wrong.tv("get", "q")
        XCTAssertEqual(r.status, 78)
        XCTAssertTrue(r.stderr.contains("command_timeout"), r.stderr)
    }
}
