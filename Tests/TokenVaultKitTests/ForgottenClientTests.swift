import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// `invalid_client` for a client tokenvault registered itself: asked once
/// more before the registration counts as forgotten (one answer can be a
/// blip), and nothing is dropped when it does.
final class ForgottenClientTests: XCTestCase {
    let id = CredentialID(service: try! ServiceKey(resource: "https://mcp.example.com/mcp"))
    let issuer = "https://auth.example.com"
    var runtime: String!

    override func setUp() { runtime = NSTemporaryDirectory() + "tv-forgot-" + UUID().uuidString.prefix(8) }
    override func tearDown() { try? FileManager.default.removeItem(atPath: runtime) }

    func refresher(_ store: MemoryStore, _ t: ScriptedTransport, registered: Bool) -> Refresher {
        let config = try! Config.parse(
            """
            [providers.res]
            issuer = "\(issuer)"
            authorize_url = "\(issuer)/authorize"
            token_url = "\(issuer)/token"
            client_id = "client-1"
            resource = "https://mcp.example.com/mcp"
            """)
        var r = Refresher(
            vault: CredentialVault(store: store, runtimeDirectory: runtime), transport: t, clock: FixedClock(1_000),
            providers: ProviderTable { name in
                var p = try OAuth2Provider.resolve(name, config: config, configPath: "c")
                p.registeredClient = registered
                return p
            }, warn: { _ in })
        r.invalidClientPause = 0
        return r
    }

    func stored(_ store: MemoryStore) throws {
        var c = Credential(
            service: id.service, type: .oauth2, provider: "res", accessToken: "old", refreshToken: "r1",
            expiresAt: 900, updatedAt: 1)
        c.issuer = issuer
        try store.save(c)
        let registration = ClientRegistration(
            issuer: issuer, clientID: "client-1", clientSecret: nil, registrationAccessToken: nil,
            redirectURI: "http://127.0.0.1:5000/callback", registeredAt: 1)
        try CredentialVault(store: store, runtimeDirectory: runtime).keep(registration)
    }

    static let forgot = ScriptedTransport.json(
        #"{"error":"invalid_client","error_description":"Invalid client_id"}"#, status: 401)
    static let fresh = ScriptedTransport.json(#"{"access_token":"new","refresh_token":"r2","expires_in":3600}"#)

    func testOneInvalidClientIsABlipAskedAgain() throws {
        let store = MemoryStore()
        try stored(store)
        let t = ScriptedTransport([Self.forgot, Self.fresh])
        XCTAssertEqual(try refresher(store, t, registered: true).usable(id, minValid: 60)?.accessToken, "new")
        XCTAssertEqual(t.requests.count, 2)
        let vault = CredentialVault(store: store, runtimeDirectory: runtime)
        XCTAssertNil(try vault.registration(for: issuer, clientID: "client-1")?.forgottenAt)
    }

    func testTwiceMeansForgottenAndNothingIsDropped() throws {
        let store = MemoryStore()
        try stored(store)
        let t = ScriptedTransport([Self.forgot, Self.forgot])
        XCTAssertThrowsError(try refresher(store, t, registered: true).usable(id, minValid: 60)) { error in
            XCTAssertEqual((error as? TokenVaultError)?.exitCode, 4)
            XCTAssertTrue(error.errorText.contains("no longer knows the client"), error.errorText)
            XCTAssertEqual(
                (error as? TokenVaultError)?.hint,
                "log in to register again: tokenvault login https://mcp.example.com/mcp")
        }
        let vault = CredentialVault(store: store, runtimeDirectory: runtime)
        XCTAssertEqual(try vault.registration(for: issuer, clientID: "client-1")?.forgottenAt, 1_000)
        XCTAssertEqual(try store.load(id)?.refreshToken, "r1", "the grant is kept")
        XCTAssertEqual(try vault.dropForgotten(for: issuer), 1)
        XCTAssertEqual(try vault.registrations(for: issuer), [])
    }

    func testAConfiguredClientsInvalidClientIsNotTakenForAForgottenOne() throws {
        let store = MemoryStore()
        try stored(store)
        let t = ScriptedTransport([Self.forgot])
        XCTAssertThrowsError(try refresher(store, t, registered: false).usable(id, minValid: 60)) { error in
            XCTAssertEqual((error as? TokenVaultError)?.exitCode, 76)
        }
        XCTAssertEqual(t.requests.count, 1, "asked once")
    }
}
