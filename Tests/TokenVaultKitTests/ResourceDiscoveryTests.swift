import Foundation
import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// Discovering a protected resource's authorization server the way `login
/// URL` will, against a real MCP server: the official MCP Python SDK's
/// server with its own authorization-server routes (Tests/Fixtures/mcp_server.py,
/// in the SDK's venv that scripts/deps.sh makes).
final class ResourceDiscoveryTests: XCTestCase {
    nonisolated(unsafe) static var server: Process?
    nonisolated(unsafe) static var port = 0

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    override class func setUp() {
        let python = root.appendingPathComponent(".build/mcp-venv/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: python) else { return }
        (server, port) = FixtureServer.start(
            root.appendingPathComponent("Tests/Fixtures/mcp_server.py"), python: python)
    }

    override class func tearDown() {
        guard let server, server.isRunning else { return }
        server.terminate()
        server.waitUntilExit()
    }

    /// No venv or no server is a failure, never a skip.
    override func setUpWithError() throws {
        guard Self.server != nil, Self.port > 0 else {
            throw NSError(
                domain: "ResourceDiscoveryTests", code: 1,
                userInfo: [
                    NSLocalizedDescriptionKey:
                        "the MCP server did not start (its venv comes from scripts/deps.sh, which make test runs)"
                ])
        }
    }

    var base: String { "http://127.0.0.1:\(Self.port)" }
    var resource: String { base + "/mcp" }

    func testTheResourceNamesItsAuthorizationServerWhichRequiresS256() throws {
        let transport = CurlTransport(timeout: 10)
        // An MCP message without a token: 401, and the challenge names the metadata.
        let refused = try transport.send(
            HTTPRequest(
                url: resource,
                headers: ["Content-Type: application/json", "Accept: application/json, text/event-stream"],
                body: Data(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.utf8)))
        XCTAssertEqual(refused.status, 401)
        let challenge = try XCTUnwrap(refused.header("WWW-Authenticate").flatMap(AuthChallenge.bearer))
        let metadataURL = try XCTUnwrap(challenge.parameters["resource_metadata"])
        XCTAssertEqual(metadataURL, ProtectedResourceMetadata.wellKnownURLs(for: resource).first)
        // The resource's metadata, checked against the resource asked about.
        let document = try transport.send(HTTPRequest(method: "GET", url: metadataURL))
        let metadata = try ProtectedResourceMetadata.parse(document.body, for: resource)
        XCTAssertEqual(metadata.authorizationServers, [base])
        XCTAssertThrowsError(try ProtectedResourceMetadata.parse(document.body, for: base + "/other")) { error in
            XCTAssertEqual(
                (error as? TokenVaultError)?.exitCode, 78, "a document for another resource is never believed")
        }
        // The authorization server's metadata, at the RFC 8414 name Discovery already tries.
        let issuer = try XCTUnwrap(metadata.authorizationServers.first)
        var server: [String: JSONValue]?
        for url in Discovery.urls(issuer) {
            let r = try transport.send(HTTPRequest(method: "GET", url: url))
            if r.status == 200, case .object(let o)? = try? JSONDecoder().decode(JSONValue.self, from: r.body) {
                server = o
            }
        }
        let found = try XCTUnwrap(server)
        XCTAssertEqual(found["issuer"]?.string, issuer)
        XCTAssertEqual(found["code_challenge_methods_supported"], .array([.string("S256")]))
        XCTAssertEqual(found["registration_endpoint"]?.string, base + "/register")
    }

    func testTokenvaultRegistersAsANativePublicClientForItsRedirect() throws {
        let transport = CurlTransport(timeout: 10)
        let redirect = "http://127.0.0.1:53682/callback"
        let r = try ClientRegistration.register(
            at: base + "/register", issuer: base, redirectURI: redirect, scopes: ["files:read"], transport: transport,
            now: 1_800_000_000)
        XCTAssertFalse(r.clientID.isEmpty)
        XCTAssertNil(r.clientSecret, "a public client: PKCE, no secret")
        XCTAssertEqual(r.redirectURI, redirect)
        XCTAssertEqual(r.issuer, base)
        // What the server says of the registration: native, no secret, our redirect.
        let sent = try XCTUnwrap(
            String(data: Data(ClientRegistration.request(redirectURI: redirect, scopes: []).text.utf8), encoding: .utf8)
        )
        XCTAssertTrue(sent.contains(#""application_type":"native""#), sent)
        // Scopes the server does not know: its refusal, in its words (76).
        XCTAssertThrowsError(
            try ClientRegistration.register(
                at: base + "/register", issuer: base, redirectURI: redirect, scopes: ["admin"], transport: transport,
                now: 0)
        ) { error in
            XCTAssertEqual((error as? TokenVaultError)?.exitCode, 76)
            XCTAssertTrue(error.errorText.contains("invalid_client_metadata"), error.errorText)
        }
    }

    func testLoginByURLFindsEverythingFromTheURLAlone() throws {
        let server = try ResourceDiscovery.discover(resource, transport: CurlTransport(timeout: 10))
        XCTAssertEqual(
            server,
            ResourceServer(
                resource: resource, issuer: base, authorizeURL: base + "/authorize", tokenURL: base + "/token",
                registrationURL: base + "/register", revokeURL: base + "/revoke", scopes: ["files:read"],
                scopesSupported: ["files:read"]))
    }
}

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
