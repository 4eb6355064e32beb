import Foundation
import TokenVaultKit
import XCTest

/// What AgentTests and AgentRunsCommandsTests share: a private gnome-keyring,
/// started once per class, and the helpers that start and ask an agent.
class AgentTestCase: XCTestCase {
    nonisolated(unsafe) static var keyring: PrivateKeyring!

    override class func setUp() { keyring = try! PrivateKeyring() }
    override class func tearDown() { keyring.stop() }

    func sandbox(_ backend: String) -> Sandbox {
        let s = Sandbox(backend: backend)
        s.env.merge(Self.keyring.env) { $1 }
        return s
    }

    /// Starts the sandbox's agent; its process id. Stopped when the test ends.
    func startAgent(_ s: Sandbox) throws -> Int32 {
        let r = s.tv("agent")
        XCTAssertEqual(r.status, 0, r.stderr)
        addTeardownBlock { s.expect("agent", "stop") }
        return try XCTUnwrap(agentStatus(s)?["pid"] as? Int32)
    }

    func agentStatus(_ s: Sandbox, env: [String: String] = [:]) throws -> [String: Any]? {
        let r = s.tv("agent", "status", "--json", env: env)
        guard r.status == 0 else { return nil }
        return try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
    }

    func requests(_ s: Sandbox) throws -> Int { try agentStatus(s)?["requests"] as? Int ?? -1 }

    /// The environment a hook ran with, once it has run (it runs in the background).
    func hookEnvironment(_ s: Sandbox, _ event: String) -> [String: String]? {
        let path = s.home + "/hook-" + event
        func written() -> String? {
            (try? String(contentsOfFile: path, encoding: .utf8)).flatMap { $0.hasSuffix("END\n") ? $0 : nil }
        }
        guard eventually(15, { written() != nil }), let text = written() else { return nil }
        var env: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { env[parts[0]] = parts[1] }
        }
        return env
    }

    static let hooks = """

        [hooks]
        on_login_required = 'env > "$HOME/hook-$TOKENVAULT_EVENT.tmp"; echo END >> "$HOME/hook-$TOKENVAULT_EVENT.tmp"; mv "$HOME/hook-$TOKENVAULT_EVENT.tmp" "$HOME/hook-$TOKENVAULT_EVENT"'
        on_refresh_failed = 'env > "$HOME/hook-$TOKENVAULT_EVENT.tmp"; echo END >> "$HOME/hook-$TOKENVAULT_EVENT.tmp"; mv "$HOME/hook-$TOKENVAULT_EVENT.tmp" "$HOME/hook-$TOKENVAULT_EVENT"'
        on_refresh_token_expiring = 'env > "$HOME/hook-$TOKENVAULT_EVENT.tmp"; echo END >> "$HOME/hook-$TOKENVAULT_EVENT.tmp"; mv "$HOME/hook-$TOKENVAULT_EVENT.tmp" "$HOME/hook-$TOKENVAULT_EVENT"'
        """
}

/// `tokenvault agent` against a real gnome-keyring (a private D-Bus) and the
/// file vault: the same answers as without it, every change to the backend
/// seen at once, only its own user answered, and every command working when
/// it is gone.
final class AgentTests: AgentTestCase {
    func testTheAgentAnswersWhatTheBackendWouldForEveryBackend() throws {
        for backend in ["file", "secret-service"] {
            let s = sandbox(backend)
            XCTAssertEqual(
                s.tv(
                    "set", "api.example.com", stdin: #"{"access_token":"tok-\#(backend)","expires_in":3600,"uid":"7"}"#
                )
                .status, 0)
            let direct = [
                s.tv("get", "api.example.com", env: ["TOKENVAULT_AGENT": "off"]),
                s.tv("get", "api.example.com", "--field", "uid", env: ["TOKENVAULT_AGENT": "off"]),
                s.tv("header", "api.example.com", env: ["TOKENVAULT_AGENT": "off"]),
                s.tv("get", "api.missing.example", env: ["TOKENVAULT_AGENT": "off"]),
            ]
            _ = try startAgent(s)
            let before = try requests(s)
            let viaAgent = [
                s.tv("get", "api.example.com"), s.tv("get", "api.example.com", "--field", "uid"),
                s.tv("header", "api.example.com"), s.tv("get", "api.missing.example"),
            ]
            XCTAssertEqual(try requests(s) - before, 4 + 1, "\(backend): each answered by the agent (and one status)")
            for (d, a) in zip(direct, viaAgent) {
                XCTAssertEqual(a.status, d.status, backend)
                XCTAssertEqual(a.stdout, d.stdout, backend)
                XCTAssertEqual(a.stderr, d.stderr, backend)
            }
            XCTAssertEqual(viaAgent[0].out, "tok-\(backend)")
            XCTAssertEqual(viaAgent[3].status, 3)
        }
    }

