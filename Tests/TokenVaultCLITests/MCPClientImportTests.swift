import Foundation
import TokenVaultKit
import XCTest

/// `tokenvault import mcp-remote URL` and `import fastmcp URL`
/// (docs/reference.md, "Moving in"). mcp-remote's cache is built from its
/// documented layout (mcp-remote is an npm package) with a real registration
/// and real tokens of the MCP Python SDK's server; FastMCP's is made by
/// FastMCP itself (its CLI, and an application's store) logging in there.
/// Imported, the bridge uses the token, and its expiry renews through the
/// imported client without a second login.
final class MCPClientImportTests: XCTestCase {
    nonisolated(unsafe) static var server: Process!
    nonisolated(unsafe) static var port = 0

    override class func setUp() {
        (server, port) = try! startFixtureServer("mcp_server.py", ["--path", "/a/mcp"], python: MCPBridgeTests.python)
    }

    override class func tearDown() {
        if server.isRunning {
            server.terminate()
            server.waitUntilExit()
        }
    }

    var url: String { "http://127.0.0.1:\(Self.port)/a/mcp" }

    /// A login made elsewhere (a registration and its tokens, as the server
    /// gave them), written where mcp-remote 0.1.29 keeps them for `url`.
    func mcpRemoteCache(in s: Sandbox) throws -> String {
        let elsewhere = Sandbox()
        elsewhere.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        elsewhere.expect("login", url, limit: 60)
        let dump = runProcess(
            "/usr/bin/python3", [Paths.fixtures.appendingPathComponent("decrypt_vault.py").path, elsewhere.vault],
            env: ["PATH": "/usr/bin:/bin", "TOKENVAULT_PASSPHRASE": "correct horse"])
        let records = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [[String: Any]])
        func record(_ match: ([String: Any]) -> Bool) throws -> [String: Any] {
            let r = try XCTUnwrap(records.first(where: match), "\(records.count) records, none of that kind")
            return try XCTUnwrap(r["record"] as? [String: Any])
        }
        let registration = try record { ($0["account"] as? String)?.hasPrefix("tokenvault:client:") == true }
        let token = try record { ($0["account"] as? String) == "default" }
        let extra = try XCTUnwrap(registration["extra"] as? [String: Any])
        let dir = s.home + "/.mcp-auth/mcp-remote-0.1.29"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        // An older version's directory with another login of the same URL: the newest wins.
        try FileManager.default.createDirectory(
            atPath: s.home + "/.mcp-auth/mcp-remote-0.0.16", withIntermediateDirectories: true)
        let hash = runProcess(
            "/usr/bin/python3",
            ["-c", "import hashlib,sys; print(hashlib.md5(sys.argv[1].encode()).hexdigest())", url], env: [:]
        ).out
        let info: [String: Any] = [
            "client_id": try XCTUnwrap(extra["client_id"] as? String),
            "redirect_uris": [try XCTUnwrap(extra["redirect_uri"] as? String)],
            "token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"], "client_name": "MCP CLI Client",
        ]
        let tokens: [String: Any] = [
            "access_token": try XCTUnwrap(token["access_token"] as? String), "token_type": "Bearer",
            "expires_in": 3600, "refresh_token": try XCTUnwrap(token["refresh_token"] as? String),
            "scope": token["scope"] as? String ?? "",
        ]
        try JSONSerialization.data(withJSONObject: info).write(
            to: URL(fileURLWithPath: "\(dir)/\(hash)_client_info.json"))
        try JSONSerialization.data(withJSONObject: tokens).write(to: URL(fileURLWithPath: "\(dir)/\(hash)_tokens.json"))
        try Data("old".utf8).write(
            to: URL(fileURLWithPath: "\(s.home)/.mcp-auth/mcp-remote-0.0.16/\(hash)_tokens.json"))
        return tokens["access_token"] as! String
    }

    func testMCPRemotesLoginMovesInAndRenewsThroughItsClient() throws {
        let s = Sandbox()
        let access = try mcpRemoteCache(in: s)
        s.expect(
            "import", "mcp-remote", url,
            stderr: ["imported", "mcp-remote's login, its client", "still hold its tokens"])
        XCTAssertEqual(s.tv("get", url).out, access)
        // Stored now: --remove-source deletes mcp-remote's files, the older version's left alone.
        s.expect(
            "import", "mcp-remote", url, "--remove-source", stderr: ["already stored", "removed mcp-remote's files"])
        let left = try FileManager.default.contentsOfDirectory(atPath: s.home + "/.mcp-auth/mcp-remote-0.1.29")
        XCTAssertEqual(left, [])
        try assertUsedAndRenewed(s, access)
    }

    /// The imported login at work: the SDK's client through `tokenvault mcp`
    /// with no login, and at expiry one refresh through the imported client.
    func assertUsedAndRenewed(_ s: Sandbox, _ access: String, file: StaticString = #filePath, line: UInt = #line) throws
    {
        let (steps, run) = MCPBridgeTests.client(s, url)
        XCTAssertFalse(steps.isEmpty, run.stderr, file: file, line: line)
        XCTAssertFalse(run.stderr.contains("log in"), run.stderr, file: file, line: line)
        _ = try s.expireStored(url)
        let before = try fixtureStats("http://127.0.0.1:\(Self.port)/stats")["refreshes"] ?? 0
        let renewed = s.tv("get", url)
        XCTAssertEqual(renewed.status, 0, renewed.stderr, file: file, line: line)
        XCTAssertNotEqual(renewed.out, access, file: file, line: line)
        XCTAssertEqual(
            try fixtureStats("http://127.0.0.1:\(Self.port)/stats")["refreshes"], before + 1, file: file, line: line)
    }

    func testNoCacheForTheURLIsClear() throws {
        let s = Sandbox()
        s.expect("import", "mcp-remote", url, status: 3, stderr: ["mcp-remote keeps no login for exactly this URL"])
        s.expect("import", "mcp-remote", status: 64, stderr: ["needs the server's URL"])
        s.expect("import", "netrc", url, status: 64, stderr: ["goes with mcp-remote or fastmcp only"])
    }

    // MARK: FastMCP

    static var fastmcp: String { Paths.root.appendingPathComponent(".build/mcp-venv/bin/fastmcp").path }

    /// The environment FastMCP runs in: the sandbox's (its XDG_DATA_HOME
    /// holds FastMCP's data), a browser that returns at once as xdg-open does.
    func fastMCPEnvironment(_ s: Sandbox) -> [String: String] {
        var e = s.env
        e["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        e["BROWSER_MODE"] = "detached"
        e["PYTHONDONTWRITEBYTECODE"] = "1"
        return e
    }

    /// Every file under `dir`, and whether any holds `secret`.
    func files(under dir: String, holding secret: String) -> (all: [String], holding: [String]) {
        let all = (FileManager.default.enumerator(atPath: dir)?.compactMap { $0 as? String } ?? []).filter {
            var d = false
            return FileManager.default.fileExists(atPath: dir + "/" + $0, isDirectory: &d) && !d
        }
        let holding = all.filter {
            (try? String(contentsOfFile: dir + "/" + $0, encoding: .utf8))?.contains(secret) == true
        }
        return (all, holding)
    }

    /// FastMCP's CLI (`fastmcp list URL`) logs in and keeps the login, Fernet-
    /// encrypted, where FASTMCP_OAUTH_ENCRYPTION_KEY is set: import reads it
    /// with that key from the same environment; the bridge then needs no
    /// login, the expiry renews through FastMCP's client, and
    /// --remove-source leaves no token in FastMCP's directory.
    func testFastMCPsCLILoginMovesInAndRenewsThroughItsClient() throws {
        let s = Sandbox()
        let key = runProcess(
            "/usr/bin/python3", ["-c", "import base64,os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())"],
            env: [:]
        ).out
        s.env["FASTMCP_OAUTH_ENCRYPTION_KEY"] = key
        let login = runProcess(Self.fastmcp, ["list", url], env: fastMCPEnvironment(s), limit: 90)
        XCTAssertEqual(login.status, 0, login.stderr)
        XCTAssertTrue(login.stdout.contains("locate"), login.stdout)
        let store = s.home + "/data/fastmcp/cli-oauth"
        XCTAssertFalse(files(under: store, holding: "").all.isEmpty, "FastMCP kept its login on disk")

        // Without the key FastMCP's CLI keeps nothing on disk: import says so.
        s.expect(
            "import", "fastmcp", url, status: 3, env: ["FASTMCP_OAUTH_ENCRYPTION_KEY": ""],
            stderr: ["keeps its logins on disk only with FASTMCP_OAUTH_ENCRYPTION_KEY set"])
        // Its directory named with another key's values: 77, nothing stored.
        let dir = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: store).first)
        let otherKey = String(repeating: "A", count: 43) + "="
        s.expect(
            "import", "fastmcp", url, "--from", store + "/" + dir, status: 77,
            env: ["FASTMCP_OAUTH_ENCRYPTION_KEY": otherKey], stderr: ["does not open"])
        s.expect("list", status: 0)
        XCTAssertEqual(s.tv("get", url).status, 3)

        s.expect(
            "import", "fastmcp", url,
            stderr: ["imported", "FastMCP's login, its client", "still hold its tokens (encrypted)"])
        let access = s.tv("get", url).out
        XCTAssertFalse(access.isEmpty)
        // Stored now: --remove-source deletes FastMCP's values, its collections' names stay.
        s.expect("import", "fastmcp", url, "--remove-source", stderr: ["already stored", "removed FastMCP's files"])
        let left = files(under: store, holding: "__encrypted_data__")
        XCTAssertEqual(left.holding, [], "no encrypted value is left")
        XCTAssertTrue(left.all.allSatisfy { $0.hasSuffix("-info.json") }, "\(left.all)")
        // Used through the bridge; its expiry renews through FastMCP's client.
        try assertUsedAndRenewed(s, access)
    }

    /// An application's FileTreeStore (FastMCP's documented persistent
    /// store, unencrypted), named with --from: imported, the plaintext tokens
    /// are named, then removed; a half-written value changes nothing.
    func testAnApplicationsFastMCPStoreMovesIn() throws {
        let s = Sandbox()
        let store = s.home + "/app-tokens"
        let login = runProcess(
            MCPBridgeTests.python, [Paths.fixtures.appendingPathComponent("fastmcp_login.py").path, url, store],
            env: fastMCPEnvironment(s), limit: 90)
        XCTAssertEqual(login.status, 0, login.stderr)
        // The tokens' file: the client's registration names refresh_token too (its grant types).
        let tokenFile = try XCTUnwrap(files(under: store, holding: "access_token").holding.first, login.stderr)
        let entry = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: store + "/" + tokenFile)))
                as? [String: Any])
        let access = try XCTUnwrap((entry["value"] as? [String: Any])?["access_token"] as? String)

        // A half-written token file: one line naming it, nothing stored.
        let whole = try Data(contentsOf: URL(fileURLWithPath: store + "/" + tokenFile))
        try whole.prefix(40).write(to: URL(fileURLWithPath: store + "/" + tokenFile))
        s.expect("import", "fastmcp", url, "--from", store, status: 65, stderr: [tokenFile, "nothing was imported"])
        XCTAssertEqual(s.tv("get", url).status, 3)
        try whole.write(to: URL(fileURLWithPath: store + "/" + tokenFile))

        s.expect("import", "fastmcp", url, "--from", store, "--dry-run", stderr: ["would import"])
        XCTAssertEqual(s.tv("get", url).status, 3)
        s.expect("import", "fastmcp", url, "--from", store, stderr: ["imported", "still hold its tokens in plaintext"])
        XCTAssertEqual(s.tv("get", url).out, access)
        s.expect("import", "fastmcp", url, "--from", store, "--remove-source", stderr: ["already stored", "removed"])
        XCTAssertEqual(files(under: store, holding: access).holding, [])
        XCTAssertEqual(files(under: store, holding: "refresh_token").holding, [])
    }
}
