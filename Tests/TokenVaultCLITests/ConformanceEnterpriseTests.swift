import Foundation
import TokenVaultKit
import XCTest

/// The conformance suite's enterprise-managed authorization scenarios
/// (SEP-990: auth/enterprise-managed-authorization and its refresh-token
/// variant, ported in Tests/Fixtures/conformance_ema.py): the person's one
/// login to the enterprise IdP, stored under its provider, is traded at the
/// IdP for an ID-JAG, which the MCP server's authorization server takes with
/// the jwt-bearer grant; no browser opens for the resource. Renewal trades
/// again, renewing the IdP login first when its ID token has expired.
final class ConformanceEnterpriseTests: ConformanceTestCase {
    /// The scenario, and the directory the IdP's logins were written to.
    func started(_ name: String = "enterprise-managed-authorization") throws -> (Scenario, String) {
        let dir = NSTemporaryDirectory() + "tv-ema-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return (try start(name, ["--ema-out", dir]), dir)
    }

    /// A sandbox with the IdP's provider (`corp`) holding `login` and the
    /// resource's (`enterprise`, grant = "id_jag") for the scenario's AS.
    func enterprise(
        _ c: Scenario, _ dir: String, login: String = "idp-login", idpTable: String = "",
        table: String = #"grant = "id_jag""# + "\n" + #"idp = "corp""#
    ) throws -> Sandbox {
        let s = sandbox()
        s.env["BROWSER"] = "/bin/false"
        try s.writeConfig(
            """
            [providers.corp]
            service = "idp.corp.example"
            issuer = "\(c.origin)/idp"
            client_id = "conformance-test-idp-client"
            scopes = ["openid"]
            \(idpTable)

            [providers.enterprise]
            issuer = "\(c.origin)"
            client_id = "conformance-test-xaa-client"
            client_secret = "conformance-test-xaa-secret"
            resources = ["\(c.url)"]
            \(table)
            """)
        let held = try String(contentsOfFile: "\(dir)/\(login).json", encoding: .utf8)
        let stored = s.tv("set", "idp.corp.example", "--provider", "corp", stdin: held)
        XCTAssertEqual(stored.status, 0, stored.stderr)
        return s
    }

    /// How many times check `id` passed (a verdict computed at the end may add a failure of the same id).
    func passes(_ c: Scenario, _ id: String) throws -> Int {
        try checks(c).filter { $0["id"] as? String == id && $0["status"] as? String == "SUCCESS" }.count
    }

    func testEnterpriseManagedAuthorization() throws {
        let (c, dir) = try started()
        let s = try enterprise(c, dir)
        login(s, c)
        assertCallsGoThrough(s, c.url)
        try assertPassed(c, ["complete-flow-token-exchange", "complete-flow-jwt-bearer"])
        XCTAssertEqual(try count(c, "authorization-request"), 0, "no browser login at the resource")
        // A table of its own, logged in to by name: the same grant.
        let config = s.env["XDG_CONFIG_HOME"]! + "/tokenvault/config.toml"
        try s.writeConfig(
            try String(contentsOfFile: config, encoding: .utf8) + """

                [providers.notes]
                service = "notes.corp.example"
                issuer = "\(c.origin)"
                grant = "id_jag"
                idp = "corp"
                client_id = "conformance-test-xaa-client"
                client_secret = "conformance-test-xaa-secret"
                client_auth = "basic"
                resource = "\(c.url)"
                """)
        s.expect("login", "notes", stderr: ["notes.corp.example"])
        XCTAssertTrue(s.tv("get", "notes").out.hasPrefix("at-"))
        XCTAssertEqual(try passes(c, "complete-flow-jwt-bearer"), 2)
    }

