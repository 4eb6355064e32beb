import Foundation
import TokenVaultKit
import XCTest

/// The agent under failure and hostile input (docs/agent.md, docs/security.md):
/// a provider outage, a lock in the middle of a derivation, an agent of
/// another build, the environment it is started from, an idle stop during a
/// renewal, derivations side by side, half-sent requests, `unlock` again.
final class AgentHardeningTests: QuirkProviderTestCase {
    func sandbox(token path: String = "/rotate") throws -> Sandbox {
        let s = Sandbox()
        s.env["TOKENVAULT_KEY_TTL"] = "900"
        try s.writeConfig(
            """
            min_valid = 1
            [providers.q]
            service = "api.quirk.example"
            token_url = "http://127.0.0.1:\(Self.port)\(path)"
            client_id = "cid"
            client_secret = "csecret"
            """)
        return s
    }

    func agentStatus(_ s: Sandbox) throws -> [String: Any] {
        let r = s.expect("agent", "status", "--json")
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
    }

    /// The running agent's pid, without failing the test when none answers yet.
    func agentPID(_ s: Sandbox) -> Int? {
        let r = s.tv("agent", "status", "--json")
        guard r.status == 0 else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])?["pid"] as? Int
    }

    func startAgent(_ s: Sandbox) {
        s.expect("agent")
        addTeardownBlock { _ = s.tv("agent", "stop") }
    }

    /// A provider down while a renewal ahead of need falls due: a failure,
    /// reported, tried again no sooner than the retry rule (5 s for a token
    /// this short), never a loop.
    func testAnOutageIsAFailureTriedAgainByTheRetryRule() throws {
        let s = try sandbox(token: "/html502")
        startAgent(s)
        let expires = Int(Date().timeIntervalSince1970) + 6
        s.expect(
            "set", "q", "--provider", "q",
            stdin: #"{"access_token":"old","refresh_token":"r-old","expires_at":\#(expires)}"#)
        let before = try stats()["/html502"] ?? 0
        XCTAssertEqual(s.expect("get", "q").stdout, "old\n")
        // Due 3 s before expiry; when it is tried again is RenewalScheduleTests' (on a test clock).
        func outcome() -> String {
            let kept = ((try? agentStatus(s))?["credentials"] as? [[String: Any]])?.first
            return (kept?["last"] as? [String: Any])?["outcome"] as? String ?? ""
        }
        XCTAssertTrue(eventually(10) { !outcome().isEmpty }, "the renewal was tried")
        XCTAssertGreaterThanOrEqual((try stats()["/html502"] ?? 0) - before, 1)
        let outcome = outcome()
        XCTAssertTrue(outcome.hasPrefix("failed:") && outcome.contains("502"), "reported as a failure: \(outcome)")
        XCTAssertEqual(try agentStatus(s)["renewals"] as? Int, 0)
    }

    /// A renewal ahead of need runs the client's secret command where the
    /// client that asked for the credential would: with its environment (a
    /// `pass`-style command that needs a variable the agent was not given).
    func testARenewalAheadOfNeedRunsTheSecretCommandAsItsClientWould() throws {
        let s = try sandbox(token: "/secret-rotate")
        try s.writeConfig(
            """
            min_valid = 1
            [providers.q]
            service = "api.quirk.example"
            token_url = "http://127.0.0.1:\(Self.port)/secret-rotate"
            client_id = "cid"
            client_secret_command = 'printf %s "$TV_CLIENT_SECRET"'
            """)
        startAgent(s)  // without TV_CLIENT_SECRET
        let client = ["TV_CLIENT_SECRET": "csecret"]
        let expires = Int(Date().timeIntervalSince1970) + 8
        s.expect(
            "set", "q", "--provider", "q",
            stdin: #"{"access_token":"old","refresh_token":"r-old","expires_at":\#(expires)}"#)
        XCTAssertEqual(s.expect("get", "q", env: client).stdout, "old\n")
        XCTAssertTrue(
            eventually(20) { ((try? self.agentStatus(s))?["renewals"] as? Int ?? 0) >= 1 }, "renewed ahead of need")
        let kept = try XCTUnwrap((try agentStatus(s)["credentials"] as? [[String: Any]])?.first)
        XCTAssertEqual((kept["last"] as? [String: Any])?["outcome"] as? String, "renewed")
        XCTAssertEqual(s.expect("get", "q", env: client).stdout, "sr-at-1\n")
    }

    /// `lock` while the agent derives the key for a request (a slow
    /// passphrase command): that derivation's key is not cached.
    func testALockDuringTheAgentsDerivationLeavesNoKeyCached() throws {
        let s = try sandbox()
        s.expect("set", "api.lock.example", stdin: "t1\n")
        s.expect("lock")
        s.env["TOKENVAULT_PASSPHRASE"] = nil
        // The command says when it has begun, so the lock can come while it runs.
        let deriving = s.home + "/deriving"
        s.env["TOKENVAULT_PASSPHRASE_COMMAND"] = "touch '\(deriving)'; sleep 2; echo 'correct horse'"
        startAgent(s)
        s.env["TOKENVAULT_PASSPHRASE_COMMAND"] = nil
        let get = DispatchQueue.global()
        let answered = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var got: Run?
        get.async {
            got = s.tv("get", "api.lock.example")
            answered.signal()
        }
        XCTAssertTrue(
            eventually(10) { FileManager.default.fileExists(atPath: deriving) }, "the agent is deriving the key")
        s.expect("lock")
        answered.wait()
        XCTAssertEqual(got?.status, 0, got?.stderr ?? "")
        let after = s.tv("get", "api.lock.example", env: ["TOKENVAULT_AGENT": "off"])
        XCTAssertEqual(after.status, 77, "the key was not cached after the lock: \(after.stdout) \(after.stderr)")
    }

    /// An agent that takes `lock` and never answers (hung, or not tokenvault
    /// at all): `lock` fails (75) and says so, but only after it forgot the
    /// key — the vault is locked all the same — and it signals no one.
    func testALockThatNoAgentConfirmsStillForgetsTheKey() throws {
        let s = try sandbox()
        s.expect("set", "api.mute.example", stdin: "t-mute\n")
        XCTAssertEqual(s.tv("get", "api.mute.example", env: ["TOKENVAULT_PASSPHRASE": ""]).out, "t-mute", "cached")
        let socket = s.home + "/run/tokenvault/agent.sock"
        // Listens where the agent would, reads each request, answers nothing, and stays.
        let mute = Process()
        mute.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        mute.arguments = [
            "-c",
            """
            import os, socket, sys
            path = sys.argv[1]
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            s = socket.socket(socket.AF_UNIX); s.bind(path); s.listen(8)
            print("ready", flush=True)
            held = []
            while True:
                c, _ = s.accept(); c.recv(65536); held.append(c)
            """, socket,
        ]
        let ready = Pipe()
        mute.standardOutput = ready
        try mute.runNoted()
        defer { mute.terminate() }
        _ = ready.fileHandleForReading.availableData
        let lock = s.tv("lock")
        XCTAssertEqual(lock.status, 75, lock.stderr)
        XCTAssertTrue(lock.stderr.contains("did not confirm the lock"), lock.stderr)
        XCTAssertTrue(mute.isRunning, "nothing was signalled")
        let after = s.tv("get", "api.mute.example", env: ["TOKENVAULT_PASSPHRASE": "", "TOKENVAULT_AGENT": "off"])
        XCTAssertEqual(after.status, 77, "the key was forgotten all the same: \(after.stdout)")
    }

    /// A copy of tokenvault whose build ID differs stands for the agent of an
    /// older install: a command of this build stops it and starts its own.
    func testAnAgentOfAnotherBuildIsStoppedAndReplaced() throws {
        let s = try sandbox()
        let other = s.home + "/old-tokenvault"
        let build = try copyOfAnotherBuild(to: other)
        s.expect("set", "api.build.example", stdin: "t1\n")
        XCTAssertEqual(runProcess(other, ["agent"], env: s.env).status, 0)
        let old = try XCTUnwrap(try agentStatus(s)["pid"] as? Int)
        // A command of this build: the old agent declines it and is stopped; the command runs itself.
        XCTAssertEqual(s.expect("get", "api.build.example", env: ["TOKENVAULT_AGENT": "auto"]).stdout, "t1\n")
        XCTAssertTrue(eventually(10) { processGone(Int32(old)) }, "the agent of the other build left")
        XCTAssertTrue(
            eventually(10) {
                (agentPID(s) ?? old) != old
            }, "an agent of this build was started")
        addTeardownBlock { _ = s.tv("agent", "stop") }
        let now = try agentStatus(s)
        XCTAssertNotEqual(now["pid"] as? Int, old)
        XCTAssertEqual(now["build"] as? String, build)
    }

    /// Started on first use from inside `exec` in some directory: the agent
    /// has none of the token `exec` set, no LISTEN_* and no passphrase, and
    /// sits in /.
    /// A CI job (`CI=true`) leaves nothing behind: its `get` starts no agent
    /// on use, and nothing prompts, on a terminal either (a locked vault is 77).
    func testACIJobStartsNoAgentAndIsNeverPrompted() throws {
        let s = try sandbox()
        s.expect("set", "api.ci.example", stdin: "t-ci\n")
        let job = s.tv("get", "api.ci.example", env: ["TOKENVAULT_AGENT": "auto", "CI": "true"])
        XCTAssertEqual(job.out, "t-ci", job.stderr)
        XCTAssertFalse(eventually(2) { self.agentPID(s) != nil }, "no agent was started")
        XCTAssertTrue(s.tv("doctor", env: ["TOKENVAULT_AGENT": "auto", "CI": "true"]).stdout.contains("CI=true"))
        s.expect("lock")
        let prompted = s.onTerminal(["get", "api.ci.example"], env: ["TOKENVAULT_PASSPHRASE": "", "CI": "true"])
        XCTAssertEqual(prompted.status, 77, prompted.stdout)
        XCTAssertFalse(prompted.stdout.lowercased().contains("passphrase:"), "no prompt: \(prompted.stdout)")
        // Outside a CI job, the same get starts one.
        XCTAssertEqual(s.tv("get", "api.ci.example", env: ["TOKENVAULT_AGENT": "auto"]).out, "t-ci")
        XCTAssertTrue(eventually(10) { self.agentPID(s) != nil }, "an agent was started on first use")
        addTeardownBlock { _ = s.tv("agent", "stop") }
    }

    func testTheAgentStartedOnUseKeepsNothingOfTheCommandsEnvironment() throws {
        let s = try sandbox()
        s.expect("set", "api.first.example", stdin: "secret-first\n")
        s.expect("set", "api.second.example", stdin: "t2\n")
        let dir = s.home + "/mounted"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let r = s.shell(
            #"cd "$1" && LISTEN_FDS=1 LISTEN_PID=1 "$TV" exec api.first.example -- "$TV" get api.second.example"#
                .replacingOccurrences(of: "$1", with: dir), env: ["TOKENVAULT_AGENT": "auto"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "t2\n")
        var pid = 0
        XCTAssertTrue(
            eventually(10) {
                pid = agentPID(s) ?? 0
                return pid > 0
            })
        addTeardownBlock { _ = s.tv("agent", "stop") }
        let environ = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))
        let names = environ.split(separator: 0).map {
            String(decoding: $0.prefix { $0 != UInt8(ascii: "=") }, as: UTF8.self)
        }
        for name in [
            "TOKENVAULT_ACCESS_TOKEN", "LISTEN_FDS", "LISTEN_PID", "TOKENVAULT_PASSPHRASE", "TOKENVAULT_SERVICE",
        ] {
            XCTAssertFalse(names.contains(name), "\(name) reached the agent: \(names)")
        }
        XCTAssertFalse(String(decoding: environ, as: UTF8.self).contains("secret-first"))
        XCTAssertTrue(names.contains("XDG_RUNTIME_DIR") && names.contains("HOME"), "\(names)")
        let cwd = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/cwd")
        XCTAssertEqual(cwd, "/")
    }

    /// The idle stop comes while a renewal waits for a slow provider that
    /// rotates the refresh token: the agent stores it before it leaves.
    func testTheIdleStopWaitsForARenewalInFlight() throws {
        let s = try sandbox(token: "/slow-rotate")
        try s.writeConfig(
            """
            min_valid = 1
            agent_idle = 3
            [providers.q]
            service = "api.quirk.example"
            token_url = "http://127.0.0.1:\(Self.port)/slow-rotate"
            client_id = "cid"
            client_secret = "csecret"
            """)
        let expires = Int(Date().timeIntervalSince1970) + 4
        s.expect(
            "set", "q", "--provider", "q",
            stdin: #"{"access_token":"old","refresh_token":"r-old","expires_at":\#(expires)}"#)
        // The first get starts the agent (on use), the second is answered by it and kept renewed.
        s.expect("get", "q", env: ["TOKENVAULT_AGENT": "auto"])
        var pid = 0
        XCTAssertTrue(
            eventually(10) {
                pid = agentPID(s) ?? 0
                return pid > 0
            })
        s.expect("get", "q", env: ["TOKENVAULT_AGENT": "auto"])
        XCTAssertTrue(eventually(30) { processGone(Int32(pid)) }, "the agent left once idle")
        let stored = s.expect("get", "q", "--field", "refresh_token", "--no-refresh", env: ["TOKENVAULT_AGENT": "off"])
        XCTAssertTrue(stored.stdout.hasPrefix("slow-rt-"), "the rotated refresh token was stored: \(stored.stdout)")
    }

    /// Eight gets at once once the key's time has run out: the passphrase
    /// command runs once, one derivation, the others take its key.
    func testGetsSideBySideDeriveTheKeyOnce() throws {
        let s = try sandbox()
        s.expect("set", "api.kdf.example", stdin: "t1\n")
        s.expect("lock")
        let log = s.home + "/asked"
        s.env["TOKENVAULT_PASSPHRASE"] = nil
        s.env["TOKENVAULT_PASSPHRASE_COMMAND"] = "echo x >> \(log); echo 'correct horse'"
        let group = DispatchGroup()
        let results = Locked<[Int32]>([])
        for _ in 0..<8 {
            group.enter()
            DispatchQueue.global().async {
                results.mutate { $0.append(s.tv("get", "api.kdf.example", env: ["TOKENVAULT_AGENT": "off"]).status) }
                group.leave()
            }
        }
        group.wait()
        XCTAssertEqual(results.value, Array(repeating: 0, count: 8))
        let asked = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").count
        XCTAssertEqual(asked, 1, "one passphrase command, one derivation")
    }

    /// A hundred clients that announce a megabyte and send nothing more: the
    /// agent holds neither their megabytes nor a hundred threads, and answers.
    func testHalfSentRequestsHoldNoMemoryAndNoThreads() throws {
        let s = try sandbox()
        s.expect("set", "api.half.example", stdin: "t1\n")
        startAgent(s)
        let pid = try XCTUnwrap(try agentStatus(s)["pid"] as? Int)
        func field(_ name: String) -> Int {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? -1
        }
        let rssBefore = field("VmRSS")
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        holder.arguments = [
            "-c",
            """
            import socket, sys, time
            held = []
            for _ in range(100):
                c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); c.sendall((1 << 20).to_bytes(4, 'big')); held.append(c)
            print('held', flush=True); time.sleep(8)
            """, s.home + "/run/tokenvault/agent.sock",
        ]
        let out = Pipe()
        holder.standardOutput = out
        try holder.runNoted()
        defer { holder.terminate() }
        var said = ""
        while !said.contains("held") {
            let more = out.fileHandleForReading.availableData
            if more.isEmpty { break }
            said += String(decoding: more, as: UTF8.self)
        }
        XCTAssertTrue(said.contains("held"), "the client holds its 100 connections: \(said)")
        // The agent has taken all hundred (its listener and theirs: 101 sockets at least).
        func sockets() -> Int {
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            return fds.filter {
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)"))?
                    .hasPrefix("socket:") == true
            }.count
        }
        XCTAssertTrue(eventually(10) { sockets() >= 101 }, "the agent took the connections: \(sockets()) sockets")
        XCTAssertLessThanOrEqual(field("Threads"), 32 + 8, "workers are bounded")
        XCTAssertLessThan(field("VmRSS") - rssBefore, 20 * 1024, "no megabyte per half-sent request (KiB)")
    }

    /// `unlock` when the key is cached already sets the lifetime it names.
    func testUnlockAgainSetsTheLifetimeItNames() throws {
        let s = try sandbox()
        s.expect("set", "api.ttl.example", stdin: "t1\n")
        s.expect("unlock", stderr: ["15m"])
        s.expect("unlock", env: ["TOKENVAULT_KEY_TTL": "2"], stderr: ["2s"])
        let unlocked = Date()
        let quiet = ["TOKENVAULT_PASSPHRASE": "", "TOKENVAULT_AGENT": "off"]
        XCTAssertEqual(s.tv("get", "api.ttl.example", env: quiet).status, 0, "cached at first")
        // The kernel drops the key when its 2 s are over: looked at until then, not slept through.
        var r = Run(status: 0, stdout: "", stderr: "")
        XCTAssertTrue(
            eventually(10) {
                r = s.tv("get", "api.ttl.example", env: quiet)
                return r.status != 0
            }, "the key expired")
        XCTAssertEqual(r.status, 77, "the key expired after the 2 s unlock said: \(r.stdout)")
        // The kernel counts a key's timeout in whole seconds: 2 s is more than 1 s from when it is set.
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(unlocked), 1, "not before its 2 s")
    }

    /// A test suite's throwaway runtime directory, removed after the command
    /// that started an agent in it: the agent leaves (docs/agent.md).
    func testAnAgentLeavesWhenItsRuntimeDirectoryIsRemoved() throws {
        let s = try sandbox()
        let runtime = s.home + "/throwaway-run"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        chmod(runtime, 0o700)
        s.env["XDG_RUNTIME_DIR"] = runtime
        s.expect("set", "api.gone.example", stdin: "t1\n")
        s.expect("get", "api.gone.example", env: ["TOKENVAULT_AGENT": "auto"])
        var pid = 0
        XCTAssertTrue(
            eventually(10) {
                pid = agentPID(s) ?? 0
                return pid > 0
            }, "an agent started on use")
        try FileManager.default.removeItem(atPath: runtime)
        XCTAssertTrue(eventually(30) { processGone(Int32(pid)) }, "the agent left with its runtime directory")
    }

    /// Another agent's socket in its place (a second agent started by hand
    /// after the socket was removed): the first one leaves, the second serves.
    func testAnAgentLeavesWhenItsSocketIsReplaced() throws {
        let s = try sandbox()
        s.expect("set", "api.replaced.example", stdin: "t1\n")
        startAgent(s)
        let first = try XCTUnwrap(agentPID(s))
        let socket = s.home + "/run/tokenvault/agent.sock"
        try FileManager.default.removeItem(atPath: socket)
        // The first one holds the agent lock: a second one cannot start; a plain socket stands in.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        holder.arguments = [
            "-c",
            "import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); time.sleep(20)",
            socket,
        ]
        try holder.runNoted()
        defer { holder.terminate() }
        XCTAssertTrue(eventually(15) { processGone(Int32(first)) }, "the first agent left")
        XCTAssertTrue(FileManager.default.fileExists(atPath: socket), "and did not remove the socket now in its place")
    }

    /// Something at the agent's socket that neither confirms a lock nor
    /// leaves when told to: `lock` does not claim to hold (75).
    func testALockNobodyConfirmedIsAFailure() throws {
        let s = try sandbox()
        s.expect("set", "api.unconfirmed.example", stdin: "t1\n")
        let socket = s.home + "/run/tokenvault/agent.sock"
        let mute = Process()
        mute.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        mute.arguments = [
            "-c",
            """
            import signal, socket, sys, time
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen()
            print('listening', flush=True)
            held = []
            while True:
                c, _ = s.accept(); held.append(c)
            """, socket,
        ]
        let out = Pipe()
        mute.standardOutput = out
        try mute.runNoted()
        defer { kill(mute.processIdentifier, SIGKILL) }
        _ = out.fileHandleForReading.availableData
        let r = s.tv("lock", limit: 60)
        XCTAssertEqual(r.status, 75, r.stderr)
        XCTAssertTrue(r.stderr.contains("did not confirm the lock"), r.stderr)
    }

    /// What the agent decrypted for a client is gone from its memory once
    /// `lock` is run: no copy of the refresh token (never printed) nor of
    /// the access token it printed is left in its heap (docs/security.md).
    func testLockWipesWhatTheAgentDecrypted() throws {
        let s = try sandbox()
        s.env["TOKENVAULT_KEY_TTL"] = "600"
        let refresh = "rt-wipe-" + UUID().uuidString, access = "at-wipe-" + UUID().uuidString
        s.expect(
            "set", "api.wipe.example",
            stdin: #"{"access_token":"\#(access)","refresh_token":"\#(refresh)","expires_in":3600}"#)
        startAgent(s)
        let pid = Int32(try XCTUnwrap(agentPID(s)))
        XCTAssertEqual(s.expect("get", "api.wipe.example").stdout, access + "\n")
        XCTAssertEqual(s.expect("status", "api.wipe.example").status, 0)
        XCTAssertGreaterThan(occurrencesInMemory(of: refresh, pid: pid), 0, "the test sees what the agent holds")
        s.expect("lock")
        XCTAssertEqual(occurrencesInMemory(of: refresh, pid: pid), 0, "no copy of the refresh token after lock")
        XCTAssertEqual(occurrencesInMemory(of: access, pid: pid), 0, "no copy of the access token after lock")
    }
}
