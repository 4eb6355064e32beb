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
        var expected = ResourceServer(
            resource: resource, issuer: base, authorizeURL: base + "/authorize", tokenURL: base + "/token",
            registrationURL: base + "/register", revokeURL: base + "/revoke", scopes: ["files:read"],
            scopesSupported: ["files:read"])
        // The SDK's server lists how its clients may authenticate (RFC 8414).
        XCTAssertTrue(server.tokenEndpointAuthMethods.contains("client_secret_post"), "\(server)")
        expected.tokenEndpointAuthMethods = server.tokenEndpointAuthMethods
        XCTAssertEqual(server, expected)
    }
}
