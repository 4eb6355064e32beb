import Foundation
import XCTest

/// The conformance suite's issuer scenarios (auth/iss-*, auth/metadata-issuer-mismatch:
/// RFC 9207 and RFC 8414 §3.3, SEP-2468) and the move to another
/// authorization server (auth/authorization-server-migration, SEP-2352).
final class ConformanceIssuerTests: ConformanceTestCase {
    func testIssSupported() throws {
        try assertScenario("iss-supported", ["sep-2468-client-compare-iss-supported"])
    }

    func testIssNotAdvertised() throws {
        try assertScenario("iss-not-advertised", ["sep-2468-client-proceed-no-iss"])
    }

    /// Each of these redirects is refused as a mix-up: nothing exchanged, nothing stored.
    func testAnIssThatDoesNotMatchIsRefused() throws {
        for (scenario, check) in [
            ("iss-supported-missing", "sep-2468-client-reject-missing-iss"),
            ("iss-wrong-issuer", "sep-2468-client-compare-iss-supported"),
            ("iss-unexpected", "sep-2468-client-compare-iss-unadvertised"),
            ("iss-normalized", "sep-2468-client-no-normalization"),
        ] {
            let c = try start(scenario)
            let s = sandbox()
            let r = s.tv("login", c.url, limit: 60)
            XCTAssertEqual(r.status, 65, "\(scenario): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("mix-up"), "\(scenario): \(r.stderr)")
            XCTAssertEqual(s.tv("get", c.url).status, 3, "\(scenario): nothing stored")
            try assertPassed(c, [check])
        }
    }

    /// Metadata that names another issuer than the one it was fetched for: none of its endpoints is used.
    func testMetadataIssuerMismatch() throws {
        let c = try start("metadata-issuer-mismatch")
        let s = sandbox()
        let r = s.tv("login", c.url, limit: 60)
        XCTAssertEqual(r.status, 65, r.stderr)
        XCTAssertTrue(r.stderr.contains("nothing was sent"), r.stderr)
        try assertPassed(c, ["sep-2468-client-validate-metadata-issuer"])
    }

    /// The resource names a second authorization server once the first call
    /// went through: the next call's 401 (after a renewal the resource still
    /// refuses) leads the bridge to a login there, with a registration of its
    /// own; the first server's client id never reaches the second.
    func testAuthorizationServerMigration() throws {
        let c = try start("authorization-server-migration")
        let s = sandbox()
        login(s, c)
        assertCallsGoThrough(s, c.url)
        try assertPassed(
            c,
            [
                "sep-2352-reregister-on-as-change", "sep-2352-no-reuse-on-as-change",
                "sep-2352-no-cross-as-credential-reuse",
            ])
        XCTAssertEqual(try count(c, "client-registration"), 2, "one registration at each server")
    }
}
