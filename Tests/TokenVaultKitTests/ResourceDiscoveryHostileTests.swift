import Foundation
import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// The same, against servers that say the wrong things (scripted answers).
final class ResourceDiscoveryHostileTests: XCTestCase {
    let url = "https://mcp.example.com/a/mcp"

    func challenge(_ header: String?) -> Result<HTTPResponse, TokenVaultError> {
        var r = HTTPResponse(status: 401, contentType: "application/json", body: Data("{}".utf8))
        if let header { r.headers = [("www-authenticate", header)] }
        return .success(r)
    }

    func resourceDocument(_ resource: String) -> Result<HTTPResponse, TokenVaultError> {
        ScriptedTransport.json(
            #"{"resource":"\#(resource)","authorization_servers":["https://auth.example.com"],"scopes_supported":["a","b"]}"#
        )
    }

    func serverDocument(
        issuer: String = "https://auth.example.com", methods: String = #"["S256"]"#
    ) -> Result<HTTPResponse, TokenVaultError> {
        ScriptedTransport.json(
            #"{"issuer":"\#(issuer)","authorization_endpoint":"https://auth.example.com/authorize","token_endpoint":"https://auth.example.com/token","code_challenge_methods_supported":\#(methods)}"#
        )
    }

    func testTheChallengesScopeWinsAndWellKnownURLsStandInForAMissingHeader() throws {
        let t = ScriptedTransport([
            challenge(#"Bearer scope="a b c""#), ScriptedTransport.json("{}", status: 404), resourceDocument(url),
            serverDocument(),
        ])
        let server = try ResourceDiscovery.discover(url, transport: t)
        XCTAssertEqual(server.scopes, ["a", "b", "c"])
        XCTAssertEqual(server.registrationURL, nil)
        XCTAssertEqual(
            t.requests.map(\.url),
            [
                url, "https://mcp.example.com/.well-known/oauth-protected-resource/a/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
                "https://auth.example.com/.well-known/oauth-authorization-server",
            ])
    }

    func testWhatCannotBeBelievedStopsBeforeAnythingIsSent() {
        let meta = #"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/a/mcp""#
        let cases: [([Result<HTTPResponse, TokenVaultError>], String)] = [
            ([challenge(meta), resourceDocument("https://mcp.example.com/b/mcp")], "describes another resource"),
            (
                [challenge(meta), resourceDocument(url), serverDocument(methods: #"["plain"]"#)],
                "does not support PKCE with S256"
            ),
            (
                [challenge(meta), resourceDocument(url), serverDocument(methods: "null")],
                "does not support PKCE with S256"
            ),
            (
                [challenge(meta), resourceDocument(url), serverDocument(issuer: "https://evil.example")],
                "is for issuer https://evil.example"
            ),
            (
                [
                    .success(HTTPResponse(status: 200, body: Data())), ScriptedTransport.json("", status: 404),
                    ScriptedTransport.json("", status: 404),
                ],
                "does not say which authorization server protects it"
            ),
        ]
        for (answers, why) in cases {
            XCTAssertThrowsError(try ResourceDiscovery.discover(url, transport: ScriptedTransport(answers))) { error in
                let refusedByUs = why == "describes another resource" || why.contains("S256")
                XCTAssertEqual((error as? TokenVaultError)?.exitCode, refusedByUs ? 78 : 65, error.errorText)
                XCTAssertTrue(error.errorText.contains(why), error.errorText)
            }
        }
        XCTAssertThrowsError(
            try ResourceDiscovery.discover("http://mcp.example.com/mcp", transport: ScriptedTransport([]))
        ) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 64)
        }
    }
}
