import Foundation
import TokenVaultKit
import XCTest

/// What the agent promises (docs/agent.md), held the way users run it: a
/// provider's short token lifetimes with no client asking again, the same
/// setup spelt another way, and an agent nobody started by hand.
final class AgentPromiseTests: XCTestCase {
    nonisolated(unsafe) static var keyring: PrivateKeyring!

    override class func setUp() { keyring = try! PrivateKeyring() }
    override class func tearDown() { keyring.stop() }

    func sandbox(_ backend: String = "file") -> Sandbox {
        let s = Sandbox(backend: backend)
        s.env.merge(Self.keyring.env) { $1 }
        s.env["TOKENVAULT_KEY_TTL"] = "900"
        return s
    }

    func agentStatus(_ s: Sandbox, env: [String: String] = [:]) -> [String: Any]? { s.agentStatus(env: env) }

    func requests(_ s: Sandbox, env: [String: String] = [:]) -> Int {
        agentStatus(s, env: env)?["requests"] as? Int ?? -1
    }

    // MARK: Renewal ahead of every expiry

    func testShortTokensAreRenewedAheadOfEveryExpiryWithNoClientAsking() throws {
        // Tokens of 6 s: shorter than the lead (min_valid + 60 s), so renewed half a lifetime ahead.
        let lifetime = 6
        var runs: [(Sandbox, LocalProvider, Int, String)] = []
        for backend in ["file", "secret-service"] {
            let provider = try LocalProvider(tokenTTL: lifetime)
            let s = sandbox(backend)
            try s.writeConfig("min_valid = 1\n" + provider.config)
            let json = String(
                decoding: try JSONSerialization.data(withJSONObject: try provider.obtainToken()), as: UTF8.self)
            XCTAssertEqual(s.tv("set", "local", "--provider", "local", stdin: json).status, 0)
            XCTAssertEqual(s.tv("agent").status, 0)
            addTeardownBlock { s.expect("agent", "stop") }
            let before = try provider.stats()["refreshes"] ?? 0
            let first = s.tv("get", "local")
            XCTAssertEqual(first.status, 0, first.stderr)
            runs.append((s, provider, before, backend))
        }
        // Renewed twice, and nobody asks again (how often per lifetime: AheadOfNeedTests, on a test clock).
        let started = Date()
        for (s, _, _, backend) in runs {
            XCTAssertTrue(
                eventually(Double(lifetime * 4)) { (agentStatus(s)?["renewals"] as? Int ?? 0) >= 2 }, "\(backend)")
        }
        let lifetimes = Int(Date().timeIntervalSince(started)) / lifetime + 1
        for (s, provider, before, backend) in runs {
            let renewed = (try provider.stats()["refreshes"] ?? 0) - before
            XCTAssertGreaterThanOrEqual(renewed, 2, "\(backend): renewed in every lifetime")
            XCTAssertLessThanOrEqual(renewed, lifetimes * 2 + 1, "\(backend): at most about twice per lifetime")
            let status = try XCTUnwrap(agentStatus(s))
            XCTAssertEqual(status["renewals"] as? Int, renewed, "\(backend): counted when the provider answered")
            let kept = try XCTUnwrap((status["credentials"] as? [[String: Any]])?.first, "\(status)")
            XCTAssertNotNil(kept["next_renewal"] as? Int, "\(kept)")
            XCTAssertEqual((kept["last"] as? [String: Any])?["outcome"] as? String, "renewed", "\(kept)")
            // A get now finds a token good for more than min_valid: nothing goes to the provider.
            let atGet = try provider.stats()["refreshes"] ?? 0
            let token = s.tv("get", "local", env: ["TOKENVAULT_AGENT": "off"])
            XCTAssertEqual(token.status, 0, token.stderr)
            XCTAssertEqual(provider.resourceStatus(token.out), 200, "\(backend): the token works")
            XCTAssertEqual(try provider.stats()["refreshes"] ?? 0, atGet, "\(backend): the get asked nothing")
            let shown = s.tv("agent", "status")
            // Its next renewal, or the one under way where a lifetime this short is already at its margin.
            let line = "127.0.0.1:\(provider.port) (default): "
            XCTAssertTrue(
                shown.stdout.contains(line + "renewed in") || shown.stdout.contains(line + "renewing now"), shown.stdout
            )
            XCTAssertTrue(shown.stdout.contains("last") && shown.stdout.contains("renewed"), shown.stdout)
            provider.stop()
        }
    }

    // MARK: One setup, however spelt

