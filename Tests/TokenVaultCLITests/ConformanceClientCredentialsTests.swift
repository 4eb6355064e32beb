import Foundation
import XCTest

/// The conformance suite's client-credentials scenarios (SEP-1046:
/// auth/client-credentials-basic, auth/client-credentials-jwt): a provider of
/// config.toml for the resource's authorization server, whose client fetches
/// its own tokens, logs in to the resource's URL with no user and no browser.
final class ConformanceClientCredentialsTests: ConformanceTestCase {
    /// No browser: nothing here may need one.
    override func sandbox() -> Sandbox {
        let s = super.sandbox()
        s.env["BROWSER"] = "/bin/false"
        return s
    }

    /// A sandbox whose config.toml has the suite's client for the scenario's
    /// issuer, with the client credentials grant and `secret` (its secret or key line),
    /// logged in to the scenario's URL and its calls through at both eras.
    func loggedIn(
        _ c: Scenario, _ secret: String, file: StaticString = #filePath, line: UInt = #line
    ) throws
        -> Sandbox
    {
        let s = sandbox()
        try s.writeConfig(machine(c, secret, resources: [c.url]))
        login(s, c, file: file, line: line)
        assertCallsGoThrough(s, c.url, file: file, line: line)
        return s
    }

    /// The suite's client for the scenario's issuer, with `resources`.
    func machine(_ c: Scenario, _ secret: String, resources: [String], scopes: [String]? = nil) -> String {
        """
        [providers.machine]
        issuer = "\(c.origin)"
        grant = "client_credentials"
        client_id = "conformance-test-client"
        \(secret)
        resources = [\(resources.map { "\"\($0)\"" }.joined(separator: ", "))]
        \(scopes.map { "scopes = [\($0.map { "\"\($0)\"" }.joined(separator: ", "))]" } ?? "")
        """
    }

    /// A resource that names the issuer of the user's own client, but is not
    /// one of the client's `resources`, never gets that client: no
    /// client-credentials request, no secret sent, and the error says which
    /// table to change if the resource is meant for it. The bridge starts no
    /// login with it either.
    func testAResourceNotListedNeverGetsTheUsersOwnClient() throws {
        let c = try start("client-credentials-basic")
        let s = sandbox()
        try s.writeConfig(
            machine(c, #"client_secret = "conformance-test-secret""#, resources: ["https://elsewhere.example/mcp"]))
        let r = s.tv("login", c.url, limit: 60)
        XCTAssertNotEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try count(c, "client-credentials-basic-auth"), 0, "the client was not used: \(r.stderr)")
        XCTAssertFalse(r.stderr.contains("conformance-test-secret"), r.stderr)
        if r.stderr.contains("offers no client registration") {
            XCTAssertTrue(r.stderr.contains("resources = [\"\(c.url)"), r.stderr)
        }
        let bridged = s.run(["get", c.url])
        XCTAssertNotEqual(bridged.status, 0)
        XCTAssertEqual(try count(c, "client-credentials-basic-auth"), 0)
    }

    /// Listed, it logs in with the scopes its configuration gives, not the
    /// ones the resource lists.
    func testAListedResourceGetsTheConfiguredScopes() throws {
        let c = try start("client-credentials-basic")
        let s = sandbox()
        try s.writeConfig(
            machine(c, #"client_secret = "conformance-test-secret""#, resources: [c.url + "/"], scopes: ["mine"]))
        login(s, c)
        let scope = s.tv("get", c.url, "--field", "scope")
        XCTAssertEqual(scope.out, "mine", scope.stderr)
    }

    func testClientCredentialsBasic() throws {
        let c = try start("client-credentials-basic")
        let s = try loggedIn(c, #"client_secret = "conformance-test-secret""#)
        try assertPassed(c, ["client-credentials-basic-auth", "token-resource"])
        XCTAssertEqual(try count(c, "authorization-request"), 0, "no user, no authorization request")
        // An expired token is fetched again, the same way, on the next use.
        try s.expireStored(c.url)
        XCTAssertEqual(s.tv("get", c.url).status, 0)
        XCTAssertEqual(try count(c, "client-credentials-basic-auth"), 2)
    }

    /// An ES256 key instead of a secret (private_key_jwt, chosen because the
    /// server lists only that): the assertion's aud is the issuer identifier.
    func testClientCredentialsJWT() throws {
        let key = NSTemporaryDirectory() + "tv-cc-" + UUID().uuidString.prefix(8) + ".pem"
        addTeardownBlock { try? FileManager.default.removeItem(atPath: key) }
        let c = try start("client-credentials-jwt", ["--key-out", key])
        XCTAssertEqual(chmod(key, 0o600), 0)
        _ = try loggedIn(c, #"private_key_file = "\#(key)""#)
        try assertPassed(c, ["client-credentials-jwt-verified", "token-resource"])
        XCTAssertEqual(try count(c, "authorization-request"), 0)
    }
}
