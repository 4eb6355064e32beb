import Foundation
import XCTest

/// The commands the agent runs whole for its client (docs/agent.md): the
/// same output, exit status and environment as the command run directly.
final class AgentRunsCommandsTests: AgentTestCase {
    func testTheAgentRunsTheClientsCommandWithTheClientsEnvironment() throws {
        let s = sandbox("file")
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "tok-d").status, 0)
        XCTAssertEqual(s.tv("set", "api.example.com", "--account", "work", stdin: "tok-w").status, 0)
        _ = try startAgent(s)
        let kubectl = [
            "KUBERNETES_EXEC_INFO":
                #"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}"#
        ]
        let cases: [([String], [String: String])] = [
            (["get", "api.example.com"], ["TOKENVAULT_ACCOUNT": "work"]),
            (["get", "api.example.com", "--format", "kubectl"], kubectl),
            (["get", "--help"], [:]), (["get", "api.example.com", "--bogus"], [:]),
            (["header", "api.example.com", "--format", "nope"], [:]), (["get"], [:]),
            (["status"], [:]), (["status", "api.example.com", "--json"], ["TOKENVAULT_ACCOUNT": "work"]),
            (["list", "--json"], [:]), (["list", "--color", "always"], ["NO_COLOR": "1"]),
        ]
        for (args, env) in cases {
            let before = try requests(s)
            let viaAgent = s.run(args, env: env)
            let asked = try requests(s) - before - 1
            let direct = s.run(args, env: env.merging(["TOKENVAULT_AGENT": "off"]) { $1 })
            XCTAssertEqual(asked, 1, "\(args): sent to the agent")
            XCTAssertEqual(viaAgent.status, direct.status, "\(args)")
            XCTAssertEqual(viaAgent.stdout, direct.stdout, "\(args)")
            XCTAssertEqual(viaAgent.stderr, direct.stderr, "\(args)")
        }
        XCTAssertEqual(s.run(["get", "api.example.com"], env: ["TOKENVAULT_ACCOUNT": "work"]).out, "tok-w")
        XCTAssertTrue(s.run(["get", "api.example.com", "--format", "kubectl"], env: kubectl).out.contains("tok-d"))
        XCTAssertTrue(s.tv("get", "--help").out.contains("USAGE"))
        // On a terminal: its colours and its width are the client's, whoever prints the table.
        for args in [["list"], ["status"], ["status", "api.example.com"]] {
            let before = try requests(s)
            let viaAgent = s.onTerminal(args, columns: 60)
            XCTAssertEqual(try requests(s) - before - 1, 1, "\(args) on a terminal: sent to the agent")
            let direct = s.onTerminal(args, columns: 60, env: ["TOKENVAULT_AGENT": "off"])
            XCTAssertEqual(viaAgent.stdout, direct.stdout, "\(args)")
            XCTAssertEqual(viaAgent.status, direct.status, "\(args)")
        }
        XCTAssertTrue(s.onTerminal(["list"], columns: 60).stdout.contains("\u{1B}[32m"), "coloured on a terminal")
        XCTAssertFalse(s.tv("list").stdout.contains("\u{1B}["), "not in a pipe")
        // Another process's write is read at once: the vault is asked every time.
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "tok-2").status, 0)
        XCTAssertEqual(s.tv("get", "api.example.com").out, "tok-2")
    }

    func testSocketActivationStartsTheAgentAgainAfterItWasKilled() throws {
        let s = sandbox("file")
        s.env["TOKENVAULT_KEY_TTL"] = "900"
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "tok-again").status, 0)
        let socket = s.home + "/run/tokenvault/agent.sock", pids = s.home + "/pids"
        try FileManager.default.createDirectory(atPath: s.home + "/run/tokenvault", withIntermediateDirectories: true)
        chmod(s.home + "/run/tokenvault", 0o700)
        // A socket unit's owner: it keeps the socket, and starts the service on a connection while none runs.
        let supervisor = Process()
        supervisor.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        supervisor.arguments = [
            Paths.fixtures.appendingPathComponent("socket_supervisor.py").path, socket, pids, "--", Paths.binary,
            "agent", "run", "--foreground",
        ]
        supervisor.environment = s.env
        supervisor.standardError = FileHandle.nullDevice
        try supervisor.runNoted()
        defer {
            supervisor.terminate()
            s.expect("agent", "stop")
        }
        XCTAssertTrue(eventually(5) { FileManager.default.fileExists(atPath: socket) }, "the supervisor listens")
        func started() -> [Int32] {
            ((try? String(contentsOfFile: pids, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { Int32($0) }
        }
        XCTAssertEqual(s.tv("get", "api.example.com").out, "tok-again")
        let first = try XCTUnwrap(started().first)
        XCTAssertEqual(try agentStatus(s)?["pid"] as? Int32, first)
        kill(first, SIGKILL)
        XCTAssertTrue(eventually(10) { processGone(first) })
        // The next command's connection starts it again, and that agent answers.
        XCTAssertEqual(s.tv("get", "api.example.com").out, "tok-again")
        XCTAssertEqual(started().count, 2, "started again once")
        XCTAssertEqual(try agentStatus(s)?["pid"] as? Int32, started().last)
        XCTAssertNotEqual(started().last, first)
    }

    /// A relative TOKENVAULT_VAULT or TOKENVAULT_CONFIG names a file of the
    /// client's working directory, whoever answers: the agent (started on
    /// first use in one project, working in /) answers each project from
    /// its own vault, never from /.tv/vault.
    func testRelativePathsAreTheClientsDirectorys() throws {
        let s = sandbox("file")
        for project in ["one", "two"] {
            try FileManager.default.createDirectory(
                atPath: s.home + "/\(project)/.tv", withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            try "min_valid = 5\n".write(
                toFile: s.home + "/\(project)/.tv/config.toml", atomically: true, encoding: .utf8)
        }
        let env = [
            "TOKENVAULT_VAULT": ".tv/vault", "TOKENVAULT_CONFIG": ".tv/config.toml", "TOKENVAULT_AGENT": "auto",
        ]
        func inProject(_ project: String, _ command: String, stdin: String = "") -> Run {
            s.shell(#"cd "$HOME/\#(project)" && printf %s "\#(stdin)" | "$TV" \#(command)"#, env: env)
        }
        for (project, token) in [("one", "tok-one"), ("two", "tok-two")] {
            let set = inProject(project, "set api.example.com", stdin: token)
            XCTAssertEqual(set.status, 0, set.stderr)
        }
        XCTAssertEqual(inProject("one", "get api.example.com").stdout, "tok-one\n")
        var pid: Int32 = 0
        XCTAssertTrue(
            eventually(10) {
                pid = (try? self.agentStatus(s))??["pid"] as? Int32 ?? 0
                return pid > 0
            }, "an agent was started on first use")
        addTeardownBlock { _ = s.tv("agent", "stop") }
        let before = try requests(s)
        XCTAssertEqual(inProject("one", "get api.example.com").stdout, "tok-one\n")
        XCTAssertEqual(try requests(s) - before, 2, "answered by the agent (and one status)")
        XCTAssertEqual(inProject("two", "get api.example.com").stdout, "tok-two\n")
        XCTAssertEqual(inProject("two", "status api.example.com").status, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/.tv"), "nothing was made in /")
    }
}
