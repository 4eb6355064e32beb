import Foundation
import TokenVaultKit
import XCTest

/// The agent acts only in its client's world (docs/security.md, "Clients
/// less trusted than the agent"): a client in another mount namespace is
/// handed what the agent holds and runs anything more itself; what the agent
/// passes on to a command carries no loader or interpreter variable; a
/// renewal ahead of need runs in the world of the client that brought the
/// credential, not of whichever asked last.
final class AgentConfinementTests: QuirkProviderTestCase {
    /// A sandbox whose provider wants a client secret from a command that
    /// notes, in $HOME/ran, who ran it (its parent) and in which mount namespace.
    func sandbox(command: String? = nil) throws -> Sandbox {
        let s = Sandbox()
        s.env["TOKENVAULT_KEY_TTL"] = "900"
        let noted = #"echo "$PPID $(readlink /proc/self/ns/mnt)" >> "$HOME/ran"; printf %s "$TV_CLIENT_SECRET""#
        try s.writeConfig(
            """
            min_valid = 1
            [providers.q]
            service = "api.quirk.example"
            token_url = "http://127.0.0.1:\(Self.port)/secret-rotate"
            client_id = "cid"
            client_secret_command = '\(command ?? noted)'
            """)
        return s
    }

    func startAgent(_ s: Sandbox) throws -> Int {
        s.expect("agent")
        addTeardownBlock { _ = s.tv("agent", "stop") }
        return try XCTUnwrap(s.agentStatus()?["pid"] as? Int)
    }

    func requests(_ s: Sandbox) -> Int { s.agentStatus()?["requests"] as? Int ?? -1 }

