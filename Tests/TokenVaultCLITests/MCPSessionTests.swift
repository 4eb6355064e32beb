import Foundation
import TokenVaultKit
import XCTest

/// `tokenvault mcp URL` as desktop MCP clients start it: with the SDK's
/// default environment (HOME, PATH, SHELL, TERM; no XDG_RUNTIME_DIR, no
/// session bus), in front of the SDK's server (mcp_server.py). The session
/// is found as libsystemd finds it: /run/user/UID, made by the test as a
/// login would make it, with a private session bus at its `bus`; and every
/// failure is a JSON-RPC error, after which the bridge goes on serving.
final class MCPSessionTests: XCTestCase {
    nonisolated(unsafe) static var server: Process!
    nonisolated(unsafe) static var port = 0
    nonisolated(unsafe) static var keyring: PrivateKeyring!
    nonisolated(unsafe) static var madeRuntime = false
    static let runtime = "/run/user/\(getuid())"

    static var python: String { Paths.root.appendingPathComponent(".build/mcp-venv/bin/python").path }

    override class func setUp() {
        (server, port) = try! startFixtureServer(
            "mcp_server.py", ["--path", "/s/mcp", "--also", "/t/mcp"], python: python)
        // The runtime directory a systemd login makes: the user's, 0700.
        if !FileManager.default.fileExists(atPath: runtime) {
            try! FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
            madeRuntime = true
        }
        chmod(runtime, 0o700)
        precondition(!FileManager.default.fileExists(atPath: runtime + "/bus"), "\(runtime)/bus is in use")
        keyring = try! PrivateKeyring(listen: runtime + "/bus")
    }

    override class func tearDown() {
        if server.isRunning {
            server.terminate()
            server.waitUntilExit()
        }
        keyring.stop()
        unlink(runtime + "/bus")
        try? FileManager.default.removeItem(atPath: runtime + "/tokenvault")
        if madeRuntime { try? FileManager.default.removeItem(atPath: runtime) }
    }

    var url: String { "http://127.0.0.1:\(Self.port)/s/mcp" }

    /// What an MCP client passes: the SDK's default environment, nothing of the session.
    func clientEnvironment(_ s: Sandbox) -> [String: String] {
        ["HOME": s.home, "PATH": s.env["PATH"]!, "SHELL": "/bin/sh", "TERM": "dumb", "LANG": "C.UTF-8"]
    }

    /// A user whose login session set only HOME (XDG dirs at their defaults), logged in to `url`.
    func user(backend: String? = nil) throws -> Sandbox {
        let s = Sandbox()
        s.env = clientEnvironment(s)
        s.env["TOKENVAULT_KDF_PROFILE"] = "interactive"
        s.env["TOKENVAULT_AGENT"] = "manual"
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        if let backend {
            try FileManager.default.createDirectory(
                atPath: s.home + "/.config/tokenvault", withIntermediateDirectories: true)
            try "backend = \"\(backend)\"\n".write(
                toFile: s.home + "/.config/tokenvault/config.toml", atomically: true, encoding: .utf8)
        }
        return s
    }

    func sdkClient(_ s: Sandbox, env: [String: String]) -> ([String], Run) {
        let run = runProcess(
            Self.python,
            [
                Paths.fixtures.appendingPathComponent("mcp_client.py").path, "--default-env", "--", Paths.binary, "mcp",
                url,
            ],
            env: env, limit: 90)
        return (MCPBridgeTests.calls(MCPBridgeTests.steps(run)), run)
    }

