import Foundation
import XCTest

/// `tokenvault login URL` against the official MCP Python SDK's server with
/// its own authorization routes (Tests/Fixtures/mcp_server.py): two
/// resources on one host, /a/mcp and /b/mcp (the second asks for more
/// scopes), one authorization server with dynamic registration.
final class ResourceLoginTests: XCTestCase {
    nonisolated(unsafe) static var server: Process!
    nonisolated(unsafe) static var port = 0

    override class func setUp() {
        (server, port) = try! startFixtureServer(
            "mcp_server.py", ["--path", "/a/mcp", "--also", "/b/mcp"],
            python: Paths.root.appendingPathComponent(".build/mcp-venv/bin/python").path)
    }

    override class func tearDown() {
        if server.isRunning {
            server.terminate()
            server.waitUntilExit()
        }
    }

    var base: String { "http://127.0.0.1:\(Self.port)" }
    var a: String { base + "/a/mcp" }
    var b: String { base + "/b/mcp" }

    func sandbox() -> Sandbox {
        let s = Sandbox()
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        return s
    }

    func stats() throws -> [String: Int] { try fixtureStats(base + "/stats") }

    /// What an MCP client gets from the resource at `url` with the token `get SERVICE` prints.
    func initialize(_ s: Sandbox, _ service: String, at url: String) -> String {
        let message =
            #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#
        let script = """
            printf 'Authorization: Bearer %s\\n' "$TOKENVAULT_ACCESS_TOKEN" > "$HOME/h"
            curl -s -o /dev/null -w '%{http_code}' -H @"$HOME/h" -H 'Content-Type: application/json' \
              -H 'Accept: application/json, text/event-stream' --data-binary '\(message)' \(url)
            """
        return s.tv("exec", service, "--", "/bin/sh", "-c", script).out
    }

    func testALoginByURLAloneRegistersOnceAndStoresUnderTheResource() throws {
        let s = sandbox()
        let before = try stats()
        let login = s.tv("login", a, limit: 60)
        XCTAssertEqual(login.status, 0, login.stderr)
        XCTAssertTrue(login.stderr.contains("registered tokenvault at \(base) as client"), login.stderr)
        XCTAssertTrue(login.stderr.contains("stored under 127.0.0.1:\(Self.port)/a/mcp (default)"), login.stderr)
        let after = try stats()
        XCTAssertEqual(after["registrations"], (before["registrations"] ?? 0) + 1)
        // What was registered: a native public client for one loopback redirect.
        let asked = try XCTUnwrap(
            JSONSerialization.jsonObject(
                with: Data(
                    runProcess("/usr/bin/curl", ["-s", base + "/last-registration"], env: ["PATH": "/usr/bin:/bin"])
                        .stdout.utf8))
                as? [String: Any])
        XCTAssertEqual(asked["application_type"] as? String, "native")
        XCTAssertEqual(asked["token_endpoint_auth_method"] as? String, "none")
        XCTAssertEqual(asked["client_name"] as? String, "tokenvault")
        let redirects = try XCTUnwrap(asked["redirect_uris"] as? [String])
        XCTAssertEqual(redirects.count, 1)
        XCTAssertTrue(redirects[0].hasPrefix("http://127.0.0.1:"), redirects[0])
        // The token is bound to the resource: the server takes it.
        let name = "127-0-0-1-\(Self.port)-a-mcp"
        XCTAssertEqual(initialize(s, name, at: a), "200")
        // One credential, named every way.
        let token = s.tv("get", a).out
        XCTAssertFalse(token.isEmpty)
        for form in [name, "127.0.0.1:\(Self.port)/a/mcp", a + "/", a + "/tools/x"] {
            XCTAssertEqual(s.tv("get", form).out, token, form)
        }
        XCTAssertTrue(s.tv("list").out.contains("127.0.0.1:\(Self.port)/a/mcp  default  \(name)"), s.tv("list").out)
        let providers = s.tv("providers").out
        XCTAssertTrue(providers.contains("\(name)") && providers.contains("login URL"), providers)
        // No secret of the registration is shown anywhere, and it is no credential.
        XCTAssertEqual(s.tv("list", "--json").out.components(separatedBy: "\"service\"").count, 2)
        XCTAssertEqual(s.tv("get", "127.0.0.1:\(Self.port)", "--account", "tokenvault:client").status, 64)

        // A second login uses the registration kept in the backend.
        XCTAssertEqual(s.tv("login", a, limit: 60).status, 0)
        XCTAssertEqual(try stats()["registrations"], after["registrations"])
        // Renewal goes to the same server for the same resource, with the same client.
        try s.expireStored(name)
        XCTAssertEqual(initialize(s, name, at: a), "200")
    }

