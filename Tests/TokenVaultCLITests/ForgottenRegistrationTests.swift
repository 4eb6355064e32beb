import Foundation
import XCTest

/// An authorization server that forgets its clients: the MCP SDK's server
/// (mcp_server.py keeps them in memory) restarted on the same port.
/// `get` says to log in, `login URL` registers again at once, the bridge
/// works again, and the forgotten client is gone from the vault.
final class ForgottenRegistrationTests: XCTestCase {
    nonisolated(unsafe) static var server: Process!
    nonisolated(unsafe) static var port = 0

    static var python: String { Paths.root.appendingPathComponent(".build/mcp-venv/bin/python").path }

    static func start(port: Int = 0) throws -> (Process, Int) {
        try startFixtureServer("mcp_server.py", ["--path", "/f/mcp", "--port", String(port)], python: python)
    }

    override class func setUp() { (server, port) = try! start() }

    override class func tearDown() {
        if server.isRunning {
            server.terminate()
            server.waitUntilExit()
        }
    }

    var url: String { "http://127.0.0.1:\(Self.port)/f/mcp" }

    /// The client ids of the registrations kept in `s`'s file vault.
    func keptClients(_ s: Sandbox) throws -> [String] {
        let r = runProcess(
            "/usr/bin/python3", [Paths.fixtures.appendingPathComponent("decrypt_vault.py").path, s.vault],
            env: ["TOKENVAULT_PASSPHRASE": s.env["TOKENVAULT_PASSPHRASE"]!, "PATH": "/usr/bin:/bin"])
        let entries = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]], r.stderr)
        return entries.filter { ($0["account"] as? String)?.hasPrefix("tokenvault:client:") == true }.compactMap {
            ($0["record"] as? [String: Any])?["access_token"] as? String
        }
    }

    func testARestartedServerThatForgotItsClientsIsRegisteredAtAgain() throws {
        let s = Sandbox()
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        let login = s.tv("login", url, limit: 60)
        XCTAssertEqual(login.status, 0, login.stderr)
        let old = try XCTUnwrap(keptClients(s).first)
        XCTAssertEqual(MCPBridgeTests.calls(MCPBridgeTests.client(s, url).0), ["hello 0"])
        // The server restarts with its clients (and tokens) in memory: all gone.
        Self.server.terminate()
        Self.server.waitUntilExit()
        (Self.server, _) = try Self.start(port: Self.port)
        try s.expireStored("127.0.0.1:\(Self.port)/f/mcp")
        let get = s.tv("get", url)
        XCTAssertEqual(get.status, 4, get.stderr)
        XCTAssertTrue(get.stderr.contains("no longer knows the client tokenvault registered there"), get.stderr)
        XCTAssertEqual(get.stderr.components(separatedBy: " is kept").count - 1, 1, "said once: \(get.stderr)")
        XCTAssertTrue(get.stderr.contains("log in to register again: tokenvault login \(url)"), get.stderr)
        XCTAssertEqual(try keptClients(s), [old], "nothing is dropped before a new login worked")
        XCTAssertFalse(s.tv("get", url, "--no-refresh", "--field", "refresh_token").out.isEmpty, "the grant is kept")
        // A login registers again at once: no browser waits on a page that cannot work.
        let started = Date()
        let again = s.tv("login", url, "--timeout", "30", limit: 60)
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 20)
        XCTAssertTrue(again.stderr.contains("it no longer knows client \(old)"), again.stderr)
        XCTAssertTrue(again.stderr.contains("removed 1 registration"), again.stderr)
        let now = try keptClients(s)
        XCTAssertEqual(now.count, 1)
        XCTAssertFalse(now.contains(old), "the forgotten client is gone from the vault")
        XCTAssertEqual(MCPBridgeTests.calls(MCPBridgeTests.client(s, url).0), ["hello 0"], "the bridge works again")
        // --register-again replaces a client the server still knows, too.
        let forced = s.tv("login", url, "--register-again", limit: 60)
        XCTAssertEqual(forced.status, 0, forced.stderr)
        XCTAssertTrue(forced.stderr.contains("registering tokenvault at"), forced.stderr)
    }
}