    func testTheDefaultSpeltAnyWayIsAnsweredByTheRunningAgent() throws {
        let s = sandbox()
        s.env["TOKENVAULT_BACKEND"] = nil  // the default: auto, with the config saying nothing
        XCTAssertEqual(s.tv("set", "api.spelt.example", stdin: "spelt-tok").status, 0)
        XCTAssertEqual(s.tv("agent").status, 0)
        addTeardownBlock { s.expect("agent", "stop") }
        for spelling in [
            ["TOKENVAULT_BACKEND": "auto"], ["TOKENVAULT_BACKEND": "auto", "TOKENVAULT_DBUS_TIMEOUT": "3"],
            ["TOKENVAULT_BACKEND": ""],
            ["TOKENVAULT_DBUS_TIMEOUT": "3.0"], ["TOKENVAULT_KEY_TTL": "900"], ["TOKENVAULT_ETCD_PREFIX": "other/"],
        ] {
            let before = requests(s)
            let r = s.tv("get", "api.spelt.example", env: spelling)
            XCTAssertEqual(r.out, "spelt-tok", "\(spelling): \(r.stderr)")
            XCTAssertEqual(requests(s) - before, 2, "\(spelling): answered by the agent (and one status)")
        }
        // Another setup is another setup: said with --verbose, and by doctor.
        let before = requests(s)
        let other = s.tv("get", "api.spelt.example", "--verbose", env: ["TOKENVAULT_DBUS_TIMEOUT": "7"])
        XCTAssertEqual(other.out, "spelt-tok")
        XCTAssertTrue(
            other.stderr.contains(
                "the agent did not run this command (another setup: TOKENVAULT_DBUS_TIMEOUT differs)"),
            other.stderr)
        XCTAssertEqual(requests(s) - before, 1, "declined: not counted as answered (one status)")
        let doctor = s.tv("doctor", env: ["TOKENVAULT_DBUS_TIMEOUT": "7"])
        XCTAssertTrue(doctor.stdout.contains("for another setup (TOKENVAULT_DBUS_TIMEOUT differs)"), doctor.stdout)
    }