    func testTwoResourcesOnOneHostKeepTwoCredentials() throws {
        let s = sandbox()
        XCTAssertEqual(s.tv("login", a, limit: 60).status, 0)
        let second = s.tv("login", b, "--name", "bee", limit: 60)
        XCTAssertEqual(second.status, 0, second.stderr)
        // The first registration did not cover /b/mcp's scopes: a second one, said why.
        XCTAssertTrue(second.stderr.contains("does not cover every scope asked for"), second.stderr)
        let tokenA = s.tv("get", a).out, tokenB = s.tv("get", "bee").out
        XCTAssertNotEqual(tokenA, tokenB)
        XCTAssertEqual(s.tv("get", b).out, tokenB)
        XCTAssertEqual(initialize(s, "bee", at: b), "200")
        XCTAssertEqual(initialize(s, a, at: a), "200")
        // Each token is for its own resource only.
        XCTAssertEqual(initialize(s, "bee", at: a), "401")
        // Both renew, each through the registration it was made with.
        for service in [a, "bee"] {
            let r = s.tv("refresh", service)
            XCTAssertEqual(r.status, 0, "\(service): \(r.stderr)")
        }
        XCTAssertEqual(s.tv("delete", "bee").status, 0)
        XCTAssertEqual(s.tv("get", a).status, 0, "the other resource's credential is untouched")
        XCTAssertEqual(s.tv("get", b).status, 3)
    }

    func testAMixedUpRedirectStoresNothing() throws {
        let s = sandbox()
        let r = s.tv("login", a, env: ["BROWSER_MODE": "iss", "BROWSER_ISS": "https://evil.example"], limit: 60)
        XCTAssertEqual(r.status, 65, r.stderr)
        XCTAssertTrue(r.stderr.contains("mix-up"), r.stderr)
        XCTAssertEqual(s.tv("get", a).status, 3)
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.env["XDG_CONFIG_HOME"]! + "/tokenvault/providers.toml"))
    }

    func testAResourceWhoseMetadataDescribesAnotherIsRefused() throws {
        let s = sandbox()
        let before = try stats()
        let r = s.tv("login", base + "/liar", limit: 60)
        XCTAssertEqual(r.status, 78, r.stderr)
        XCTAssertTrue(r.stderr.contains("describes another resource"), r.stderr)
        XCTAssertEqual(try stats()["registrations"], before["registrations"], "nothing was registered")
        // Nothing to log in to at all: no metadata.
        let none = s.tv("login", base + "/nothing", limit: 60)
        XCTAssertEqual(none.status, 65, none.stderr)
        XCTAssertTrue(none.stderr.contains("no resource metadata"), none.stderr)
    }

    func testAResourceThatNowNamesAnotherServerIsLoggedInToAfresh() throws {
        let s = sandbox()
        XCTAssertEqual(s.tv("login", a, limit: 60).status, 0)
        // As if the grant had come from another authorization server.
        let path = s.env["XDG_CONFIG_HOME"]! + "/tokenvault/providers.toml"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try text.replacingOccurrences(of: "issuer = \"\(base)\"", with: "issuer = \"https://old-auth.example\"")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let r = s.tv("login", a, limit: 60)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(
            r.stderr.contains(
                "now names the authorization server \(base), not https://old-auth.example: logging in there; nothing from https://old-auth.example is sent to it"
            ), r.stderr)
        XCTAssertTrue(try String(contentsOfFile: path, encoding: .utf8).contains("issuer = \"\(base)\""))
    }

    func testBadArgumentsAreUsageErrors() {
        let s = sandbox()
        XCTAssertEqual(s.tv("login", a, "--client-id", "x").status, 64)
        XCTAssertEqual(s.tv("login", a, "--name", "Not a name").status, 64)
        XCTAssertEqual(s.tv("login", a, "--name", "github").status, 64)
        XCTAssertEqual(s.tv("login", "ftp://127.0.0.1/a").status, 64)
    }
}
