import Foundation
import TokenVaultKit
import XCTest

/// `tokenvault import mcp-remote URL` (docs/reference.md, "Moving in"):
/// mcp-remote's cache, built from its documented layout (mcp-remote is an
/// npm package) with a real registration and real tokens of the MCP Python
/// SDK's server; imported, the bridge uses the token, and its expiry renews
/// through the imported client without a second login.
final class MCPRemoteImportTests: XCTestCase {
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
        // The bridge: the SDK's client through tokenvault mcp, no login.
        let (steps, run) = MCPBridgeTests.client(s, url)
        XCTAssertFalse(steps.isEmpty, run.stderr)
        XCTAssertFalse(run.stderr.contains("log in"), run.stderr)
        // Its expiry renews through the imported client.
        _ = try s.expireStored(url)
        let before = try fixtureStats("http://127.0.0.1:\(Self.port)/stats")["refreshes"] ?? 0
        let renewed = s.tv("get", url)
        XCTAssertEqual(renewed.status, 0, renewed.stderr)
        XCTAssertNotEqual(renewed.out, access)
        XCTAssertEqual(try fixtureStats("http://127.0.0.1:\(Self.port)/stats")["refreshes"], before + 1)
    }

    func testNoCacheForTheURLIsClear() throws {
        let s = Sandbox()
        s.expect("import", "mcp-remote", url, status: 3, stderr: ["mcp-remote keeps no login for exactly this URL"])
        s.expect("import", "mcp-remote", status: 64, stderr: ["needs the server's URL"])
        s.expect("import", "netrc", url, status: 64, stderr: ["goes with mcp-remote only"])
    }
}
