import Foundation
import XCTest

/// The conformance suite's scope scenarios (auth/scope-*, SEP-2350) and
/// offline_access ones (auth/offline-access-*, SEP-2207).
final class ConformanceScopeTests: ConformanceTestCase {
    func testScopeFromWWWAuthenticate() throws {
        try assertScenario("scope-from-www-authenticate", ["scope-from-www-authenticate"])
    }

    func testScopeFromScopesSupported() throws {
        try assertScenario("scope-from-scopes-supported", ["scope-from-scopes-supported"])
    }

    func testScopeOmittedWhenUndefined() throws {
        try assertScenario("scope-omitted-when-undefined", ["scope-omitted-when-undefined"])
    }

    /// The 401 asks for mcp:basic, a call's 403 for mcp:write: the bridge logs
    /// in for both (the union) and the retried call goes through.
    func testScopeStepUp() throws {
        try assertScenario(
            "scope-step-up", ["scope-step-up-initial", "scope-step-up-escalation", "sep-2350-scope-union-on-reauth"])
    }

    /// A server that asks again and again for a scope the grant holds: no
    /// login that could not help, and at most 3 authorizations in all.
    func testScopeRetryLimit() throws {
        let c = try start("scope-retry-limit")
        let s = sandbox()
        login(s, c)
        for (era, lines) in Self.eras {
            let (answer, stderr) = call(s, c.url, lines)
            let error = answer?["error"] as? [String: Any]
            XCTAssertEqual(error?["code"] as? Int, -32003, "\(era): \(answer ?? [:]) \(stderr)")
        }
        try assertPassed(c, ["scope-retry-limit"])
        XCTAssertEqual(try count(c, "scope-retry-auth-attempt"), 1, "the login alone authorized")
    }

    func testOfflineAccessScope() throws {
        try assertScenario(
            "offline-access-scope", ["sep-2207-offline-access-requested", "sep-2207-client-metadata-grant-types"])
    }

    func testOfflineAccessNotSupported() throws {
        try assertScenario("offline-access-not-supported", ["sep-2207-offline-access-not-requested"])
    }
}
