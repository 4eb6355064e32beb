import Foundation
import XCTest

/// The commands the agent runs whole for its client (docs/agent.md): the
/// same output, exit status and environment as the command run directly.
extension AgentTests {
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
        // Another process's write is read at once: the vault is asked every time.
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "tok-2").status, 0)
        XCTAssertEqual(s.tv("get", "api.example.com").out, "tok-2")
    }
}