    /// Only what a request uses makes another setup: a key lifetime for the
    /// file vault changes nothing for credentials in the Secret Service, on
    /// auto with no vault file; once a vault file exists, it does.
    func testAKeyLifetimeMattersOnlyWhereTheFileVaultIsUsed() throws {
        let s = sandbox("auto")
        s.env["TOKENVAULT_KEY_TTL"] = nil
        XCTAssertEqual(s.tv("set", "api.ss.example", stdin: "ss-tok").status, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.vault), "stored in the Secret Service")
        XCTAssertEqual(s.tv("agent").status, 0)
        addTeardownBlock { s.expect("agent", "stop") }
        var before = requests(s)
        let ttl = s.tv("get", "api.ss.example", "--verbose", env: ["TOKENVAULT_KEY_TTL": "60"])
        XCTAssertEqual(ttl.out, "ss-tok", ttl.stderr)
        XCTAssertEqual(requests(s) - before, 2, "answered by the agent: \(ttl.stderr)")
        // A vault file: now the key's lifetime is part of the setup.
        XCTAssertEqual(s.tv("set", "api.file.example", stdin: "f", env: ["TOKENVAULT_BACKEND": "file"]).status, 0)
        before = requests(s)
        let declined = s.tv("get", "api.ss.example", "--verbose", env: ["TOKENVAULT_KEY_TTL": "60"])
        XCTAssertEqual(declined.out, "ss-tok")
        XCTAssertTrue(declined.stderr.contains("another setup: key_ttl differs"), declined.stderr)
    }

    /// The same for what the backend never reads: the D-Bus waits on the
    /// file vault, the vault's path on the Secret Service.
    func testWhatTheBackendNeverReadsMakesNoOtherSetup() throws {
        for (backend, other) in [
            ("file", ["TOKENVAULT_DBUS_TIMEOUT": "7", "TOKENVAULT_UNLOCK_TIMEOUT": "9"]),
            ("secret-service", ["TOKENVAULT_VAULT": "/nonexistent/elsewhere/vault"]),
        ] {
            let s = sandbox(backend)
            XCTAssertEqual(s.tv("set", "api.same.example", stdin: "same-tok").status, 0)
            XCTAssertEqual(s.tv("agent").status, 0)
            let before = requests(s)
            let r = s.tv("get", "api.same.example", "--verbose", env: other)
            XCTAssertEqual(r.out, "same-tok", "\(backend): \(r.stderr)")
            XCTAssertEqual(requests(s) - before, 2, "\(backend) \(other): answered by the agent: \(r.stderr)")
            s.expect("agent", "stop")
        }
    }

    // MARK: Started on first use

    /// The agents that serve `s`'s runtime directory: their process ids.
    func agents(_ s: Sandbox) -> [Int32] {
        let dir = s.env["XDG_RUNTIME_DIR"]!
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return pids.compactMap(Int32.init).filter { pid in
            guard let cmd = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")),
                String(decoding: cmd, as: UTF8.self).hasPrefix("tokenvault\0agent\0"),
                let env = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))
            else { return false }
            return String(decoding: env, as: UTF8.self).split(separator: "\0").contains("XDG_RUNTIME_DIR=\(dir)"[...])
        }
    }

    func onFirstUse(_ config: String = "") throws -> Sandbox {
        let s = sandbox()
        s.env["TOKENVAULT_AGENT"] = nil
        try s.writeConfig(config)
        XCTAssertEqual(
            s.tv("set", "api.first.example", stdin: "first-tok", env: ["TOKENVAULT_AGENT": "manual"]).status, 0)
        addTeardownBlock {
            s.expect("agent", "stop")
            for pid in self.agents(s) { kill(pid, SIGKILL) }
        }
        return s
    }

    func testTheFirstGetStartsTheAgentAndTheNextIsAnsweredByIt() throws {
        let s = try onFirstUse()
        XCTAssertTrue(agents(s).isEmpty)
        let first = s.tv("get", "api.first.example")
        XCTAssertEqual(first.out, "first-tok", first.stderr)
        XCTAssertTrue(eventually(5) { agentStatus(s) != nil }, "an agent was started")
        let pid = try XCTUnwrap(agentStatus(s)?["pid"] as? Int32)
        let cmdline = try String(
            decoding: Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")), as: UTF8.self)
        XCTAssertTrue(
            cmdline.hasPrefix("tokenvault\0agent\0"), "ps shows tokenvault agent: \(cmdline.debugDescription)")
        let environ = try String(
            decoding: Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ")), as: UTF8.self)
        XCTAssertFalse(environ.contains("TOKENVAULT_PASSPHRASE"), "it holds no passphrase source")
        let before = requests(s)
        XCTAssertEqual(s.tv("get", "api.first.example").out, "first-tok")
        XCTAssertEqual(requests(s) - before, 2, "answered by the agent (and one status)")
        XCTAssertEqual(agents(s), [pid])
        XCTAssertTrue(s.tv("doctor").stdout.contains("started on first use"), s.tv("doctor").stdout)
        // Killed, its socket left behind: the next get starts another.
        kill(pid, SIGKILL)
        XCTAssertTrue(eventually(5) { agents(s).isEmpty })
        XCTAssertEqual(s.tv("get", "api.first.example").out, "first-tok")
        XCTAssertTrue(eventually(5) { (agentStatus(s)?["pid"] as? Int32).map { $0 != pid } == true }, "replaced")
    }

    /// A descriptor the first command got from its parent (a shell's pipe, an
    /// open file) does not reach the agent it starts: an agent holding a
    /// caller's pipe would keep that caller waiting for its end for an hour.
    func testTheAgentStartedOnUseInheritsNoDescriptorOfItsCaller() throws {
        let s = try onFirstUse()
        let held = s.home + "/held-by-the-caller"
        let first = runProcess(
            "/usr/bin/python3",
            [
                "-c",
                "import os, sys; fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY); os.set_inheritable(fd, True); "
                    + "os.execv(sys.argv[2], sys.argv[2:])", held, Paths.binary, "get", "api.first.example",
            ], env: s.env, limit: 60)
        XCTAssertEqual(first.out, "first-tok", first.stderr)
        XCTAssertTrue(eventually(5) { agentStatus(s) != nil }, "an agent was started")
        let pid = try XCTUnwrap(agentStatus(s)?["pid"] as? Int32)
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        let targets = fds.compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")
        }
        XCTAssertFalse(targets.isEmpty)
        XCTAssertFalse(targets.contains(held), "the caller's file reached the agent: \(targets)")
    }

    func testManyFirstGetsAtOnceStartOneAgent() throws {
        let s = try onFirstUse()
        let outs = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            let r = s.tv("get", "api.first.example")
            outs.mutate { $0.append(r.out) }
        }
        XCTAssertEqual(outs.value, Array(repeating: "first-tok", count: 6))
        XCTAssertTrue(eventually(5) { agentStatus(s) != nil })
        // Those that lost the agent's lock leave at once.
        XCTAssertTrue(eventually(5) { agents(s).count == 1 }, "one agent, however many started it: \(agents(s))")
    }

    func testNoAgentIsStartedWhenTurnedOffAndAnIdleOneStops() throws {
        let off = try onFirstUse("agent = false\n")
        XCTAssertEqual(off.tv("get", "api.first.example").out, "first-tok")
        let manual = try onFirstUse()
        XCTAssertEqual(manual.tv("get", "api.first.example", env: ["TOKENVAULT_AGENT": "manual"]).out, "first-tok")
        let never = try onFirstUse()
        XCTAssertEqual(never.tv("get", "api.first.example", env: ["TOKENVAULT_AGENT": "off"]).out, "first-tok")
        usleep(1_000_000)
        for s in [off, manual, never] { XCTAssertEqual(agents(s), [], "none started") }
        XCTAssertTrue(off.tv("doctor").stdout.contains("agent = false"), off.tv("doctor").stdout)
        // Idle for agent_idle seconds: it stops, and takes its socket with it.
        let idle = try onFirstUse("agent_idle = 2\n")
        XCTAssertEqual(idle.tv("get", "api.first.example").out, "first-tok")
        XCTAssertTrue(eventually(5) { agentStatus(idle) != nil })
        XCTAssertTrue(eventually(8) { agents(idle).isEmpty }, "it stopped")
        XCTAssertFalse(FileManager.default.fileExists(atPath: idle.env["XDG_RUNTIME_DIR"]! + "/tokenvault/agent.sock"))
    }
}
