import Foundation
import XCTest

@testable import TokenVaultKit

/// A remote resource cannot send tokenvault to a port of this machine over
/// plain http: not its metadata, not its authorization server, not that
/// server's endpoints (docs/security.md). A resource on loopback may.
final class LoopbackFromRemoteTests: XCTestCase {
    func json(
        _ o: [String: Any], status: Int = 200, headers: [(String, String)] = []
    ) -> Result<
        HTTPResponse, TokenVaultError
    > {
        var r = HTTPResponse(
            status: status, contentType: "application/json", body: try! JSONSerialization.data(withJSONObject: o))
        r.headers = headers.map { (name: $0.0.lowercased(), value: $0.1) }
        return .success(r)
    }

    func testARemoteResourceCannotLeadToPlainHTTPOnLoopback() throws {
        let remote = "https://mcp.example.com/mcp"
        // The 401 names metadata on loopback: never asked for.
        let pointsHome = URLTableTransport([
            remote: json(
                ["error": "invalid_token"], status: 401,
                headers: [("WWW-Authenticate", #"Bearer resource_metadata="http://127.0.0.1:9/.well-known/x""#)])
        ])
        XCTAssertThrowsError(try ResourceDiscovery.discover(remote, transport: pointsHome)) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 65, $0.errorText)
        }
        XCTAssertFalse(pointsHome.asked.contains { $0.hasPrefix("http://") }, "\(pointsHome.asked)")
        // Its metadata names an authorization server on loopback.
        let metadata = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        let serverHome = URLTableTransport([
            remote: json([:], status: 401),
            metadata: json(["resource": remote, "authorization_servers": ["http://localhost:8080"]]),
        ])
        XCTAssertThrowsError(try ResourceDiscovery.discover(remote, transport: serverHome)) {
            XCTAssertTrue($0.errorText.contains("not an https URL"), $0.errorText)
        }
        XCTAssertFalse(serverHome.asked.contains { $0.hasPrefix("http://") }, "\(serverHome.asked)")
        // Its authorization server's registration endpoint is on loopback.
        let issuer = "https://auth.example.com"
        let endpointsHome = URLTableTransport([
            remote: json([:], status: 401),
            metadata: json(["resource": remote, "authorization_servers": [issuer]]),
            issuer + "/.well-known/oauth-authorization-server": json([
                "issuer": issuer, "authorization_endpoint": issuer + "/authorize", "token_endpoint": issuer + "/token",
                "registration_endpoint": "http://127.0.0.1:9/register", "code_challenge_methods_supported": ["S256"],
            ]),
        ])
        XCTAssertThrowsError(try ResourceDiscovery.discover(remote, transport: endpointsHome)) {
            XCTAssertTrue($0.errorText.contains("registration_endpoint that is not an https URL"), $0.errorText)
        }
        // The same server is fine for a resource on loopback.
        XCTAssertTrue(
            OAuth2Provider.isSafeEndpoint("http://127.0.0.1:9/register", reachedFrom: "http://127.0.0.1:8/mcp"))
        XCTAssertFalse(OAuth2Provider.isSafeEndpoint("http://127.0.0.1:9/register", reachedFrom: remote))
        XCTAssertTrue(OAuth2Provider.isSafeEndpoint("https://auth.example.com/x", reachedFrom: remote))
    }

    /// The rule holds over https too: a remote resource's authorization
    /// server or endpoints at `https://localhost:PORT` (or any spelling of
    /// this machine) are refused before anything is asked of them.
    func testARemoteResourceCannotLeadToThisMachineOverHTTPSEither() throws {
        let remote = "https://mcp.example.com/mcp"
        for home in [
            "https://localhost:8443", "https://127.0.0.1:8443", "https://127.1:8443", "https://[::1]:8443",
            "https://2130706433:8443", "https://app.localhost", "https://0.0.0.0:8443", "https://[::ffff:127.0.0.1]",
        ] {
            XCTAssertFalse(OAuth2Provider.isSafeEndpoint(home + "/x", reachedFrom: remote), home)
            XCTAssertTrue(OAuth2Provider.isSafeEndpoint(home + "/x", reachedFrom: "http://127.0.0.1:8/mcp"), home)
        }
        let metadata = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        let serverHome = URLTableTransport([
            remote: json([:], status: 401),
            metadata: json(["resource": remote, "authorization_servers": ["https://localhost:8443"]]),
        ])
        XCTAssertThrowsError(try ResourceDiscovery.discover(remote, transport: serverHome)) {
            XCTAssertTrue($0.errorText.contains("on this machine"), $0.errorText)
        }
        XCTAssertFalse(serverHome.asked.contains { $0.contains("localhost") }, "\(serverHome.asked)")
    }

    /// RFC 7592's management URI is kept only on the registration endpoint's
    /// origin: a server cannot have each login GET, and `delete` DELETE,
    /// another host or a port of this machine with a token of its choosing.
    func testARegistrationIsManagedOnlyAtItsEndpointsOrigin() throws {
        let issuer = "https://auth.example.com"
        func kept(_ uri: String) throws -> String? {
            try ClientRegistration.parse(
                [
                    "client_id": .string("c1"), "registration_access_token": .string("rat"),
                    "registration_client_uri": .string(uri),
                ], host: "auth.example.com", issuer: issuer, endpoint: issuer + "/register",
                redirectURI: "http://127.0.0.1/callback", now: 1
            ).registrationClientURI
        }
        XCTAssertEqual(try kept(issuer + "/register/c1"), issuer + "/register/c1")
        XCTAssertNil(try kept("https://other.example.com/register/c1"))
        XCTAssertNil(try kept("https://localhost:8443/register/c1"))
        XCTAssertNil(try kept("http://auth.example.com/register/c1"), "another scheme is another origin")
    }
}
