import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// A token endpoint double: answers from a script and records what it was asked.
final class RefresherTests: XCTestCase {
    let id = CredentialID(service: try! ServiceKey(parsing: "127.0.0.1:9000"))
    var lockDir: String!

    override func setUp() {
        lockDir = NSTemporaryDirectory() + "tv-locks-" + UUID().uuidString.prefix(8)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: lockDir) }

    func provider(grant: String = "authorization_code") -> (String) throws -> OAuth2Provider {
        let config = try! Config.parse(
            """
            [providers.local]
            token_url = "http://127.0.0.1:9000/token"
            client_id = "cid"
            client_secret = "csecret"
            grant = "\(grant)"
            """)
        return { try OAuth2Provider.resolve($0, config: config, configPath: "c") }
    }

    func setUp(_ store: MemoryStore, expiresAt: Int64?, refresh: String? = "r1") throws {
        try store.save(
            Credential(
                service: id.service, type: .oauth2, provider: "local", accessToken: "old",
                refreshToken: refresh, expiresAt: expiresAt, updatedAt: 1))
    }

    func refresher(
        _ store: MemoryStore, _ t: HTTPTransport, now: Int64 = 1_000, warnings: Locked? = nil,
        grant: String = "authorization_code"
    ) -> Refresher {
        Refresher(
            vault: CredentialVault(store: store, runtimeDirectory: lockDir), transport: t, clock: FixedClock(now),
            providers: ProviderTable(provider(grant: grant)), warn: { warnings?.append($0) })
    }

    final class Locked: @unchecked Sendable {
        var items: [String] = []
        func append(_ s: String) { items.append(s) }
    }

    func testValidTokenMakesNoRequest() throws {
        let store = MemoryStore()
        try setUp(store, expiresAt: 2_000)
        let t = ScriptedTransport([])
        XCTAssertEqual(try refresher(store, t).usable(id, minValid: 60)?.accessToken, "old")
        XCTAssertTrue(t.requests.isEmpty)
    }

    func testRefreshStoresTheRotatedTokenFirst() throws {
        let store = MemoryStore()
        try setUp(store, expiresAt: 1_030)  // 30 s left, min_valid 60
        let t = ScriptedTransport([
            ScriptedTransport.json(#"{"access_token":"new","refresh_token":"r2","expires_in":3600}"#)
        ])
        let c = try refresher(store, t).usable(id, minValid: 60)
        XCTAssertEqual(c?.accessToken, "new")
        XCTAssertEqual(try store.load(id)?.refreshToken, "r2")
        XCTAssertEqual(try store.load(id)?.expiresAt, 4_600)
        let body = String(decoding: t.requests[0].body, as: UTF8.self)
        XCTAssertEqual(body, "grant_type=refresh_token&refresh_token=r1&client_id=cid&client_secret=csecret")
        XCTAssertEqual(t.requests[0].url, "http://127.0.0.1:9000/token")
    }

    func testNoNewRefreshTokenKeepsTheOld() throws {
        let store = MemoryStore()
        try setUp(store, expiresAt: 900)
        let t = ScriptedTransport([ScriptedTransport.json(#"{"access_token":"new","expires_in":3600}"#)])
        _ = try refresher(store, t).usable(id, minValid: 60)
        XCTAssertEqual(try store.load(id)?.refreshToken, "r1")
    }

    func testInvalidGrantIsLoginRequiredAndKeepsTheRecord() throws {
        let store = MemoryStore()
        try setUp(store, expiresAt: 900)
        let t = ScriptedTransport([ScriptedTransport.json(#"{"error":"invalid_grant"}"#, status: 400)])
        XCTAssertThrowsError(try refresher(store, t).usable(id, minValid: 60)) { e in
            XCTAssertEqual((e as? TokenVaultError)?.exitCode, 4)
            XCTAssertEqual((e as? TokenVaultError)?.hint, "run: tokenvault login local")
        }
        XCTAssertEqual(try store.load(id)?.refreshToken, "r1")
    }

    func testNetworkFailureWhileStillValidPrintsTheOldOneWithAWarning() throws {
        let store = MemoryStore()
        try setUp(store, expiresAt: 1_030)
        let warnings = Locked()
        let t = ScriptedTransport([.failure(.temporary("cannot reach 127.0.0.1:9000"))])
        XCTAssertEqual(try refresher(store, t, warnings: warnings).usable(id, minValid: 60)?.accessToken, "old")
        XCTAssertEqual(warnings.items.count, 1)
        XCTAssertFalse(warnings.items[0].contains("r1"), "no secret in the warning")
        try setUp(store, expiresAt: 999)
        let t2 = ScriptedTransport([.failure(.temporary("cannot reach 127.0.0.1:9000"))])
        XCTAssertThrowsError(try refresher(store, t2).usable(id, minValid: 60)) { e in
            XCTAssertEqual((e as? TokenVaultError)?.exitCode, 75)
        }
    }

    func testWithoutRefreshTokenExpiredIsLoginRequired() throws {
        let store = MemoryStore()
        try setUp(store, expiresAt: 999, refresh: nil)
        XCTAssertThrowsError(try refresher(store, ScriptedTransport([])).usable(id, minValid: 60)) { e in
            XCTAssertEqual((e as? TokenVaultError)?.exitCode, 4)
        }
        try setUp(store, expiresAt: 1_030, refresh: nil)
        XCTAssertEqual(
            try refresher(store, ScriptedTransport([])).usable(id, minValid: 60)?.accessToken, "old",
            "still valid, cannot refresh: printed as it is")
    }

    func testClientCredentialsFetchesANewToken() throws {
        let store = MemoryStore()
        try setUp(store, expiresAt: 999, refresh: nil)
        let t = ScriptedTransport([ScriptedTransport.json(#"{"access_token":"cc","expires_in":60}"#)])
        XCTAssertEqual(try refresher(store, t, grant: "client_credentials").usable(id, minValid: 30)?.accessToken, "cc")
        XCTAssertTrue(String(decoding: t.requests[0].body, as: UTF8.self).hasPrefix("grant_type=client_credentials"))
    }

    func testForceRefreshesAValidToken() throws {
        let store = MemoryStore()
        try setUp(store, expiresAt: 5_000)
        let t = ScriptedTransport([ScriptedTransport.json(#"{"access_token":"forced","expires_in":60}"#)])
        XCTAssertEqual(try refresher(store, t).usable(id, minValid: 60, force: true)?.accessToken, "forced")
    }
}
