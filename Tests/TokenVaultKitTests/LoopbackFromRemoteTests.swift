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

    /// The provider a login, refresh, revocation, PAR or userinfo uses is
    /// held to the same rule as the discovery that found it, whichever
    /// document or cache each endpoint came from: the OpenID document (asked
    /// first, cached a day) or providers.toml itself.
    func testEveryEndpointOfAResourcesProviderIsHeldToTheRule() throws {
        let remote = "https://mcp.example.com/mcp", issuer = "https://auth.example.com"
        let config = try Config.parse(
            """
            [providers.r]
            issuer = "\(issuer)"
            resource = "\(remote)"
            client_id = "c1"
            """, path: "providers.toml")
        let safe = [
            "authorize_url": issuer + "/authorize", "token_url": issuer + "/token",
            "revoke_url": issuer + "/revoke", "userinfo_url": issuer + "/userinfo", "par_url": issuer + "/par",
        ]
        XCTAssertNoThrow(try OAuth2Provider.resolve("r", config: config, configPath: "c.toml") { _, _ in safe })
        for key in safe.keys.sorted() {
            for home in ["http://127.0.0.1:9/x", "https://localhost:8443/x"] {
                var found = safe
                found[key] = home
                XCTAssertThrowsError(
                    try OAuth2Provider.resolve("r", config: config, configPath: "c.toml") { _, _ in found }, key
                ) {
                    XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 65, $0.errorText)
                    XCTAssertTrue($0.errorText.contains("names \(key)"), $0.errorText)
                }
            }
        }
        // Written into the table itself (providers.toml edited, or kept from before): the same.
        var table = config
        table.providers["r"]?.token_url = "http://127.0.0.1:9/token"
        XCTAssertThrowsError(try OAuth2Provider.resolve("r", config: table, configPath: "c.toml") { _, _ in safe })
        // A resource on loopback may use its own machine.
        var local = config
        local.providers["r"]?.resource = "http://127.0.0.1:8/mcp"
        var home = safe
        home["token_url"] = "http://127.0.0.1:9/token"
        XCTAssertNoThrow(try OAuth2Provider.resolve("r", config: local, configPath: "c.toml") { _, _ in home })
    }
}
