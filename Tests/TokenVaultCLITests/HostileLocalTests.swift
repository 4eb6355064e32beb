import Foundation
import TokenVaultKit
import XCTest

/// What a hostile local process or a hanging provider does to the agent, the
/// trusted files and the vault's listings (docs/security.md): each case
/// here was reproduced against the code before it was mended.
final class HostileLocalTests: QuirkProviderTestCase {

    func sandbox(_ backend: String = "file") -> Sandbox {
        let s = Sandbox(backend: backend)
        s.env.merge(Self.keyring.env) { $1 }
        return s
    }

    /// Starts the sandbox's agent (stopped when the test ends); its process id.
    func startAgent(_ s: Sandbox, env: [String: String] = [:]) throws -> Int32 {
        let r = s.tv("agent", env: env)
        XCTAssertEqual(r.status, 0, r.stderr)
        addTeardownBlock { s.expect("agent", "stop") }
        let status = s.tv("agent", "status", "--json")
        let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        return try XCTUnwrap(o["pid"] as? Int32)
    }

    func agentStatus(_ s: Sandbox) throws -> [String: Any]? {
        let status = s.tv("agent", "status", "--json")
        return try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
    }

    func agentRequests(_ s: Sandbox) throws -> Int {
        let status = s.tv("agent", "status", "--json")
        let o = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        return o?["requests"] as? Int ?? -1
    }

    // MARK: One bad record never takes a listing down

