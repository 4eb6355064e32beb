import Foundation
import XCTest

/// The conformance suite's discovery and client scenarios (auth/metadata-*,
/// auth/basic-cimd, auth/token-endpoint-auth-*, auth/pre-registration,
/// auth/resource-mismatch) and the optional 2025-03-26 back-compat ones.
final class ConformanceAuthTests: ConformanceTestCase {
    // MARK: Discovery (auth/metadata-*)

    func testMetadataDefault() throws {
        try assertScenario(
            "metadata-default",
            ["authorization-pkce", "authorization-resource", "token-resource", "token-pkce-verifier"])
    }

    func testMetadataVar1() throws {
        try assertScenario("metadata-var1", ["authorization-pkce", "token-resource"])
    }

    /// PRM at the root only, naming the origin as the resource; the AS at a path.
    func testMetadataVar2() throws {
        try assertScenario("metadata-var2", ["authorization-resource", "token-resource"])
    }

    func testMetadataVar3() throws {
        try assertScenario("metadata-var3", ["authorization-pkce", "token-resource"])
    }

    // MARK: auth/basic-cimd

    /// The server takes client metadata documents: the configured document's URL is the client id.
    func testBasicCIMD() throws {
        let c = try start("basic-cimd")
        let s = sandbox()
        try s.writeConfig(#"client_metadata_url = "https://conformance-test.local/client-metadata.json""#)
        login(s, c)
        assertCallsGoThrough(s, c.url)
        try assertPassed(c, ["cimd-client-id-used", "token-pkce-verifier"])
        XCTAssertEqual(try count(c, "client-registration"), 0, "no registration where the document serves")
    }

    // MARK: Token endpoint authentication (auth/token-endpoint-auth-*, auth/pre-registration)

    /// The registration answer says client_secret_basic: Basic it is, and doctor says so.
    func testTokenEndpointAuthBasic() throws {
        let c = try start("token-endpoint-auth-basic")
        let s = sandbox()
        login(s, c)
        assertCallsGoThrough(s, c.url)
        try assertPassed(c, ["token-endpoint-auth-method"])
        let doctor = s.tv("doctor")
        let line = doctor.stdout.split(separator: "\n").first { $0.contains("login URL ") }
        XCTAssertTrue(line?.contains("authenticating with HTTP Basic (client_secret_basic)") == true, doctor.stdout)
        // The table a login keeps is providers.toml's, not config.toml's.
        let config = s.env["XDG_CONFIG_HOME"]! + "/tokenvault"
        XCTAssertTrue(
            doctor.stdout.contains(
                "config: \(config)/config.toml does not exist: the defaults apply; 1 provider kept in \(config)/providers.toml"
            ), doctor.stdout)
    }

    func testTokenEndpointAuthPost() throws {
        try assertScenario("token-endpoint-auth-post", ["token-endpoint-auth-method"])
    }

    func testTokenEndpointAuthNone() throws {
        try assertScenario("token-endpoint-auth-none", ["token-endpoint-auth-method"])
    }

    /// A client configured for the issuer, a server that lists only
    /// client_secret_basic: Basic is used; a wrong secret's hint names the
    /// config.toml table that holds it.
    func testPreRegistration() throws {
        let c = try start("pre-registration")
        let s = sandbox()
        let table = """
            [providers.conformance]
            issuer = "\(c.origin)"
            client_id = "conformance-client"
            client_secret = "%@"
            resources = ["\(c.url)"]
            """
        try s.writeConfig(table.replacingOccurrences(of: "%@", with: "conformance-secret"))
        login(s, c)
        assertCallsGoThrough(s, c.url)
        try assertPassed(c, ["token-endpoint-auth-method"])
        // The same client with a wrong secret: 76, and the hint says where the secret is.
        try s.writeConfig(table.replacingOccurrences(of: "%@", with: "wrong"))
        let again = s.tv("login", c.url, "--account", "second", limit: 60)
        XCTAssertEqual(again.status, 76, again.stderr)
        XCTAssertTrue(
            again.stderr.contains("[providers.conformance] in \(s.env["XDG_CONFIG_HOME"]!)/tokenvault/config.toml"),
            again.stderr)
        XCTAssertFalse(again.stderr.contains("providers.toml"), again.stderr)
    }

    // MARK: auth/resource-mismatch

    func testResourceMismatch() throws {
        let c = try start("resource-mismatch")
        let s = sandbox()
        let r = s.tv("login", c.url, limit: 60)
        XCTAssertEqual(r.status, 78, r.stderr)
        XCTAssertTrue(r.stderr.contains("describes another resource"), r.stderr)
        try assertPassed(c, [])
        XCTAssertEqual(try count(c, "authorization-request"), 0)
    }

    // MARK: 2025-03-26 back-compat (auth/2025-03-26-oauth-*)

    /// No resource metadata at all: the MCP server's origin is its authorization
    /// server, whose RFC 8414 metadata names endpoints elsewhere than the fallbacks.
    func testBackcompatOAuthMetadata() throws {
        try assertScenario(
            "2025-03-26-oauth-metadata-backcompat",
            ["authorization-server-metadata", "client-registration", "authorization-request", "token-request"])
    }

    /// No metadata of either kind: /authorize, /token and /register at the origin.
    func testBackcompatEndpointFallback() throws {
        let c = try start("2025-03-26-oauth-endpoint-fallback")
        let s = sandbox()
        let r = s.tv("login", c.url, "--verbose", limit: 60)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("no resource metadata"), r.stderr)
        XCTAssertTrue(r.stderr.contains("\(c.origin)/authorize"), r.stderr)
        assertCallsGoThrough(s, c.url)
        try assertPassed(c, ["client-registration", "authorization-request", "token-request", "authorization-pkce"])
    }

    /// A 401 and nothing else: the fallbacks find no server, and the error says so (78), naming what to configure.
    func testAResourceWithNoOAuthAtAllSaysSo() throws {
        let c = try start("no-oauth-at-all")
        let s = sandbox()
        let r = s.tv("login", c.url, limit: 60)
        XCTAssertEqual(r.status, 78, r.stderr)
        XCTAssertTrue(
            r.stderr.contains("publishes no resource metadata and its origin no authorization server metadata"),
            r.stderr)
        XCTAssertTrue(r.stderr.contains("hint: where it has an authorization server, add [providers.NAME]"), r.stderr)
        XCTAssertEqual(try count(c, "authorization-request"), 0)
    }
}
