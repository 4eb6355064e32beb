import Foundation
import TokenVaultKit
import XCTest

/// tokenvault against a remote MCP server built on the official MCP Python
/// SDK, with the SDK's own authorization routes (Tests/Fixtures/mcp_server.py,
/// started once for the class in the venv scripts/deps.sh makes). The server
/// accepts only tokens bound to it (RFC 8707).
final class MCPServerTests: XCTestCase {
    nonisolated(unsafe) static var server: Process!
    nonisolated(unsafe) static var port = 0

    override class func setUp() {
        (server, port) = try! startFixtureServer(
            "mcp_server.py", python: Paths.root.appendingPathComponent(".build/mcp-venv/bin/python").path)
    }

    override class func tearDown() {
        if server.isRunning {
            server.terminate()
            server.waitUntilExit()
        }
    }

    var base: String { "http://127.0.0.1:\(Self.port)" }

    /// A client registered at the server for `redirect` (what `login URL` will do by itself).
    func registeredClient(redirect: String) throws -> String {
        let body =
            #"{"redirect_uris":["\#(redirect)"],"token_endpoint_auth_method":"none","application_type":"native","grant_types":["authorization_code","refresh_token"],"response_types":["code"],"scope":"files:read"}"#
        let r = runProcess(
            "/usr/bin/curl", ["-s", "-H", "Content-Type: application/json", "--data-binary", "@-", base + "/register"],
            stdin: body,
            env: ["PATH": "/usr/bin:/bin"])
        let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], r.stdout)
        return try XCTUnwrap(o["client_id"] as? String)
    }

    func sandbox(_ name: String, resource: Bool) throws -> Sandbox {
        let probe = try LoopbackPortProbe()  // a free port for the fixed redirect URI
        probe.close()
        let redirect = "http://127.0.0.1:\(probe.port)/callback"
        let s = Sandbox()
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        try s.writeConfig(
            """
            [providers.\(name)]
            authorize_url = "\(base)/authorize"
            token_url = "\(base)/token"
            client_id = "\(try registeredClient(redirect: redirect))"
            redirect_uri = "\(redirect)"
            scopes = ["files:read"]
            \(resource ? "resource = \"\(base)/mcp\"" : "")
            """)
        return s
    }

    /// An MCP `initialize` with the stored token (in a header file, never in argv): the HTTP status.
    func initialize(_ s: Sandbox, _ name: String) -> String { Self.initialize(s, name, base: base) }

    static func initialize(_ s: Sandbox, _ name: String, base: String) -> String {
        let message =
            #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#
        let script = """
            printf 'Authorization: Bearer %s\\n' "$TOKENVAULT_ACCESS_TOKEN" > "$HOME/h"
            curl -s -o /dev/null -w '%{http_code}' -H @"$HOME/h" -H 'Content-Type: application/json' \
              -H 'Accept: application/json, text/event-stream' --data-binary '\(message)' \(base)/mcp
            """
        return s.tv("exec", name, "--", "/bin/sh", "-c", script).out
    }

    func testATokenAskedForTheResourceIsBoundToItAndStaysSoWhenRenewed() throws {
        let s = try sandbox("mcp", resource: true)
        let login = s.tv("login", "mcp", limit: 60)
        XCTAssertEqual(login.status, 0, login.stderr)
        XCTAssertEqual(initialize(s, "mcp"), "200", "the server takes a token bound to it")
        // Renewed: the refresh asks for the same resource.
        try s.expireStored("127.0.0.1:\(Self.port)")
        XCTAssertEqual(initialize(s, "mcp"), "200")
        // Without `resource` the same server issues a token it then refuses: the binding is what it checks.
        let unbound = try sandbox("unbound", resource: false)
        XCTAssertEqual(unbound.tv("login", "unbound", limit: 60).status, 0)
        XCTAssertEqual(initialize(unbound, "unbound"), "401")
    }

    func testAResourceThatIsNotAnHTTPSURLIsAConfigError() throws {
        let s = Sandbox()
        for bad in ["http://mcp.example.com/mcp", "https://mcp.example.com/mcp#part", "mcp"] {
            try s.writeConfig(
                """
                [providers.mcp]
                token_url = "https://auth.example.com/token"
                client_id = "c"
                resource = "\(bad)"
                """)
            let r = s.tv("login", "mcp")
            XCTAssertEqual(r.status, 78, "\(bad): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("resource must"), r.stderr)
        }
    }

    func stats() throws -> [String: Int] { try fixtureStats(base + "/stats") }

    /// The race MCP clients lose: many processes at once with an expired token
    /// and a refresh token the server rotates and, replayed, revokes with its
    /// whole family. tokenvault refreshes once; every process gets the new token.
    func testManyProcessesAtExpiryMakeOneRefreshAndTheFamilyLives() throws {
        let s = try sandbox("mcp", resource: true)
        XCTAssertEqual(s.tv("login", "mcp", limit: 60).status, 0)
        for round in 1...2 {
            try s.expireStored("127.0.0.1:\(Self.port)")
            let before = try stats()
            let results = Locked<[String]>([])
            let base = self.base
            DispatchQueue.concurrentPerform(iterations: 12) { _ in
                let status = Self.initialize(s, "mcp", base: base)
                results.mutate { $0.append(status) }
            }
            let after = try stats()
            XCTAssertEqual(results.value, Array(repeating: "200", count: 12), "round \(round)")
            XCTAssertEqual(after["refreshes"], (before["refreshes"] ?? 0) + 1, "round \(round): one refresh")
            XCTAssertEqual(after["replays"], 0, "no rotated refresh token was ever sent again")
        }
    }
}