    /// Who ran the secret command: (parent pid, mount namespace) a line.
    func ran(_ s: Sandbox) -> [(parent: Int, namespace: String)] {
        let text = (try? String(contentsOfFile: s.home + "/ran", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map {
            let parts = $0.split(separator: " ", maxSplits: 1)
            return (Int(parts[0]) ?? 0, parts.count > 1 ? String(parts[1]) : "")
        }
    }

    func testAClientInAnotherNamespaceIsHandedOnlyWhatTheAgentHolds() throws {
        let s = try sandbox()
        let agent = try startAgent(s)
        let agentNamespace = try XCTUnwrap(Posix.readLink("/proc/\(agent)/ns/mnt"))
        let client = ["TV_CLIENT_SECRET": "csecret"]
        let valid = Int(Date().timeIntervalSince1970) + 3600
        s.expect(
            "set", "q", "--provider", "q",
            stdin: #"{"access_token":"held","refresh_token":"r1","expires_at":\#(valid)}"#)
        // What the agent holds: handed out, by the agent.
        var before = requests(s)
        let held = s.shell(#"unshare --mount "$TV" get q"#, env: client)
        XCTAssertEqual(held.stdout, "held\n", held.stderr)
        XCTAssertEqual(requests(s) - before, 2, "answered by the agent (and one status)")
        // A renewal needs the secret command: the agent declines, and the client runs it in its own world.
        s.expect(
            "set", "q", "--provider", "q", stdin: #"{"access_token":"old","refresh_token":"r1","expires_at":1}"#)
        before = requests(s)
        let renewed = s.shell(#"unshare --mount "$TV" get q --verbose"#, env: client)
        XCTAssertTrue(renewed.stdout.hasPrefix("sr-at-"), renewed.stderr)
        XCTAssertTrue(renewed.stderr.contains("the client is in another namespace"), renewed.stderr)
        XCTAssertEqual(requests(s) - before, 2, "asked once, declined")
        let confined = ran(s)
        XCTAssertEqual(confined.count, 1)
        XCTAssertNotEqual(confined.first?.parent, agent, "not run by the agent")
        XCTAssertNotEqual(confined.first?.namespace, agentNamespace, "run in the client's own namespace")
        // The same request from the agent's own world: the agent runs it, as before.
        s.expect(
            "set", "q", "--provider", "q", stdin: #"{"access_token":"old","refresh_token":"r2","expires_at":1}"#)
        XCTAssertTrue(s.expect("get", "q", env: client).stdout.hasPrefix("sr-at-"))
        XCTAssertEqual(ran(s).last?.parent, agent, "run by the agent for a client of its world")
        XCTAssertEqual(ran(s).last?.namespace, agentNamespace)
    }

    /// What /proc shows anyone decides where /proc/PID/ns is closed (a
    /// process that is not dumpable, as tokenvault's own commands are not).
    func testNamespacesAreToldApartFromWhatProcShowsAnyone() throws {
        XCTAssertEqual(PeerWorld.sameMountNamespace(getpid()), true)
        XCTAssertEqual(PeerWorld.sameUserNamespace(getpid()), true)
        XCTAssertNotNil(PeerWorld.outside(pid: 0), "a process the agent cannot see")
        for (flags, same) in [
            ([], PeerWorld.sameMountNamespace), (["--mount"], PeerWorld.sameMountNamespace),
            (["--user"], PeerWorld.sameUserNamespace),
        ] {
            let flag = flags.first ?? "none"
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
            p.arguments = flags + ["--", "/bin/sleep", "30"]
            try p.runNoted()
            defer {
                p.terminate()
                p.waitUntilExit()
            }
            let pid = p.processIdentifier
            // unshare execs sleep once the namespace is made.
            XCTAssertTrue(eventually(5) { Posix.readLink("/proc/\(pid)/exe")?.hasSuffix("sleep") == true }, flag)
            XCTAssertEqual(same(pid), flags.isEmpty, flag)
            XCTAssertEqual(PeerWorld.outside(pid: pid) == nil, flags.isEmpty, flag)
        }
    }

    /// A client's loader, glibc and interpreter variables never reach a
    /// command the agent runs for it; the rest of its environment does.
    func testWhatTheAgentPassesOnCarriesNoInjectionVariables() throws {
        let s = try sandbox(command: #"env > "$HOME/env.$PPID"; printf %s "$TV_CLIENT_SECRET""#)
        let agent = try startAgent(s)
        s.expect(
            "set", "q", "--provider", "q", stdin: #"{"access_token":"old","refresh_token":"r1","expires_at":1}"#)
        let injected = [
            "LD_LIBRARY_PATH": "/nonexistent", "LD_AUDIT": "/nonexistent/audit.so",
            "GLIBC_TUNABLES": "glibc.malloc.check=0",
            "BASH_ENV": "/nonexistent/bashrc", "ENV": "/nonexistent/shrc", "PYTHONPATH": "/nonexistent",
            "PERL5OPT": "-Mnonexistent", "NODE_OPTIONS": "--require=/nonexistent", "BASH_FUNC_cat%%": "() { :; }",
        ]
        let r = s.tv("get", "q", env: injected.merging(["TV_CLIENT_SECRET": "csecret"]) { $1 })
        XCTAssertTrue(r.stdout.hasPrefix("sr-at-"), r.stderr)
        let seen = try String(contentsOfFile: s.home + "/env.\(agent)", encoding: .utf8)
        XCTAssertTrue(seen.contains("TV_CLIENT_SECRET=csecret"), "the client's own variables pass")
        XCTAssertTrue(seen.contains("HOME=\(s.home)"))
        for name in injected.keys {
            XCTAssertFalse(seen.split(separator: "\n").contains { $0.hasPrefix(name + "=") }, "\(name) passed on")
        }
    }

    /// The renewal ahead of need runs in the world of the client that
    /// brought the credential: a later client whose secret command fails
    /// there decides nothing for it.
    func testARenewalRunsInTheWorldOfTheClientThatBroughtTheCredential() throws {
        let s = try sandbox(command: #"printf %s "$TV_CLIENT_SECRET""#)
        _ = try startAgent(s)
        let expires = Int(Date().timeIntervalSince1970) + 8
        s.expect(
            "set", "q", "--provider", "q",
            stdin: #"{"access_token":"old","refresh_token":"r-old","expires_at":\#(expires)}"#)
        XCTAssertEqual(s.expect("get", "q", env: ["TV_CLIENT_SECRET": "csecret"]).stdout, "old\n")
        // Asked last, by a client whose command gives a wrong secret.
        XCTAssertEqual(s.expect("get", "q", env: ["TV_CLIENT_SECRET": "wrong"]).stdout, "old\n")
        XCTAssertTrue(eventually(20) { s.agentSettled() }, "the renewal ahead of need ran")
        let kept = try XCTUnwrap((s.agentStatus()?["credentials"] as? [[String: Any]])?.first)
        XCTAssertEqual((kept["last"] as? [String: Any])?["outcome"] as? String, "renewed")
        XCTAssertTrue(s.expect("get", "q", "--no-refresh").stdout.hasPrefix("sr-at-"))
    }
}
