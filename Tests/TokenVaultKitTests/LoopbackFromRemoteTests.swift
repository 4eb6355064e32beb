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
}
