import Foundation
import XCTest

/// The conformance suite's workload identity scenario (SEP-1933,
/// auth/wif-jwt-bearer, ported in Tests/Fixtures/conformance_server.py): a
/// provider of config.toml for the resource's authorization server with
/// `grant = "jwt_bearer"` and the workload's JWT in `assertion_file` logs in
/// to the resource's URL with no user, no browser and no client
/// authentication; an assertion the server refuses is surfaced, never
/// retried and never traded for another grant.
final class ConformanceWorkloadTests: ConformanceTestCase {
    /// The scenario, and the directory its three workload JWTs were written to.
    func started() throws -> (Scenario, String) {
        let dir = NSTemporaryDirectory() + "tv-wif-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return (try start("wif-jwt-bearer", ["--wif-out", dir]), dir)
    }

    func workload(_ c: Scenario, assertion: String) -> Sandbox {
        let s = sandbox()
        s.env["BROWSER"] = "/bin/false"
        try? s.writeConfig(
            """
            [providers.workload]
            issuer = "\(c.origin)"
            grant = "jwt_bearer"
            assertion_file = "\(assertion)"
            resources = ["\(c.url)"]
            """)
        return s
    }

    func testWifJwtBearer() throws {
        let (c, dir) = try started()
        let s = workload(c, assertion: dir + "/valid.jwt")
        login(s, c)
        assertCallsGoThrough(s, c.url)
        try assertPassed(c, ["wif-assertion-verified"])
    }

    /// Refused by the server (the wrong audience): exit 4 with the server's
    /// words, one token request, no retry and no other grant.
    func testARefusedAssertionIsSurfacedNeverRetried() throws {
        let (c, dir) = try started()
        let s = workload(c, assertion: dir + "/wrong-audience.jwt")
        let r = s.tv("login", c.url, limit: 60)
        XCTAssertEqual(r.status, 4, r.stderr)
        XCTAssertTrue(r.stderr.contains("invalid_grant"), r.stderr)
        XCTAssertEqual(try count(c, "wif-assertion-audience"), 1)
        XCTAssertEqual(try count(c, "wif-no-retry"), 0, "no second request")
        XCTAssertEqual(try count(c, "wif-grant-fallback"), 0, "no other grant")
        // A bridged call asks no more of the server than the login did.
        _ = s.run(["get", c.url])
        XCTAssertEqual(try count(c, "wif-no-retry") + (try count(c, "wif-grant-fallback")), 0)
    }

    /// Expired: refused here, before anything is sent.
    func testAnExpiredAssertionIsNeverSent() throws {
        let (c, dir) = try started()
        let s = workload(c, assertion: dir + "/expired.jwt")
        let r = s.tv("login", c.url, limit: 60)
        XCTAssertEqual(r.status, 75, r.stderr)
        XCTAssertTrue(r.stderr.contains("expired"), r.stderr)
        XCTAssertEqual(try count(c, "wif-assertion-expired"), 0, "the server never saw it")
        XCTAssertEqual(try count(c, "wif-assertion-verified"), 1, "the suite's verdict: no token request was made")
    }
}
