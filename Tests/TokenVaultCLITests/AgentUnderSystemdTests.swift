import Foundation
import XCTest

/// The agent started by a socket unit, as contrib/systemd installs it
/// (docs/agent.md, "Started by systemd"): systemd owns the listening socket
/// and starts the agent on a connection. Its stand-in is
/// Tests/Fixtures/socket_supervisor.py, which passes fd 3 with LISTEN_FDS and
/// LISTEN_PID, polls the socket again once the agent has left, and notes a
/// SIGTERM sent to it (systemd --user would stop the whole session) and a
/// socket found shut (systemd would fail the unit).
final class AgentUnderSystemdTests: AgentTestCase {
    /// A socket unit's owner for the sandbox's agent socket, running `program agent run --foreground`.
    final class SocketUnit {
        let process = Process()
        let socket: String, pids: String

        init(_ s: Sandbox, program: String) throws {
            socket = s.home + "/run/tokenvault/agent.sock"
            pids = s.home + "/pids"
            try FileManager.default.createDirectory(
                atPath: s.home + "/run/tokenvault", withIntermediateDirectories: true)
            chmod(s.home + "/run/tokenvault", 0o700)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = [
                Paths.fixtures.appendingPathComponent("socket_supervisor.py").path, socket, pids, "--", program,
                "agent", "run", "--foreground",
            ]
            process.environment = s.env
            process.standardError = FileHandle.nullDevice
            try process.runNoted()
            XCTAssertTrue(eventually(5) { FileManager.default.fileExists(atPath: self.socket) }, "it listens")
        }

        /// The agents it started, in order.
        var started: [Int32] {
            ((try? String(contentsOfFile: pids, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                Int32($0)
            }
        }
        var terminated: Bool { FileManager.default.fileExists(atPath: pids + ".term") }
        var failed: String? { try? String(contentsOfFile: pids + ".failed", encoding: .utf8) }

        /// Nothing the agent did broke the unit: still running, not signalled, the socket not shut.
        func assertHealthy(_ when: String, file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertTrue(process.isRunning, "\(when): the socket's owner runs", file: file, line: line)
            XCTAssertFalse(terminated, "\(when): no SIGTERM reached the socket's owner", file: file, line: line)
            XCTAssertNil(failed, "\(when): the listening socket was left as it was", file: file, line: line)
        }

        func stop() {
            if process.isRunning { process.terminate() }
            for pid in started { kill(pid, SIGKILL) }
        }
    }

    /// `agent stop` and a SIGTERM (systemctl stop) each leave
    /// systemd's socket as it was: the next connection starts the next agent.
    func testASocketActivatedAgentLeavesTheSocketToItsOwner() throws {
        let s = sandbox("file")
        s.env["TOKENVAULT_KEY_TTL"] = "900"
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "tok-unit").status, 0)
        let unit = try SocketUnit(s, program: Paths.binary)
        defer { unit.stop() }
        XCTAssertEqual(s.tv("get", "api.example.com").out, "tok-unit")
        let first = try XCTUnwrap(unit.started.first)
        // agent stop: it leaves; the socket is still systemd's and answers.
        s.expect("agent", "stop")
        XCTAssertTrue(eventually(10) { processGone(first) }, "the agent left")
        unit.assertHealthy("after agent stop")
        XCTAssertEqual(s.tv("get", "api.example.com").out, "tok-unit")
        XCTAssertEqual(unit.started.count, 2, "the next connection started the next agent")
        // A SIGTERM, as systemctl --user stop sends.
        let second = try XCTUnwrap(unit.started.last)
        kill(second, SIGTERM)
        XCTAssertTrue(eventually(10) { processGone(second) }, "the agent left on SIGTERM")
        unit.assertHealthy("after SIGTERM")
        XCTAssertEqual(s.tv("get", "api.example.com").out, "tok-unit")
        XCTAssertEqual(unit.started.count, 3)
        XCTAssertEqual(try agentStatus(s)?["pid"] as? Int32, unit.started.last)
    }

    /// A command of another build meets the unit's agent: the agent is asked
    /// to stop over its socket, and systemd — the socket's listener, which
    /// SO_PEERCRED names — gets no signal; no agent of the command's own is
    /// started beside the unit. After the install, the unit's next agent is
    /// the new build's. `lock` does the same and succeeds.
    func testAnotherBuildNeverSignalsTheSocketsOwner() throws {
        let s = sandbox("file")
        s.env["TOKENVAULT_KEY_TTL"] = "900"
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "tok-build").status, 0)
        // What the unit's ExecStart names: the old build now, this one after `make install`.
        let installed = s.home + "/bin/tokenvault", old = s.home + "/old-tokenvault"
        let build = try copyOfAnotherBuild(to: old)
        try FileManager.default.createDirectory(atPath: s.home + "/bin", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: installed, withDestinationPath: old)
        let unit = try SocketUnit(s, program: installed)
        defer { unit.stop() }
        // The old build's agent, started by a command of its own.
        XCTAssertEqual(runProcess(old, ["get", "api.example.com"], env: s.env).stdout, "tok-build\n")
        let oldAgent = try XCTUnwrap(unit.started.first)
        var st = stat()
        XCTAssertEqual(lstat(unit.socket, &st), 0)
        let socketInode = st.st_ino
        // `make install`: the new build in place, while the old agent runs.
        try FileManager.default.removeItem(atPath: installed)
        try FileManager.default.createSymbolicLink(atPath: installed, withDestinationPath: Paths.binary)
        // This build's first command: answered (directly), the old agent asked to leave.
        XCTAssertEqual(s.tv("get", "api.example.com").out, "tok-build")
        XCTAssertTrue(eventually(10) { processGone(oldAgent) }, "the old build's agent left")
        unit.assertHealthy("after another build's get")
        XCTAssertEqual(lstat(unit.socket, &st), 0)
        XCTAssertEqual(st.st_ino, socketInode, "the socket is still the unit's: no agent of the command took it")
        // The next connection: the unit starts the installed (this) build, which answers.
        XCTAssertEqual(s.tv("get", "api.example.com").out, "tok-build")
        XCTAssertEqual(unit.started.count, 2)
        let status = try XCTUnwrap(try agentStatus(s))
        XCTAssertEqual(status["pid"] as? Int32, unit.started.last)
        XCTAssertEqual(status["build"] as? String, build)
        // lock, from the old build this time: the agent confirms; nobody is signalled.
        let lock = runProcess(old, ["lock"], env: s.env)
        XCTAssertEqual(lock.status, 0, lock.stderr)
        unit.assertHealthy("after another build's lock")
        XCTAssertEqual(try agentStatus(s)?["locked"] as? Bool, true, "the agent confirmed the lock")
    }
}
