import XCTest

@testable import TokenVaultKit

/// RFC 9110's challenge grammar, as protected resources (RFC 9728) and
/// bearer-token servers (RFC 6750) write it, and as they should not.
final class WWWAuthenticateTests: XCTestCase {
    func testAProtectedResourceNamesItsMetadata() {
        let header =
            #"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read files:write""#
        XCTAssertEqual(
            AuthChallenge.bearer(header),
            AuthChallenge(
                scheme: "bearer",
                parameters: [
                    "resource_metadata": "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
                    "scope": "files:read files:write",
                ]))
    }

    func testSeveralChallengesTokensEscapesAndCase() {
        let header =
            #"Basic realm="a \"quoted\" realm", BEARER Error=insufficient_scope ,scope="x y", error_description="need \\ more", Negotiate abc123=="#
        XCTAssertEqual(
            AuthChallenge.parse(header),
            [
                AuthChallenge(scheme: "basic", parameters: ["realm": #"a "quoted" realm"#]),
                AuthChallenge(
                    scheme: "bearer",
                    parameters: ["error": "insufficient_scope", "scope": "x y", "error_description": #"need \ more"#]),
                AuthChallenge(scheme: "negotiate", token68: "abc123=="),
            ])
        XCTAssertEqual(AuthChallenge.parse("Bearer"), [AuthChallenge(scheme: "bearer")])
    }

    func testWhatCannotBeReadEndsTheListInsteadOfGuessing() {
        XCTAssertEqual(AuthChallenge.parse(""), [])
        XCTAssertEqual(AuthChallenge.parse(#"Bearer realm="never closed"#), [AuthChallenge(scheme: "bearer")])
        XCTAssertEqual(
            AuthChallenge.parse("Bearer scope=, Basic"),
            [
                AuthChallenge(scheme: "bearer", token68: "scope="), AuthChallenge(scheme: "basic"),
            ])
        XCTAssertNil(AuthChallenge.bearer(#"Basic realm="x""#))
    }
}