    func testTheBridgeFindsTheSessionBusAndTheAgentWithTheSDKsDefaultEnvironment() throws {
        let s = try user()
        let login = s.tv("login", url, limit: 60)
        XCTAssertEqual(login.status, 0, login.stderr)
        XCTAssertTrue(s.tv("backend").stdout.contains("secret-service"), "the session bus at \(Self.runtime)/bus")
        let item = runProcess(
            "/usr/bin/secret-tool", ["search", "service", "127.0.0.1:\(Self.port)/s/mcp"],
            env: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(Self.runtime)/bus"])
        XCTAssertTrue(
            item.stdout.contains("127.0.0.1:\(Self.port)/s/mcp") || item.stderr.contains("/s/mcp"), "in the keyring")
        let (calls, run) = sdkClient(s, env: clientEnvironment(s))
        XCTAssertEqual(calls, ["hello 0"], run.stdout + run.stderr)
        // And through the agent's socket in that runtime directory.
        XCTAssertEqual(s.tv("agent").status, 0)
        addTeardownBlock { s.expect("agent", "stop") }
        XCTAssertTrue(FileManager.default.fileExists(atPath: Self.runtime + "/tokenvault/agent.sock"))
        let before = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(s.tv("agent", "status", "--json").stdout.utf8)) as? [String: Any])
        let (again, run2) = sdkClient(s, env: clientEnvironment(s))
        XCTAssertEqual(again, ["hello 0"], run2.stdout + run2.stderr)
        let after = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(s.tv("agent", "status", "--json").stdout.utf8)) as? [String: Any])
        XCTAssertGreaterThan(
            (after["requests"] as? Int ?? 0) - (before["requests"] as? Int ?? 0), 1, "the bridge asked the agent")
        // The entry --print-config prints works as printed: nothing more is needed here.
        let config = s.tv("mcp", url, "--print-config")
        XCTAssertFalse(config.stdout.contains("\"env\""), config.stdout)
    }

    /// A server that asks for more scopes, behind a bridge started with the
    /// SDK's default environment (no $BROWSER, no display): the login opens
    /// through the session bus's desktop portal, and the call goes through.
    func testAStepUpOpensTheLoginThroughTheSessionsPortal() throws {
        let s = try user()
        let t = "http://127.0.0.1:\(Self.port)/t/mcp"
        XCTAssertEqual(s.tv("login", t, "--scope", "files:read", limit: 60).status, 0)
        let log = s.home + "/portal.log"
        let (portal, _) = try startFixtureServer("fake_portal.py", ["unix:path=\(Self.runtime)/bus", log])
        defer { portal.terminate() }
        let run = runProcess(
            Self.python,
            [
                Paths.fixtures.appendingPathComponent("mcp_client.py").path, "--default-env", "--", Paths.binary, "mcp",
                t,
            ],
            env: clientEnvironment(s), limit: 90)
        XCTAssertEqual(MCPBridgeTests.calls(MCPBridgeTests.steps(run)), ["hello 0"], run.stdout + run.stderr)
        let asked = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        XCTAssertTrue(asked.contains("/authorize?") && asked.contains("files%3Awrite"), "the portal opened: \(asked)")
        XCTAssertEqual(s.tv("get", t, "--field", "scope").out, "files:read files:write")
    }

    func testThePrintedEntryWorksAsPrintedWhereTheSessionIsElsewhere() throws {
        // A session whose runtime directory and files are not where a client would look.
        let s = try user()
        let runtime = s.home + "/elsewhere"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        chmod(runtime, 0o700)
        s.env["XDG_RUNTIME_DIR"] = runtime
        s.env["XDG_DATA_HOME"] = s.home + "/data"
        s.env["TOKENVAULT_BACKEND"] = "file"
        s.env["TOKENVAULT_PASSPHRASE"] = "correct horse"
        s.expect("login", url, limit: 60)
        let config = s.tv("mcp", url, "--print-config")
        let entry = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(config.stdout.utf8)) as? [String: Any])
        let env = try XCTUnwrap(entry["env"] as? [String: String], config.stdout)
        XCTAssertEqual(env["XDG_RUNTIME_DIR"], runtime)
        XCTAssertEqual(env["XDG_DATA_HOME"], s.home + "/data")
        XCTAssertEqual(env["TOKENVAULT_BACKEND"], "file")
        XCTAssertNil(env["TOKENVAULT_PASSPHRASE"], "never a passphrase")
        XCTAssertFalse(config.stdout.contains("correct horse"))
        // The client starts exactly that entry: the binary by its absolute path, the env over its defaults.
        let bin = s.home + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: bin + "/tokenvault", withDestinationPath: Paths.binary)
        let run = runProcess(
            Self.python, [Paths.fixtures.appendingPathComponent("mcp_client.py").path, "--config", config.out],
            env: ["HOME": s.home, "PATH": bin + ":" + (s.env["PATH"] ?? "")], limit: 90)
        XCTAssertEqual(MCPBridgeTests.calls(MCPBridgeTests.steps(run)), ["hello 0"], run.stdout + run.stderr)
    }

    /// The bridge under bridge_driver.py with the client's environment, while
    /// `meanwhile` runs on this thread (told which ids were answered so far): the lines it wrote.
    func drive(
        _ s: Sandbox, sends: [(Double, String)], ids: [Int], meanwhile: (_ answered: () -> Set<Int>) -> Void
    ) throws -> [[String: Any]] {
        let answers = s.home + "/answered-" + UUID().uuidString.prefix(8)
        var args = [Paths.fixtures.appendingPathComponent("bridge_driver.py").path, "--answered", answers]
        for (t, line) in sends { args += ["--at", String(t), line] }
        args += [
            "--until-ids", ids.map(String.init).joined(separator: ","), "--limit", "30", "--", Paths.binary, "mcp", url,
        ]
        let result = Locked<Run?>(nil)
        let done = DispatchSemaphore(value: 0)
        let env = clientEnvironment(s)
        let argv = args
        DispatchQueue.global().async {
            result.mutate { $0 = runProcess("/usr/bin/python3", argv, env: env, limit: 60) }
            done.signal()
        }
        meanwhile {
            Set(
                ((try? String(contentsOfFile: answers, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                    Int($0)
                })
        }
        done.wait()
        let run = try XCTUnwrap(result.value)
        return run.stdout.split(separator: "\n").compactMap { raw -> [String: Any]? in
            guard let o = try? JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: Any],
                let line = o["line"] as? String
            else { return nil }
            return try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
    }

    static func initialize(_ id: Int) -> String {
        #"{"jsonrpc":"2.0","id":\#(id),"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#
    }

    func error(_ m: [String: Any]?) -> (code: Int, message: String)? {
        guard let e = m?["error"] as? [String: Any] else { return nil }
        return (e["code"] as? Int ?? 0, e["message"] as? String ?? "")
    }

    func testALockedVaultIsAnErrorUntilUnlockThenTheSameBridgeServes() throws {
        let s = try user(backend: "file")
        s.env["TOKENVAULT_PASSPHRASE"] = "correct horse"
        s.expect("login", url, limit: 60)
        s.env["TOKENVAULT_PASSPHRASE"] = nil
        XCTAssertEqual(s.tv("lock").status, 0)
        let lines = try drive(s, sends: [(0, Self.initialize(1)), (4, Self.initialize(2))], ids: [1, 2]) { answered in
            XCTAssertTrue(eventually(10) { answered().contains(1) }, "the first request was answered while locked")
            let unlock = s.tv("unlock", env: ["TOKENVAULT_PASSPHRASE": "correct horse"])
            XCTAssertEqual(unlock.status, 0, unlock.stderr)
            XCTAssertTrue(unlock.stderr.contains("the key is cached for"), unlock.stderr)
        }
        let first = try XCTUnwrap(error(lines.first { $0["id"] as? Int == 1 }), "\(lines)")
        XCTAssertEqual(first.code, -32001)
        XCTAssertTrue(first.message.contains("the vault is locked"), first.message)
        XCTAssertTrue(first.message.contains("tokenvault unlock"), first.message)
        let second = try XCTUnwrap(lines.first { $0["id"] as? Int == 2 })
        XCTAssertNotNil(second["result"], "served once unlocked: \(second)")
    }

    func testARequiredLoginIsAnErrorUntilTheLoginThenTheSameBridgeServes() throws {
        let s = try user(backend: "file")
        s.env["TOKENVAULT_PASSPHRASE"] = "correct horse"
        XCTAssertEqual(s.tv("set", "other.example", stdin: "x").status, 0)  // the vault exists, its key is cached
        let lines = try drive(s, sends: [(0, Self.initialize(1)), (6, Self.initialize(2))], ids: [1, 2]) { answered in
            XCTAssertTrue(eventually(10) { answered().contains(1) }, "the first request was answered before the login")
            XCTAssertEqual(s.tv("login", url, limit: 30).status, 0)
        }
        let first = try XCTUnwrap(error(lines.first { $0["id"] as? Int == 1 }), "\(lines)")
        XCTAssertEqual(first.code, -32001)
        XCTAssertTrue(first.message.contains("no credential stored for 127.0.0.1:\(Self.port)/s/mcp"), first.message)
        XCTAssertTrue(first.message.contains("tokenvault login \(url)"), first.message)
        XCTAssertNotNil(lines.first { $0["id"] as? Int == 2 }?["result"], "served after the login: \(lines)")
    }

    func testAnUnreachableResourceIsAnErrorNotAnEndOfTheBridge() throws {
        let s = try user(backend: "file")
        s.env["TOKENVAULT_PASSPHRASE"] = "correct horse"
        let closed = "http://127.0.0.1:9/s/mcp"
        XCTAssertEqual(s.tv("set", "127.0.0.1:9/s/mcp", stdin: "t0k3n").status, 0)
        var args = [Paths.fixtures.appendingPathComponent("bridge_driver.py").path]
        for (t, id) in [(0.0, 1), (0.5, 2)] { args += ["--at", String(t), Self.initialize(id)] }
        args += ["--until-ids", "1,2", "--limit", "20", "--", Paths.binary, "mcp", closed]
        let run = runProcess("/usr/bin/python3", args, env: clientEnvironment(s), limit: 60)
        let errors = run.stdout.split(separator: "\n").compactMap { raw -> (Int, String)? in
            guard let o = try? JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: Any],
                let line = o["line"] as? String,
                let m = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            else { return nil }
            return error(m).map { ($0.code, $0.message) }
        }
        XCTAssertEqual(errors.map(\.0), [-32002, -32002], run.stdout)
        XCTAssertTrue(errors.first?.1.contains("127.0.0.1:9") == true, "\(errors)")
    }

    func testSetupMCPWritesAnEntryTheSDKsClientStartsTheBridgeFrom() throws {
        let s = try user()
        s.expect("login", url, limit: 60)
        let file = s.home + "/claude_desktop_config.json"
        try #"{"mcpServers":{"other":{"command":"x","args":[]}},"theme":"dark"}"#.write(
            toFile: file, atomically: true, encoding: .utf8)
        let printed = s.tv("setup", "mcp", url)
        XCTAssertEqual(printed.status, 0, printed.stderr)
        XCTAssertTrue(printed.stdout.contains("\"mcpServers\""), printed.stdout)
        let dry = s.tv("setup", "mcp", url, "--write", file, "--dry-run", "--name", "work")
        XCTAssertTrue(dry.stdout.contains("\"work\""), dry.stdout)
        XCTAssertFalse(try String(contentsOfFile: file, encoding: .utf8).contains("work"), "a dry run writes nothing")
        let written = s.tv("setup", "mcp", url, "--write", file, "--name", "work")
        XCTAssertEqual(written.status, 0, written.stderr)
        XCTAssertTrue(s.tv("setup", "mcp", url, "--write", file, "--name", "work").stderr.contains("set up already"))
        let document = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file))) as? [String: Any])
        XCTAssertEqual(document["theme"] as? String, "dark", "the file's other settings are kept")
        XCTAssertNotNil((document["mcpServers"] as? [String: Any])?["other"], "and its other servers")
        let run = runProcess(
            Self.python,
            [Paths.fixtures.appendingPathComponent("mcp_client.py").path, "--config-file", file + ":work"],
            env: clientEnvironment(s), limit: 90)
        XCTAssertEqual(MCPBridgeTests.calls(MCPBridgeTests.steps(run)), ["hello 0"], run.stdout + run.stderr)
        // VS Code's shape, and undone.
        let vscode = s.tv("setup", "mcp", url, "--format", "vscode")
        XCTAssertTrue(vscode.stdout.contains("\"servers\"") && vscode.stdout.contains("\"stdio\""), vscode.stdout)
        XCTAssertEqual(s.tv("setup", "mcp", url, "--write", file, "--name", "work", "--undo").status, 0)
        let after = try String(contentsOfFile: file, encoding: .utf8)
        XCTAssertFalse(after.contains("work"), after)
        XCTAssertTrue(after.contains("other"), after)
        // A file with comments is not rewritten.
        let jsonc = s.home + "/mcp.json"
        try "// mine\n{\"servers\":{}}".write(toFile: jsonc, atomically: true, encoding: .utf8)
        let refused = s.tv("setup", "mcp", url, "--format", "vscode", "--write", jsonc)
        XCTAssertEqual(refused.status, 78, refused.stderr)
        XCTAssertEqual(try String(contentsOfFile: jsonc, encoding: .utf8), "// mine\n{\"servers\":{}}")
    }
}