    func testAnUnreadableRecordIsShownAsUnusableAndCanBeRemoved() throws {
        let s = sandbox("secret-service")
        XCTAssertEqual(s.tv("set", "api.good.example", stdin: "good-token").status, 0)
        // What a hostile registration left before it was checked (tokenvault's own item), and a
        // record another tool wrote (no schema).
        for (service, account, schema) in [
            ("127.0.0.1:9", "tokenvault:client:00ff", ["xdg:schema", "io.tokenvault.Credential"]),
            ("api.bad.example", "default", []),
        ] {
            let store = runProcess(
                "/usr/bin/secret-tool",
                ["store", "--label=x", "service", service, "account", account, "type", "token"] + schema,
                stdin: #"{"type":"token","access_token":"bad id"}"#, env: s.env)
            XCTAssertEqual(store.status, 0, store.stderr)
        }
        let list = s.tv("list")
        XCTAssertEqual(list.status, 0, list.stderr)
        XCTAssertTrue(list.stdout.contains("api.good.example"), list.stdout)
        XCTAssertTrue(
            list.stdout.split(separator: "\n").contains { $0.contains("api.bad.example") && $0.contains("unusable") },
            list.stdout)
        XCTAssertFalse(list.stdout.contains("tokenvault:client"), "a registration is never listed")
        let json = s.tv("list", "--json")
        XCTAssertEqual(json.status, 0)
        let rows = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let bad = try XCTUnwrap(rows.first { $0["service"] as? String == "api.bad.example" })
        XCTAssertEqual(bad["state"] as? String, "unusable")
        XCTAssertTrue((bad["unusable"] as? String)?.contains("white space") == true, "\(bad)")
        let overview = s.tv("status")
        XCTAssertEqual(overview.status, 0, overview.stderr)
        XCTAssertTrue(overview.stdout.contains("api.bad.example (default): unusable"), overview.stdout)
        // Asked about that record itself: its error.
        XCTAssertEqual(s.tv("status", "api.bad.example").status, 65)
        XCTAssertEqual(s.tv("get", "api.good.example").out, "good-token")
        // doctor names both, with the command that removes each.
        let doctor = s.tv("doctor")
        XCTAssertTrue(
            doctor.stdout.contains("remove it: tokenvault delete 127.0.0.1:9 --account tokenvault:client:00ff"),
            doctor.stdout)
        // Another tool's item: tokenvault never deletes it, and names what does.
        XCTAssertTrue(
            doctor.stdout.contains(
                "another application's item: remove it with that application, or: secret-tool clear service api.bad.example account default"
            ), doctor.stdout)
        XCTAssertNotEqual(doctor.status, 0)
        // Removed, reserved name and all; nothing else touched.
        XCTAssertEqual(s.tv("delete", "127.0.0.1:9", "--account", "tokenvault:client:00ff").status, 0)
        XCTAssertEqual(s.tv("delete", "api.bad.example").status, 3)
        let clear = runProcess(
            "/usr/bin/secret-tool", ["clear", "service", "api.bad.example", "account", "default"], env: s.env)
        XCTAssertEqual(clear.status, 0, clear.stderr)
        XCTAssertEqual(s.tv("set", "x.example", "--account", "tokenvault:client:1", stdin: "t").status, 64)
        XCTAssertEqual(s.tv("set", "x.example", "--account", "tokenvault:other", stdin: "t").status, 64)
        XCTAssertEqual(s.tv("get", "api.good.example").out, "good-token")
        XCTAssertFalse(s.tv("doctor").stdout.contains("unusable"))
    }

    // MARK: Trusted files

    func testATrustedFileInADirectoryOthersCanWriteIsRefused() throws {
        let s = sandbox()
        try s.writeConfig("min_valid = 30\n")
        let dir = s.env["XDG_CONFIG_HOME"]! + "/tokenvault"
        XCTAssertEqual(s.tv("providers").status, 0)
        chmod(dir, 0o777)
        let r = s.tv("providers")
        XCTAssertEqual(r.status, 77, r.stderr)
        XCTAssertTrue(r.stderr.contains("which others can write"), r.stderr)
        XCTAssertTrue(r.stderr.contains("chmod go-w"), r.stderr)
        // Sticky, as /tmp is: others cannot replace a file they do not own there.
        chmod(dir, 0o1777)
        XCTAssertEqual(s.tv("providers").status, 0)
        chmod(dir, 0o700)
        // A config kept with the user's dotfiles (a link) is followed, and where it points is checked too.
        let dotfiles = s.home + "/dotfiles"
        try FileManager.default.createDirectory(atPath: dotfiles, withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: dir + "/config.toml", toPath: dotfiles + "/config.toml")
        try FileManager.default.createSymbolicLink(
            atPath: dir + "/config.toml", withDestinationPath: dotfiles + "/config.toml")
        XCTAssertEqual(s.tv("providers").status, 0)
        chmod(dotfiles, 0o777)
        XCTAssertEqual(s.tv("providers").status, 77)
        chmod(dotfiles, 0o755)
        // A FIFO where a secret file should be: refused at once, never a hang.
        let fifo = s.home + "/pass.fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        XCTAssertEqual(s.tv("set", "a.example", stdin: "t").status, 0)
        let r2 = s.tv(
            "get", "a.example", env: ["TOKENVAULT_PASSPHRASE": "", "TOKENVAULT_PASSPHRASE_FILE": fifo], limit: 20)
        XCTAssertEqual(r2.status, 78, r2.stderr)
        XCTAssertTrue(r2.stderr.contains("not a regular file"), r2.stderr)
        // A passphrase file in a directory others can write.
        let shared = s.home + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        chmod(shared, 0o777)
        try "correct horse".write(toFile: shared + "/pass", atomically: true, encoding: .utf8)
        chmod(shared + "/pass", 0o600)
        let r3 = s.tv(
            "get", "a.example", env: ["TOKENVAULT_PASSPHRASE": "", "TOKENVAULT_PASSPHRASE_FILE": shared + "/pass"])
        XCTAssertEqual(r3.status, 77, r3.stderr)
    }

    // MARK: The agent

    /// The agent's own frames, as a raw client of the same user sends them.
    func rawFrame(_ s: Sandbox, _ fields: [String]) -> String {
        let script = """
            import socket, struct, sys
            body = b"".join(f.encode() + b"\\0" for f in sys.argv[2:])
            c = socket.socket(socket.AF_UNIX); c.settimeout(10); c.connect(sys.argv[1])
            c.sendall(struct.pack(">I", len(body)) + body)
            head = c.recv(4)
            if len(head) < 4: print("closed"); sys.exit(0)
            n = struct.unpack(">I", head)[0]; data = b""
            while len(data) < n:
                more = c.recv(n - len(data))
                if not more: break
                data += more
            print(data[:1].decode() + " " + data[1:200].decode(errors="replace"))
            """
        return runProcess(
            "/usr/bin/python3", ["-c", script, s.env["XDG_RUNTIME_DIR"]! + "/tokenvault/agent.sock"] + fields, env: [:]
        ).out
    }

    func testTheAgentRunsOnlyItsCommandsAndSurvivesAbsurdFrames() throws {
        let s = sandbox()
        XCTAssertEqual(s.tv("set", "api.keep.example", stdin: "kept").status, 0)
        let pid = try startAgent(s)
        // The client's environment, as a real client sends it (never a passphrase).
        let env = s.env.filter { !$0.key.hasPrefix("TOKENVAULT_PASSPHRASE") }.map { "\($0.key)=\($0.value)" }
        // The frame of this protocol, with this build (`agent status` says it).
        let status = try JSONSerialization.jsonObject(with: Data(s.tv("agent", "status", "--json").stdout.utf8))
        let build = try XCTUnwrap((status as? [String: Any])?["build"] as? String)
        // The client says where it works (relative paths and secret commands are its directory's).
        let get = rawFrame(s, ["C3", build, "", "", "2", "get", "api.keep.example"] + env + ["@" + s.home])
        XCTAssertTrue(
            rawFrame(s, ["C3", "0ther", "", "", "2", "get", "api.keep.example"] + env).hasPrefix("D another build"),
            "another build is declined")
        XCTAssertTrue(get.hasPrefix("R"), "a get is run: \(get)")
        for command in [
            ["delete", "api.keep.example"], ["exec", "api.keep.example", "--", "/bin/sh", "-c", "echo owned"],
            ["lock"], ["set", "api.keep.example"],
        ] {
            let answer = rawFrame(s, ["C3", build, "", "", String(command.count)] + command + env)
            XCTAssertTrue(answer.hasPrefix("D"), "\(command): \(answer)")
        }
        XCTAssertEqual(kill(pid, 0), 0, "the agent did not become another program")
        XCTAssertEqual(s.tv("get", "api.keep.example", env: ["TOKENVAULT_AGENT": "off"]).out, "kept")
        for count in ["9223372036854775807", "-1", "18446744073709551616", "3"] {
            _ = rawFrame(s, ["C3", build, "", "", count, "get"])
            XCTAssertEqual(kill(pid, 0), 0, "a count of \(count) is refused, not a crash")
        }
        XCTAssertEqual(s.tv("get", "api.keep.example").out, "kept")
    }

    func testLockLocksOutAnAgentWithAPassphraseOfItsOwn() throws {
        let s = sandbox()
        s.env["TOKENVAULT_KEY_TTL"] = "600"
        XCTAssertEqual(s.tv("set", "api.locked.example", stdin: "secret-tok").status, 0)
        _ = try startAgent(s)
        let noPassphrase = ["TOKENVAULT_PASSPHRASE": ""]
        XCTAssertEqual(
            s.tv("get", "api.locked.example", env: noPassphrase).out, "secret-tok", "the agent's own passphrase")
        let lock = s.tv("lock", env: noPassphrase)
        XCTAssertEqual(lock.status, 0, lock.stderr)
        let before = try agentRequests(s)
        let through = s.tv("get", "api.locked.example", env: noPassphrase)
        XCTAssertEqual(through.status, 77, "the agent is locked too: \(through.stdout) \(through.stderr)")
        XCTAssertEqual(try agentRequests(s) - before, 2, "the get asked the agent (and one status)")
        let direct = s.tv("get", "api.locked.example", env: noPassphrase.merging(["TOKENVAULT_AGENT": "off"]) { $1 })
        XCTAssertEqual(direct.status, 77, "the agent did not put the key back: \(direct.stderr)")
        // Unlocked by a command with the passphrase: the agent answers from the key it cached.
        XCTAssertEqual(s.tv("get", "api.locked.example", env: ["TOKENVAULT_AGENT": "off"]).out, "secret-tok")
        XCTAssertEqual(s.tv("get", "api.locked.example", env: noPassphrase).out, "secret-tok")
    }

    func testAHangingProviderHoldsUpNoOtherRequest() throws {
        let s = sandbox()
        try s.writeConfig(
            """
            min_valid = 2
            [providers.q]
            service = "api.quirk.example"
            token_url = "http://127.0.0.1:\(Self.port)/hang"
            client_id = "cid"
            """)
        // Renewed ahead of need 7 s before it expires, by a provider that answers nothing for 60 s.
        XCTAssertEqual(
            s.tv(
                "set", "q", "--provider", "q",
                stdin: #"{"access_token":"still-good","refresh_token":"r","expires_in":14}"#
            ).status, 0)
        XCTAssertEqual(s.tv("set", "api.other.example", stdin: "other-tok").status, 0)
        _ = try startAgent(s)
        // Then the provider gives up, as one that hangs does in the end: the agent's stop
        // waits for a renewal in flight, which would otherwise wait out its 30 s timeout.
        addTeardownBlock { _ = runProcess("/usr/bin/curl", ["-s", "http://127.0.0.1:\(Self.port)/unhang"], env: [:]) }
        let hangsBefore = try stats()["/hang"] ?? 0
        XCTAssertEqual(s.tv("get", "q").out, "still-good")
        XCTAssertTrue(
            eventually(15) { ((try? stats())?["/hang"] ?? 0) > hangsBefore }, "the agent is renewing q now")
        let before = try agentRequests(s)
        let started = Date()
        let other = s.tv("get", "api.other.example")
        let same = s.tv("get", "q")
        let seconds = Date().timeIntervalSince(started)
        XCTAssertEqual(other.out, "other-tok", other.stderr)
        XCTAssertEqual(same.out, "still-good", "valid for some seconds more: handed out, not held: \(same.stderr)")
        XCTAssertEqual(try agentRequests(s) - before, 3, "both answered by the agent")
        XCTAssertLessThan(seconds, 10, "answered while the provider hangs (it holds on for 60 s, timeout 30 s)")
    }

    /// Forty clients wait for one renewal the provider holds: a request of
    /// another credential (a Secret Service read, with its D-Bus deadline),
    /// `agent status` and `lock` are answered meanwhile — none of the forty
    /// has its answer yet — and once the provider answers, all forty get the
    /// one new token.
    func testRequestsThatWaitHoldUpNothingElse() throws {
        let s = try expiredAtQuirk("held", in: sandbox("secret-service"))
        s.expect("set", "api.other.example", stdin: "other-tok\n")
        _ = try startAgent(s)
        let before = try agentRequests(s)
        let answers = Locked<[Run]>([])
        let all = DispatchGroup()
        for _ in 0..<40 {
            DispatchQueue.global().async(group: all) {
                let r = s.tv("get", "q")
                answers.withLock { $0.append(r) }
            }
        }
        defer {
            _ = runProcess("/usr/bin/curl", ["-s", "http://127.0.0.1:\(Self.port)/release"], env: [:])
            all.wait()
        }
        XCTAssertTrue(
            eventually(30) { ((try? self.agentRequests(s)) ?? 0) - before > 40 },
            "the agent took all forty requests (and the status requests that ask), none waiting for a thread")
        XCTAssertEqual(try stats()["/held"], 1, "one renewal, held by the provider")
        let other = s.tv("get", "api.other.example")
        XCTAssertEqual(other.out, "other-tok", other.stderr)
        let lock = s.tv("lock")
        XCTAssertEqual(lock.status, 0, lock.stderr)
        XCTAssertEqual(try XCTUnwrap(try agentStatus(s))["locked"] as? Bool, true)
        XCTAssertEqual(answers.withLock { $0.count }, 0, "all of that while the forty still wait")
        _ = runProcess("/usr/bin/curl", ["-s", "http://127.0.0.1:\(Self.port)/release"], env: [:])
        all.wait()
        XCTAssertEqual(Set(answers.withLock { $0.map(\.out) }), ["held-at-1"])
        XCTAssertEqual(try stats()["/held"], 1, "renewed once for all forty")
    }

    /// A sandbox holding an expired credential of provider `q`, whose token
    /// endpoint is the quirk server's `path`.
    func expiredAtQuirk(_ path: String) throws -> Sandbox { try expiredAtQuirk(path, in: sandbox()) }

    // MARK: Notifications

    func testAProvidersMarkupIsNeverShownAsMarkupOnTheDesktop() throws {
        let s = try expiredAtQuirk("markup-refusal")
        s.env["DISPLAY"] = ":99"  // a desktop session: notifications are sent
        let monitor = try NotificationMonitor(Self.keyring)
        XCTAssertEqual(s.tv("get", "q").status, 4)
        let seen = monitor.stop(once: ["member=Notify", "renew here"])
        XCTAssertTrue(seen.contains("member=Notify"), seen)
        XCTAssertTrue(
            seen.contains("&lt;a href=&quot;https://evil.example/&quot;&gt;renew here&lt;/a&gt; &amp; &lt;b&gt;"), seen)
        XCTAssertFalse(seen.contains("<a href"), seen)
    }

    // MARK: A client the provider does not accept

    func testInvalidClientSaysWhereTheClientIsSet() throws {
        let s = try expiredAtQuirk("invalid-client")
        let r = s.tv("get", "q")
        XCTAssertEqual(r.status, 76, r.stderr)
        let config = s.env["XDG_CONFIG_HOME"]! + "/tokenvault/config.toml"
        XCTAssertTrue(
            r.stderr.contains(
                "hint: check client_id and client_secret (or its _file or _command) of [providers.q] in \(config)"),
            r.stderr)
    }

    // MARK: A locked file vault beside the Secret Service

    func testALockedFileVaultBesideTheSecretServiceStopsNothing() throws {
        let s = sandbox("auto")
        XCTAssertEqual(s.tv("set", "in.file.example", stdin: "file-tok", env: ["TOKENVAULT_BACKEND": "file"]).status, 0)
        XCTAssertEqual(s.tv("set", "in.keyring.example", stdin: "ss-tok").status, 0)
        let locked = ["TOKENVAULT_PASSPHRASE": ""]  // no source, no terminal, no cached key
        let list = s.tv("list", env: locked)
        XCTAssertEqual(list.status, 0, list.stderr)
        XCTAssertTrue(list.stdout.contains("in.keyring.example"), list.stdout)
        XCTAssertTrue(list.stderr.contains("the file vault \(s.vault) is locked"), list.stderr)
        XCTAssertTrue(list.stderr.contains("tokenvault unlock"), list.stderr)
        XCTAssertEqual(s.tv("status", env: locked).status, 0)
        XCTAssertEqual(s.tv("get", "in.keyring.example", env: locked).out, "ss-tok")
        // Not in the keyring, and the locked vault may hold it: 77, never "not stored".
        let missing = s.tv("get", "nowhere.example", env: locked)
        XCTAssertEqual(missing.status, 77, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("is locked"), missing.stderr)
        XCTAssertEqual(s.tv("delete", "nowhere.example", env: locked).status, 77)
        // With the passphrase, the file's own credential is there, untouched.
        XCTAssertEqual(s.tv("get", "in.file.example").out, "file-tok")
    }
}
