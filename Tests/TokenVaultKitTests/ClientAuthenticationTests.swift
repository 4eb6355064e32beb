import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// How a client authenticates at the token endpoint (docs/providers.md,
/// "Which client, and how it authenticates"), and what a token endpoint's
/// refusal without words means: the behaviours of OpenID providers as they are.
final class ClientAuthenticationTests: XCTestCase {
    func testOneDecisionForTheMethod() {
        // A configured client_auth wins.
        XCTAssertEqual(
            ClientAuthChoice.decide(
                configured: "body", registered: "client_secret_basic", serverLists: ["client_secret_basic"],
                hasSecret: true), "body")
        // Else the registration's answer (RFC 7591 §3.2.1).
        XCTAssertEqual(
            ClientAuthChoice.decide(
                configured: nil, registered: "client_secret_basic", serverLists: ["client_secret_post"],
                hasSecret: true), "basic")
        XCTAssertEqual(
            ClientAuthChoice.decide(
                configured: nil, registered: "client_secret_post", serverLists: [], hasSecret: true),
            "body")
        // Else the server's list: Basic where listed, then the body; nothing listed: RFC 8414's default, Basic.
        XCTAssertEqual(
            ClientAuthChoice.decide(
                configured: nil, registered: nil, serverLists: ["client_secret_post", "client_secret_basic"],
                hasSecret: true), "basic")
        XCTAssertEqual(
            ClientAuthChoice.decide(
                configured: nil, registered: nil, serverLists: ["client_secret_post"], hasSecret: true),
            "body")
        XCTAssertEqual(
            ClientAuthChoice.decide(configured: nil, registered: nil, serverLists: [], hasSecret: true), "basic")
        // A client with a key signs an assertion where the server takes one; else as before.
        XCTAssertEqual(
            ClientAuthChoice.decide(
                configured: nil, registered: nil, serverLists: ["private_key_jwt"], hasSecret: false, hasKey: true),
            "private_key_jwt")
        XCTAssertNil(
            ClientAuthChoice.decide(
                configured: nil, registered: nil, serverLists: ["client_secret_basic"], hasSecret: false, hasKey: true))
        // No secret: no authentication, whatever is listed.
        XCTAssertNil(
            ClientAuthChoice.decide(
                configured: nil, registered: "client_secret_basic", serverLists: ["client_secret_basic"],
                hasSecret: false))
    }

    func testARegistrationKeepsItsMethod() throws {
        let r = try ClientRegistration.parse(
            [
                "client_id": .string("c1"), "client_secret": .string("s1"),
                "token_endpoint_auth_method": .string("client_secret_basic"),
            ], host: "as.example", issuer: "https://as.example", redirectURI: "http://127.0.0.1/callback", now: 1)
        XCTAssertEqual(r.tokenEndpointAuthMethod, "client_secret_basic")
        let back = try XCTUnwrap(ClientRegistration(record: try r.record(), issuer: "https://as.example"))
        XCTAssertEqual(back.tokenEndpointAuthMethod, "client_secret_basic", "kept in the backend")
        let odd = try ClientRegistration.parse(
            ["client_id": .string("c1"), "token_endpoint_auth_method": .string("tls_client_auth")], host: "as.example",
            issuer: "https://as.example", redirectURI: "http://127.0.0.1/callback", now: 1)
        XCTAssertNil(odd.tokenEndpointAuthMethod, "a method tokenvault does not speak is not taken")
    }

    func refresher(_ store: MemoryStore, _ answer: Result<HTTPResponse, TokenVaultError>) throws -> Refresher {
        let config = try Config.parse(
            """
            [providers.p]
            token_url = "http://127.0.0.1:9/token"
            revoke_url = "http://127.0.0.1:9/revoke"
            client_id = "cid"
            client_secret = "cs"
            """)
        return Refresher(
            vault: CredentialVault(store: store, runtimeDirectory: NSTemporaryDirectory() + "tv-ca-\(UUID())"),
            transport: ScriptedTransport([answer]), clock: TestClock(1_000),
            providers: ProviderTable(config: config), warn: { _ in })
    }

    /// A refresh answered 400 with an empty body (a server breaking a
    /// reused rotating chain this way) is the provider refusing: exit 4,
    /// and recorded, so no later get asks again.
    func testAnEmpty400ToARefreshIsARefusal() throws {
        let store = MemoryStore()
        let c = Credential(
            service: try ServiceKey(parsing: "api.p.example"), type: .oauth2, provider: "p", accessToken: "old",
            refreshToken: "r1", expiresAt: 10, updatedAt: 1)
        try store.save(c)
        let r = try refresher(store, .success(HTTPResponse(status: 400, contentType: nil, body: Data())))
        XCTAssertThrowsError(try r.usable(c.id, minValid: 60)) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 4, $0.errorText)
        }
        XCTAssertNotNil(try store.load(c.id)?.refusal, "the refusal is recorded")
        XCTAssertEqual(try store.load(c.id)?.refreshToken, "r1", "nothing else changed")
    }

    /// A revocation answered 401 without an OAuth error: the provider
    /// refuses this client (76), as the exit-status table says.
    func testARevocationAnswered401IsTheClientRefused() throws {
        let config = try Config.parse(
            """
            [providers.p]
            token_url = "http://127.0.0.1:9/token"
            revoke_url = "http://127.0.0.1:9/revoke"
            client_id = "cid"
            client_secret = "cs"
            """)
        let p = try OAuth2Provider.resolve("p", config: config, configPath: "c")
        let c = Credential(service: p.service, type: .oauth2, provider: "p", accessToken: "at", refreshToken: "rt")
        let t = ScriptedTransport([
            .success(HTTPResponse(status: 401, contentType: "text/plain", body: Data("no".utf8)))
        ])
        XCTAssertThrowsError(try Revocation.revoke(c, provider: p, transport: t)) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 76, $0.errorText)
        }
    }

    /// A client assertion's audience: the issuer identifier where the provider
    /// has one (the update to RFC 7523), else the token endpoint; `audience` sets another.
    func testAClientAssertionIsAudiencedToTheIssuer() throws {
        let config = try Config.parse(
            """
            [providers.byissuer]
            issuer = "https://as.example/tenant"
            token_url = "https://as.example/tenant/oauth/token"
            authorize_url = "https://as.example/tenant/oauth/authorize"
            client_id = "c"
            client_auth = "client_secret_jwt"
            client_secret = "s-0123456789abcdef0123456789abcdef"
            [providers.bytoken]
            token_url = "https://as.example/token"
            client_id = "c"
            client_auth = "client_secret_jwt"
            client_secret = "s-0123456789abcdef0123456789abcdef"
            [providers.chosen]
            issuer = "https://as.example"
            token_url = "https://as.example/token"
            authorize_url = "https://as.example/authorize"
            audience = "https://gateway.example"
            client_id = "c"
            client_auth = "client_secret_jwt"
            client_secret = "s-0123456789abcdef0123456789abcdef"
            """)
        for (name, aud) in [
            ("byissuer", "https://as.example/tenant"), ("bytoken", "https://as.example/token"),
            ("chosen", "https://gateway.example"),
        ] {
            let p = try OAuth2Provider.resolve(name, config: config, configPath: "c")
            let fields = try p.clientCredentials(now: 1000).fields
            let assertion = try XCTUnwrap(fields.first { $0.0 == "client_assertion" }?.1)
            XCTAssertEqual(JWT.claims(of: assertion)?["aud"], .string(aud), name)
            XCTAssertEqual(JWT.claims(of: assertion)?["iss"], .string("c"), name)
        }
    }
}
