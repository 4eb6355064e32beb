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
        try s.writeConfig(
            """
            [providers.machine]
            issuer = "\(c.origin)"
            grant = "client_credentials"
            client_id = "conformance-test-client"
            \(secret)
            """)
        login(s, c, file: file, line: line)
        assertCallsGoThrough(s, c.url, file: file, line: line)
        return s
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
