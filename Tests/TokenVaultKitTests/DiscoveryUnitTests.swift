import Foundation
import XCTest

@testable import TokenVaultKit

/// Answers from a table by URL, counting the requests.
final class URLTableTransport: HTTPTransport, @unchecked Sendable {
    var answers: [String: Result<HTTPResponse, TokenVaultError>]
    var asked: [String] = []
    init(_ answers: [String: Result<HTTPResponse, TokenVaultError>]) { self.answers = answers }
    func send(_ request: HTTPRequest) throws -> HTTPResponse {
        asked.append(request.url)
        return try (answers[request.url] ?? .success(HTTPResponse(status: 404, body: Data()))).get()
    }
}

final class DiscoveryUnitTests: XCTestCase {
    var dir: String!
    override func setUp() { dir = NSTemporaryDirectory() + "tv-disc-" + UUID().uuidString.prefix(8) }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func document(
        _ issuer: String, token: String? = "https://idp.example/token"
    ) -> Result<HTTPResponse, TokenVaultError> {
        var o: [String: Any] = ["issuer": issuer, "authorization_endpoint": "https://idp.example/auth"]
        if let token { o["token_endpoint"] = token }
        return .success(
            HTTPResponse(
                status: 200, contentType: "application/json", body: try! JSONSerialization.data(withJSONObject: o)))
    }

    func testWellKnownAddresses() {
        XCTAssertEqual(
            Discovery.urls("https://idp.example/realms/ops/"),
            [
                "https://idp.example/realms/ops/.well-known/openid-configuration",
                "https://idp.example/.well-known/oauth-authorization-server/realms/ops",
            ])
        XCTAssertEqual(
            Discovery.urls("https://idp.example"),
            [
                "https://idp.example/.well-known/openid-configuration",
                "https://idp.example/.well-known/oauth-authorization-server",
            ])
    }

    func testTheIssuerMustMatchAllowingEntraIDsTenantPlaceholder() {
        XCTAssertTrue(Discovery.issuerMatches("https://idp.example/x", configured: "https://idp.example/x"))
        XCTAssertFalse(Discovery.issuerMatches("https://idp.example/x/", configured: "https://idp.example/x"))
        let entra = "https://login.microsoftonline.com/{tenantid}/v2.0"
        XCTAssertTrue(Discovery.issuerMatches(entra, configured: "https://login.microsoftonline.com/common/v2.0"))
        XCTAssertTrue(
            Discovery.issuerMatches(
                entra, configured: "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0"))
        XCTAssertFalse(
            Discovery.issuerMatches(entra, configured: "https://login.microsoftonline.com/a/b/v2.0"), "one segment only"
        )
        XCTAssertFalse(Discovery.issuerMatches(entra, configured: "https://login.microsoftonline.com//v2.0"))
        XCTAssertFalse(Discovery.issuerMatches(entra, configured: "https://evil.example/common/v2.0"))
    }

    func testCachedForADayThenFetchedAgainAndAStaleCopyStandsInWhenTheIssuerIsAway() throws {
        let issuer = "https://idp.example/realms/ops"
        let transport = URLTableTransport([issuer + "/.well-known/openid-configuration": document(issuer)])
        var warnings: [String] = []
        func discovery(at now: Int64) -> Discovery {
            Discovery(cacheDirectory: dir, transport: transport, now: now, warn: { warnings.append($0) })
        }
        XCTAssertEqual(
            try discovery(at: 1000).endpoints(issuer: issuer, provider: "ops")["token_url"], "https://idp.example/token"
        )
        XCTAssertEqual(
            try discovery(at: 1000 + 86399).endpoints(issuer: issuer, provider: "ops")["authorize_url"],
            "https://idp.example/auth")
        XCTAssertEqual(transport.asked.count, 1, "cached")
        _ = try discovery(at: 1000 + 86400).endpoints(issuer: issuer, provider: "ops")
        XCTAssertEqual(transport.asked.count, 2, "stale: fetched again")
        var st = stat()
        XCTAssertEqual(stat(dir, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o700)
        // The issuer cannot be reached: the stale copy, with a warning.
        transport.answers[issuer + "/.well-known/openid-configuration"] = .failure(
            .temporary("cannot reach idp.example"))
        XCTAssertEqual(
            try discovery(at: 1000 + 3 * 86400).endpoints(issuer: issuer, provider: "ops")["token_url"],
            "https://idp.example/token")
        XCTAssertEqual(warnings.count, 1)
        // Forgotten (an endpoint failed): nothing to stand in.
        discovery(at: 0).forget(issuer: issuer)
        XCTAssertThrowsError(try discovery(at: 1000 + 3 * 86400).endpoints(issuer: issuer, provider: "ops")) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 75)
        }
    }

    func testDocumentsThatCannotBeUsed() {
        let issuer = "https://idp.example"
        func code(_ answer: Result<HTTPResponse, TokenVaultError>) -> Int32? {
            let t = URLTableTransport([issuer + "/.well-known/openid-configuration": answer])
            do {
                _ = try Discovery(cacheDirectory: dir, transport: t, now: 0, warn: { _ in }).endpoints(
                    issuer: issuer, provider: "p")
                return 0
            } catch {
                return (error as? TokenVaultError)?.exitCode
            }
        }
        XCTAssertEqual(code(document("https://other.example")), 78, "issuer mismatch")
        XCTAssertEqual(code(document(issuer, token: nil)), 65, "no token endpoint")
        XCTAssertEqual(code(.success(HTTPResponse(status: 200, body: Data("<html>".utf8)))), 65)
        XCTAssertEqual(code(.success(HTTPResponse(status: 503, body: Data()))), 75)
        XCTAssertEqual(code(document(issuer)), 0)
    }

    func testResolveFillsOnlyWhatIsNotSetAndChecksWhatItFills() throws {
        let config = try Config.parse(
            """
            [providers.ops]
            issuer = "https://idp.example/realms/ops"
            client_id = "cli"
            authorize_url = "https://idp.example/mine"
            """)
        let p = try OAuth2Provider.resolve("ops", config: config, configPath: "c") { _, _ in
            ["authorize_url": "https://idp.example/theirs", "token_url": "https://idp.example/token"]
        }
        XCTAssertEqual(p.authorizeURL, "https://idp.example/mine")
        XCTAssertEqual(p.tokenURL, "https://idp.example/token")
        XCTAssertEqual(p.scopes, ["openid"])
        XCTAssertEqual(p.service.description, "idp.example", "from the issuer, not a discovered endpoint")
        XCTAssertThrowsError(
            try OAuth2Provider.resolve("ops", config: config, configPath: "c") { _, _ in
                ["token_url": "http://idp.example/token"]
            }
        ) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 78, "a discovered plain-http endpoint off loopback")
        }
    }
}