    func testADeleteOrALockByOthersIsSeenAtOnce() throws {
        let s = sandbox("secret-service")
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "tok-1").status, 0)
        _ = try startAgent(s)
        XCTAssertEqual(s.tv("get", "api.example.com").out, "tok-1")
        // secret-tool changes the item behind the agent's back.
        let env = Self.keyring.env.merging(["PATH": "/usr/bin:/bin"]) { $1 }
        XCTAssertEqual(
            runProcess("/usr/bin/secret-tool", ["clear", "service", "api.example.com"], env: env).status, 0)
        XCTAssertEqual(s.tv("get", "api.example.com").status, 3, "a delete by secret-tool is seen at once")
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "tok-2").status, 0)
        XCTAssertEqual(s.tv("get", "api.example.com").out, "tok-2")
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "tok-3").status, 0)
        XCTAssertEqual(s.tv("get", "api.example.com").out, "tok-3", "a new secret of the same item is read at once")
        // A locked collection is 77 through the agent too.
        let lock = runProcess(
            "/usr/bin/python3", [Paths.fixtures.appendingPathComponent("unlock_keyring.py").path, "lock"], env: env)
        XCTAssertEqual(lock.out, "locked", lock.stderr)
        defer {
            _ = runProcess(
                "/usr/bin/python3", [Paths.fixtures.appendingPathComponent("unlock_keyring.py").path, "unlock"],
                stdin: "keyring-test-password", env: env)
        }
        let locked = s.tv("get", "api.example.com")
        XCTAssertEqual(locked.status, 77, locked.stderr)
        XCTAssertEqual(locked.stderr, s.tv("get", "api.example.com", env: ["TOKENVAULT_AGENT": "off"]).stderr)
    }

    func testOnlyItsOwnUserIsAnswered() throws {
        let s = sandbox("file")
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "tok").status, 0)
        _ = try startAgent(s)
        // Open the way to the socket for everyone: the agent itself must still refuse another uid.
        let socket = s.home + "/run/tokenvault/agent.sock"
        for path in [s.home, s.home + "/run", s.home + "/run/tokenvault"] { chmod(path, 0o711) }
        chmod(socket, 0o777)
        let ask = """
            import socket, struct, sys
            s = socket.socket(socket.AF_UNIX)
            s.connect(sys.argv[1])
            body = b'{"v":1,"op":"status"}'
            try:
                s.sendall(struct.pack(">I", len(body)) + body)
                s.settimeout(5)
                print("answered" if s.recv(4) else "closed")
            except (BrokenPipeError, ConnectionResetError):
                print("closed")
            """
        let asNobody = runProcess(
            "/usr/bin/setpriv",
            ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3", "-c", ask, socket],
            env: ["PATH": "/usr/bin:/bin"])
        XCTAssertEqual(asNobody.out, "closed", asNobody.stdout + asNobody.stderr)
        let asOwner = runProcess("/usr/bin/python3", ["-c", ask, socket], env: ["PATH": "/usr/bin:/bin"])
        XCTAssertEqual(asOwner.out, "answered", "the same request from its own user is answered: \(asOwner.stderr)")
    }

    func testWithoutAWorkingAgentEveryCommandGoesDirect() throws {
        let s = sandbox("file")
        s.env["TOKENVAULT_KEY_TTL"] = "900"  // the key cached in the kernel keyring, as by default
        XCTAssertEqual(s.tv("set", "api.only-file.example", stdin: "tok").status, 0)
        let pid = try startAgent(s)
        // Another scope (another backend) is not the agent's: answered directly.
        let before = try requests(s)
        XCTAssertEqual(s.tv("get", "api.only-file.example", env: ["TOKENVAULT_BACKEND": "secret-service"]).status, 3)
        XCTAssertEqual(try requests(s) - before, 1, "only the status itself")
        // Killed: its socket stays behind, and every command works without it.
        kill(pid, SIGKILL)
        XCTAssertTrue(eventually(10) { processGone(pid) })
        XCTAssertTrue(FileManager.default.fileExists(atPath: s.home + "/run/tokenvault/agent.sock"))
        XCTAssertEqual(s.tv("get", "api.only-file.example").out, "tok")
        XCTAssertEqual(s.tv("agent", "status").status, 3)
        // Started again (the stale socket replaced), this time without a passphrase source of its own.
        let restart = s.tv("agent", env: ["TOKENVAULT_PASSPHRASE": ""])
        XCTAssertEqual(restart.status, 0, restart.stderr)
        addTeardownBlock { s.expect("agent", "stop") }
        XCTAssertNotEqual(try agentStatus(s)?["pid"] as? Int32, pid)
        XCTAssertEqual(s.tv("get", "api.only-file.example", env: ["TOKENVAULT_PASSPHRASE": ""]).out, "tok")
        // Once the key is forgotten (lock) the agent cannot open the vault either: a
        // client without a passphrase source gets its 77, one with goes direct.
        XCTAssertEqual(s.tv("lock").status, 0)
        let before2 = try requests(s)
        let locked = s.tv("get", "api.only-file.example", env: ["TOKENVAULT_PASSPHRASE": ""])
        XCTAssertEqual(locked.status, 77, locked.stderr)
        let direct = s.tv("get", "api.only-file.example")
        XCTAssertEqual(direct.out, "tok", direct.stderr)
        XCTAssertEqual(try requests(s) - before2, 3, "both asked the agent first")
    }

    func testACredentialAskedForIsRenewedBeforeAGetWouldWait() throws {
        let provider = try LocalProvider()
        defer { provider.stop() }
        let s = sandbox("file")
        try s.writeConfig("min_valid = 5\n" + provider.config)
        // A real grant whose access token lives 12 s: enough for a get (min_valid 5); the agent
        // renews it half its lifetime before it expires, with no client asking again.
        var token = try provider.obtainToken()
        token["expires_in"] = 12
        let json = String(decoding: try JSONSerialization.data(withJSONObject: token), as: UTF8.self)
        XCTAssertEqual(s.tv("set", "local", "--provider", "local", stdin: json).status, 0)
        let first = token["access_token"] as? String ?? ""
        _ = try startAgent(s)
        let before = try provider.stats()["refreshes"] ?? 0
        XCTAssertEqual(s.tv("get", "local").out, first, "valid enough for the get itself")
        XCTAssertTrue(try provider.waitForRefresh(after: before), "the agent renewed it ahead of need")
        // When it renews, once, and then nothing for an hour: RenewalScheduleTests, on a test clock.
        XCTAssertTrue(eventually(10) { (try? agentStatus(s)?["renewals"] as? Int) == 1 }, "counted once stored")
        let now = s.tv("get", "local")
        XCTAssertEqual(now.status, 0, now.stderr)
        XCTAssertNotEqual(now.out, first)
        XCTAssertEqual(provider.resourceStatus(now.out), 200)
        XCTAssertEqual(try provider.stats()["refreshes"] ?? 0, before + 1)
    }

    func testARefusedRenewalIsRecordedAndNotTriedAgain() throws {
        let provider = try LocalProvider()
        defer { provider.stop() }
        let s = sandbox("file")
        try s.writeConfig("min_valid = 5\n" + provider.config + "\n" + Self.hooks)
        let json = #"{"access_token":"at-1","refresh_token":"not-a-grant-the-provider-knows","expires_in":12}"#
        XCTAssertEqual(s.tv("set", "local", "--provider", "local", stdin: json).status, 0)
        _ = try startAgent(s)
        let before = try provider.stats()["refresh_attempts"] ?? 0
        XCTAssertEqual(s.tv("get", "local").out, "at-1")
        // Due 6 s after it was stored; refused, it is never tried again (RenewalScheduleTests).
        XCTAssertTrue(eventually(15) { ((try? provider.stats())?["refresh_attempts"] ?? 0) > before }, "tried")
        XCTAssertTrue(
            eventually(10) { s.tv("status", "local", env: ["TOKENVAULT_AGENT": "off"]).status == 4 },
            "the refusal is stored")
        XCTAssertEqual(try provider.stats()["refresh_attempts"] ?? 0, before + 1, "tried once")
        let status = s.tv("status", "local", env: ["TOKENVAULT_AGENT": "off"])
        XCTAssertEqual(status.status, 4, status.stdout + status.stderr)
        XCTAssertTrue(status.stdout.contains("invalid_grant"), status.stdout)
        // The hook ran, told what and why, and nothing secret.
        let env = try XCTUnwrap(hookEnvironment(s, "login_required"), "on_login_required ran")
        XCTAssertEqual(env["TOKENVAULT_SERVICE"], "127.0.0.1:\(provider.port)")
        XCTAssertEqual(env["TOKENVAULT_ACCOUNT"], "default")
        XCTAssertEqual(env["TOKENVAULT_EVENT"], "login_required")
        XCTAssertTrue(env["TOKENVAULT_REASON"]?.contains("invalid_grant") == true, "\(env)")
        XCTAssertNil(env["TOKENVAULT_PASSPHRASE"], "no passphrase variable")
        let text = try String(contentsOfFile: s.home + "/hook-login_required", encoding: .utf8)
        XCTAssertFalse(text.contains("not-a-grant-the-provider-knows") || text.contains("at-1"), "no secret")
    }

    func testARenewalThatFailsForNowTellsItsHookOnceAndTheDesktop() throws {
        let provider = try LocalProvider()
        let port = provider.port
        let s = sandbox("file")
        s.env["DISPLAY"] = ":99"  // a desktop session: a notification too
        try s.writeConfig("min_valid = 5\n" + provider.config + "\n" + Self.hooks)
        var token = try provider.obtainToken()
        token["expires_in"] = 16
        let json = String(decoding: try JSONSerialization.data(withJSONObject: token), as: UTF8.self)
        XCTAssertEqual(s.tv("set", "local", "--provider", "local", stdin: json).status, 0)
        provider.stop()  // the provider is gone: renewals fail for now
        let monitor = try NotificationMonitor(Self.keyring)
        _ = try startAgent(s)
        XCTAssertEqual(s.tv("get", "local").status, 0, "the token is still good for 16 s")
        let env = try XCTUnwrap(hookEnvironment(s, "refresh_failed"), "on_refresh_failed ran")
        XCTAssertEqual(env["TOKENVAULT_SERVICE"], "127.0.0.1:\(port)")
        XCTAssertTrue(env["TOKENVAULT_REASON"]?.contains("127.0.0.1:\(port)") == true, "\(env)")
        let seen = monitor.stop(once: ["member=Notify", "a token could not be renewed"])
        XCTAssertTrue(seen.contains("member=Notify"), seen)
        XCTAssertTrue(seen.contains("tokenvault: a token could not be renewed"), seen)
        // Told once: the agent tries again a minute later, the hook at most once an hour.
        try FileManager.default.removeItem(atPath: s.home + "/hook-refresh_failed")
        XCTAssertEqual(s.tv("get", "local", env: ["TOKENVAULT_AGENT": "off", "TOKENVAULT_KEY_TTL": "900"]).status, 0)
        usleep(500_000)
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.home + "/hook-refresh_failed"))
    }

    func testThreeAgentsSharingOneFileVaultRenewOnce() throws {
        let provider = try LocalProvider()
        defer { provider.stop() }
        let s = sandbox("file")
        s.env["TOKENVAULT_KEY_TTL"] = "900"
        try s.writeConfig("min_valid = 5\n" + provider.config)
        var token = try provider.obtainToken()
        token["expires_in"] = 12
        let json = String(decoding: try JSONSerialization.data(withJSONObject: token), as: UTF8.self)
        XCTAssertEqual(s.tv("set", "local", "--provider", "local", stdin: json).status, 0)
        let before = try provider.stats()
        // Three sessions (three runtime directories, so three sets of local locks), one vault file.
        let sessions = (1...3).map { ["XDG_RUNTIME_DIR": s.home + "/session\($0)"] }
        for env in sessions {
            try FileManager.default.createDirectory(atPath: env["XDG_RUNTIME_DIR"]!, withIntermediateDirectories: true)
            chmod(env["XDG_RUNTIME_DIR"]!, 0o700)
            XCTAssertEqual(s.tv("agent", env: env).status, 0)
            addTeardownBlock { s.expect("agent", "stop", env: env) }
        }
        // All three asked at once: all three find it due at once.
        let statuses = Locked<[Int32]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { i in
            let r = s.tv("get", "local", env: sessions[i])
            statuses.mutate { $0.append(r.status) }
        }
        XCTAssertEqual(statuses.value, [0, 0, 0])
        XCTAssertTrue(try provider.waitForRefresh(after: before["refreshes"] ?? 0))
        // Each agent is done with it: one asked the provider, the others found its record.
        XCTAssertTrue(eventually(15) { sessions.allSatisfy { s.agentSettled(env: $0) } }, "every agent settled")
        let after = try provider.stats()
        XCTAssertEqual(after["refreshes"], (before["refreshes"] ?? 0) + 1, "one renewal for the three agents")
        XCTAssertEqual(after["reuse_detected"], before["reuse_detected"], "no rotated refresh token sent twice")
        let tokens = Set(sessions.map { s.tv("get", "local", env: $0).out })
        XCTAssertEqual(tokens.count, 1)
        XCTAssertEqual(provider.resourceStatus(tokens.first ?? ""), 200)
    }

    func testADyingRefreshTokenTellsItsHookOnceADay() throws {
        let s = sandbox("file")
        try s.writeConfig(Self.hooks + "\nnotify = \"yes\"\n")
        // A mistake in [hooks]: one warning, and every command still works (without hooks).
        let broken = s.tv("providers")
        XCTAssertEqual(broken.status, 0)
        XCTAssertTrue(broken.stderr.contains("no hook runs until it is fixed"), broken.stderr)
        try s.writeConfig(Self.hooks)
        let json = #"{"access_token":"at","refresh_token":"rt","expires_in":3600,"refresh_token_expires_in":3600}"#
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: json).status, 0)
        let get = s.tv("get", "api.example.com")
        XCTAssertEqual(get.out, "at")
        XCTAssertTrue(get.stderr.contains("the refresh token for api.example.com (default) dies in"), get.stderr)
        let env = try XCTUnwrap(hookEnvironment(s, "refresh_token_expiring"))
        XCTAssertEqual(env["TOKENVAULT_SERVICE"], "api.example.com")
        XCTAssertTrue(env["TOKENVAULT_REASON"]?.hasPrefix("the refresh token dies in") == true, "\(env)")
        try FileManager.default.removeItem(atPath: s.home + "/hook-refresh_token_expiring")
        XCTAssertEqual(s.tv("get", "api.example.com").stderr, "", "once a day")
        usleep(300_000)
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.home + "/hook-refresh_token_expiring"))
    }

    func testASocketPassedBySystemdIsServed() throws {
        let s = sandbox("file")
        s.env["TOKENVAULT_KEY_TTL"] = "900"
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "tok-activated").status, 0)
        let socket = s.home + "/run/tokenvault/agent.sock"
        // systemd's own activator: it listens, and starts the agent with the socket on the first connection.
        let activator = Process()
        activator.executableURL = URL(fileURLWithPath: "/usr/bin/systemd-socket-activate")
        // It hands on only the variables named with -E, as a unit's Environment= does.
        activator.arguments =
            ["-l", socket] + s.env.keys.sorted().flatMap { ["-E", $0] } + [
                Paths.binary, "agent", "run", "--foreground",
            ]
        activator.environment = s.env
        activator.standardError = FileHandle.nullDevice
        try activator.runNoted()
        defer {
            activator.terminate()
            activator.waitUntilExit()
        }
        XCTAssertTrue(eventually(5) { FileManager.default.fileExists(atPath: socket) }, "the activator listens")
        XCTAssertEqual(s.tv("get", "api.example.com").out, "tok-activated")
        let status = try XCTUnwrap(agentStatus(s))
        XCTAssertEqual(status["pid"] as? Int32, activator.processIdentifier, "the activator became the agent")
        XCTAssertEqual(status["requests"] as? Int, 2, "the get (the first connection), then this status")
        // Stopped, it leaves the socket to its owner.
        XCTAssertEqual(s.tv("agent", "stop").status, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: socket))
    }

    func testDoctorSaysWhatBecameOfTheAgent() throws {
        let s = sandbox("file")
        s.env["TOKENVAULT_KEY_TTL"] = "900"
        func line() -> String {
            s.tv("doctor").stdout.split(separator: "\n").first { $0.contains(" agent: ") }.map(String.init) ?? "none"
        }
        XCTAssertTrue(line().contains("not running, and not started on first use (TOKENVAULT_AGENT=manual)"), line())
        let onUse = s.tv("doctor", env: ["TOKENVAULT_AGENT": ""]).stdout
        XCTAssertTrue(onUse.contains("not running: the next get, header, status or list starts it"), onUse)
        let pid = try startAgent(s)
        XCTAssertTrue(line().contains("✓ agent: running (process \(pid))"), line())
        let other = s.tv("doctor", env: ["TOKENVAULT_BACKEND": "secret-service"])
        XCTAssertTrue(other.stdout.contains("but for another setup"), other.stdout)
        kill(pid, SIGKILL)
        XCTAssertTrue(eventually(10) { processGone(pid) })
        let gone = s.tv("doctor")
        XCTAssertEqual(gone.status, 2)
        XCTAssertTrue(gone.stdout.contains("is left by an agent that is gone"), gone.stdout)
    }

    func testGitsHelperAsksTheAgentToo() throws {
        let s = sandbox("file")
        s.env["TOKENVAULT_KEY_TTL"] = "900"
        XCTAssertEqual(s.tv("set", "api.github.com", "--provider", "github", stdin: "gho_token").status, 0)
        let request = "protocol=https\nhost=github.com\n\n"
        let direct = s.tv("git-credential", "get", stdin: request, env: ["TOKENVAULT_AGENT": "off"])
        _ = try startAgent(s)
        let before = try requests(s)
        let viaAgent = s.tv("git-credential", "get", stdin: request)
        XCTAssertEqual(viaAgent.stdout, direct.stdout)
        XCTAssertTrue(viaAgent.stdout.contains("password=gho_token"), viaAgent.stdout)
        XCTAssertGreaterThan(try requests(s) - before, 1, "looked up and handed out by the agent")
    }

    /// gnome-keyring restarted (a crash, an upgrade, a KeePassXC or
    /// kwalletd restarted) while the agent runs: the agent's next request
    /// reaches the new daemon, as a direct command does, without an `agent stop`.
    func testTheAgentFollowsAKeyringThatWasRestarted() throws {
        let keyring = try PrivateKeyring()
        defer { keyring.stop() }
        let s = Sandbox(backend: "secret-service")
        s.env.merge(keyring.env) { $1 }
        XCTAssertEqual(s.tv("set", "api.restart.example", stdin: "before").status, 0)
        _ = try startAgent(s)
        XCTAssertTrue(s.tv("list").stdout.contains("api.restart.example"))
        XCTAssertEqual(s.tv("get", "api.restart.example").out, "before")
        let asked = try requests(s)
        try keyring.restart()
        let after = s.tv("get", "api.restart.example")
        XCTAssertEqual(after.out, "before", after.stderr)
        XCTAssertEqual(try requests(s) - asked, 2, "answered by the agent (and one status)")
        XCTAssertEqual(s.tv("set", "api.restart.example", stdin: "after").status, 0)
        XCTAssertEqual(s.tv("get", "api.restart.example").out, "after")
        XCTAssertTrue(s.tv("list").stdout.contains("api.restart.example"))
    }
}