    /// The resource's token expired: traded again, once for 20 concurrent
    /// `get`s. The IdP login's ID token expired too: the IdP login is renewed
    /// first (its refresh token), then traded. The IdP refusing that renewal
    /// is a login to the IdP, and what is stored stays.
    func testRenewalTradesAgainAndRenewsTheIdPLoginFirst() throws {
        let (c, dir) = try started()
        let s = try enterprise(c, dir)
        login(s, c)
        let first = s.tv("get", c.url).out
        try s.expireStored(c.url)
        let runs = s.concurrently(20, "get", c.url)
        XCTAssertEqual(runs.filter { $0.status != 0 }.map(\.stderr), [])
        XCTAssertEqual(Swift.Set(runs.map(\.out)).count, 1, "all 20 print the same token")
        XCTAssertNotEqual(runs.first?.out, first)
        XCTAssertEqual(try passes(c, "complete-flow-token-exchange"), 2, "one exchange for 20 readers")
        XCTAssertEqual(try passes(c, "complete-flow-jwt-bearer"), 2)
        // The ID token has expired (the IdP's access token has not): renewed at the IdP first.
        let stale = try String(contentsOfFile: "\(dir)/idp-login-stale.json", encoding: .utf8)
        XCTAssertEqual(s.tv("set", "idp.corp.example", "--provider", "corp", stdin: stale).status, 0)
        try s.expireStored(c.url)
        let renewed = s.tv("get", c.url)
        XCTAssertEqual(renewed.status, 0, renewed.stderr)
        XCTAssertEqual(try count(c, "idp-refresh"), 1, "the IdP login renewed once")
        XCTAssertEqual(try passes(c, "complete-flow-token-exchange"), 3)
        assertCallsGoThrough(s, c.url)
        try assertPassed(c, ["complete-flow-token-exchange", "complete-flow-jwt-bearer"])
        // The IdP refuses the renewal (its refresh token is unknown now): a login to the IdP.
        XCTAssertEqual(s.tv("set", "idp.corp.example", "--provider", "corp", stdin: stale).status, 0)
        let kept = try s.expireStored(c.url)
        let refused = s.tv("get", c.url)
        XCTAssertEqual(refused.status, 4, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("tokenvault login corp"), refused.stderr)
        XCTAssertEqual(try passes(c, "complete-flow-token-exchange"), 3, "nothing traded with an expired ID token")
        XCTAssertTrue(
            s.tv("get", c.url, "--no-refresh", "--format", "json").stdout.contains("\"\(kept)\""),
            "what is stored is untouched")
    }

    /// No IdP login stored: one error naming the login to run, nothing sent.
    func testWithoutAnIdPLoginNothingIsSent() throws {
        let (c, dir) = try started()
        let s = try enterprise(c, dir)
        XCTAssertEqual(s.tv("delete", "idp.corp.example").status, 0)
        let r = s.tv("login", c.url, limit: 60)
        XCTAssertEqual(r.status, 4, r.stderr)
        XCTAssertTrue(r.stderr.contains("through your login to corp, and none is stored"), r.stderr)
        XCTAssertTrue(r.stderr.contains("hint: run: tokenvault login corp"), r.stderr)
        XCTAssertEqual(try passes(c, "complete-flow-token-exchange"), 0)
        XCTAssertEqual(try count(c, "authorization-request"), 0, "no browser login instead")
    }

    /// Not the suite's: a `token_exchange` table whose subject is the IdP
    /// login's ID token, traded at the resource's own authorization server;
    /// login by URL and the bridge use it, as they use an `id_jag` table.
    func testATokenExchangeTableServesTheBridge() throws {
        let (c, dir) = try started("token-exchange")
        let s = try enterprise(
            c, dir,
            table: """
                grant = "token_exchange"
                subject_provider = "corp"
                subject_token_type = "id_token"
                """)
        login(s, c)
        assertCallsGoThrough(s, c.url)
        try s.expireStored(c.url)
        assertCallsGoThrough(s, c.url)
        XCTAssertEqual(try passes(c, "token-exchange-grant"), 2, "traded again once expired")
        try assertPassed(c, ["token-exchange-grant"])
    }

    /// The refresh-token variant: the IdP login's refresh token is the
    /// subject, exchanged by the client it was issued to (authenticated), for
    /// scopes within its own; the MCP server is reached with the token.
    func testEnterpriseManagedAuthorizationRefreshToken() throws {
        let (c, dir) = try started("enterprise-managed-authorization-refresh-token")
        let s = try enterprise(
            c, dir, idpTable: #"client_secret = "conformance-test-idp-secret""#,
            table: """
                grant = "id_jag"
                idp = "corp"
                subject_token_type = "refresh_token"
                scopes = ["mcp:read"]
                """)
        login(s, c)
        assertCallsGoThrough(s, c.url)
        try assertPassed(
            c,
            [
                "complete-flow-token-exchange", "complete-flow-jwt-bearer", "refresh-token-client-binding",
                "refresh-token-scope-narrowing", "complete-flow-mcp-access",
            ])
        XCTAssertFalse(s.tv("status", c.url).stdout.isEmpty)
    }
}
