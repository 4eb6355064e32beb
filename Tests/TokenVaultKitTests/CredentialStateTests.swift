import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// docs/reference.md's table, the refusal mark, and writes that race a refresh.
final class CredentialStateTests: XCTestCase {
    let id = CredentialID(service: try! ServiceKey(parsing: "127.0.0.1:9000"))
    var runtime: String!

    override func setUp() { runtime = NSTemporaryDirectory() + "tv-state-" + UUID().uuidString.prefix(8) }
    override func tearDown() { try? FileManager.default.removeItem(atPath: runtime) }

    func record(
        expiresAt: Int64?, refresh: String? = "r1", provider: String? = "local", type: CredentialType = .oauth2
    ) -> Credential {
        Credential(
            service: id.service, type: type, provider: provider, accessToken: "old", refreshToken: refresh,
            expiresAt: expiresAt, updatedAt: 1)
    }

    func state(_ c: Credential, grant: OAuth2Provider.Grant? = .authorizationCode) -> CredentialState {
        CredentialStatus(of: c, now: 1_000, minValid: 60, grant: { _ in grant }).state
    }

    func testTheStateTable() {
        XCTAssertEqual(state(record(expiresAt: nil)), .valid)
        XCTAssertEqual(state(record(expiresAt: 1_060)), .valid)
        XCTAssertEqual(state(record(expiresAt: 1_030, refresh: nil)), .expiring)
        XCTAssertEqual(state(record(expiresAt: 1_030)), .refreshable)
        XCTAssertEqual(state(record(expiresAt: 900)), .refreshable)
        XCTAssertEqual(state(record(expiresAt: 900, refresh: nil)), .loginRequired)
        XCTAssertEqual(state(record(expiresAt: 900, provider: nil)), .loginRequired, "no provider to renew with")
        // client_credentials renews without a refresh token (status and get agree).
        XCTAssertEqual(state(record(expiresAt: 900, refresh: nil), grant: .clientCredentials), .refreshable)
        XCTAssertEqual(
            state(record(expiresAt: 900, refresh: nil), grant: nil), .loginRequired, "provider not configured")
        XCTAssertEqual(state(record(expiresAt: 900, refresh: nil, type: .oauth1)), .loginRequired)
        var refused = record(expiresAt: 5_000)
        refused.refusal = Refusal(reason: "invalid_grant", at: 990)
        XCTAssertEqual(state(refused), .loginRequired, "a refusal stands even while the token is valid")
    }

    /// The renewal margin is `min_valid` but never more than half the
    /// token's lifetime (docs/reference.md, "The renewal margin"): with the
    /// default 60 s, tokens of 20 s, 60 s and 300 s, and one whose lifetime
    /// is unknown, second by second on a test clock.
    func testTheMarginIsNeverMoreThanHalfTheLifetime() {
        let clock = TestClock(10_000)
        func firstRenewal(lifetime: Int64?) -> Int64? {
            var c = record(expiresAt: 10_000 + (lifetime ?? 100))
            c.updatedAt = lifetime == nil ? 0 : 10_000
            for now: Int64 in 10_000...10_400 {
                clock.now = now
                let status = CredentialStatus(of: c, now: clock.now, minValid: 60, grant: { _ in .authorizationCode })
                if status.state == .refreshable { return (c.expiresAt ?? 0) - now }
            }
            return nil
        }
        XCTAssertEqual(firstRenewal(lifetime: 20), 9, "a 20 s token: renewed with less than 10 s left")
        XCTAssertEqual(firstRenewal(lifetime: 60), 29, "60 s: with less than 30 s left")
        XCTAssertEqual(firstRenewal(lifetime: 300), 59, "300 s: with less than min_valid left")
        XCTAssertEqual(firstRenewal(lifetime: nil), 59, "unknown: min_valid")
        // The agent's lead follows the same rule (a minute and the jitter more than min_valid).
        var short = record(expiresAt: 10_020)
        short.updatedAt = 10_000
        XCTAssertEqual(AheadOfNeed(minValid: 60).lead(for: short), CredentialStatus.margin(200, for: short))
        XCTAssertEqual(CredentialStatus.margin(60, for: short), 10)
    }

    func testTheRecordKeepsGenerationAndRefusal() throws {
        var c = record(expiresAt: 900)
        c.generation = 7
        c.refusal = Refusal(reason: "the provider answered invalid_grant", at: 950)
        let back = try Credential.fromRecord(c.recordJSON(), id: id)
        XCTAssertEqual(back, c)
    }

    func testRecordsFromAnyStoreAreChecked() {
        for bad in ["tok\r\nX-Injected: 1", "two\nlines", "esc\u{1B}[2J"] {
            let json = try! JSONEncoder().encode(["access_token": bad, "type": "oauth2"])
            XCTAssertThrowsError(try Credential.fromRecord(json, id: id)) { e in
                XCTAssertEqual((e as? TokenVaultError)?.exitCode, 65)
                XCTAssertTrue(e.localizedDescription.contains("127.0.0.1:9000"), "names the item")
            }
        }
        XCTAssertThrowsError(
            try Credential.fromRecord(Data("a b".utf8), id: id), "a bare secret-tool token with a space")
    }

    // MARK: Refresh

    func provider(grant: String = "authorization_code") -> (String) throws -> OAuth2Provider {
        let config = try! Config.parse(
            """
            [providers.local]
            token_url = "http://127.0.0.1:9000/token"
            client_id = "cid"
            client_secret = "csecret-value"
            grant = "\(grant)"
            """)
        return { try OAuth2Provider.resolve($0, config: config, configPath: "c") }
    }

    func refresher(_ store: MemoryStore, _ t: HTTPTransport, warnings: Warnings = Warnings()) -> Refresher {
        Refresher(
            vault: CredentialVault(store: store, runtimeDirectory: runtime), transport: t, clock: FixedClock(1_000),
            providers: ProviderTable(provider()), warn: { warnings.items.append($0) })
    }

    final class Warnings: @unchecked Sendable { var items: [String] = [] }

    func testARefusalIsRememberedUntilAnExplicitRefresh() throws {
        let store = MemoryStore()
        try store.save(record(expiresAt: 900))
        let t = ScriptedTransport([ScriptedTransport.json(#"{"error":"invalid_grant"}"#, status: 400)])
        XCTAssertThrowsError(try refresher(store, t).usable(id, minValid: 60)) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 4)
        }
        let marked = try XCTUnwrap(store.load(id))
        XCTAssertNotNil(marked.refusal)
        XCTAssertEqual(marked.refreshToken, "r1", "the record is kept")
        // The next get does not ask the provider again.
        XCTAssertThrowsError(try refresher(store, t).usable(id, minValid: 60)) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 4)
        }
        XCTAssertEqual(t.requests.count, 1)
        // `tokenvault refresh` asks again, and a success clears the mark.
        t.answers = [ScriptedTransport.json(#"{"access_token":"new","expires_in":3600}"#)]
        XCTAssertEqual(try refresher(store, t).usable(id, minValid: 60, force: true)?.accessToken, "new")
        XCTAssertNil(try store.load(id)?.refusal)
        XCTAssertEqual(t.requests.count, 2)
    }

    func testASetDuringARefreshWins() throws {
        let store = MemoryStore()
        try store.save(record(expiresAt: 900))
        let vault = CredentialVault(store: store, runtimeDirectory: runtime)
        let t = ScriptedTransport([
            ScriptedTransport.json(#"{"access_token":"refreshed","refresh_token":"r2","expires_in":3600}"#)
        ])
        t.meanwhile = {
            var mine = self.record(expiresAt: 9_000, refresh: "user-r")
            mine.accessToken = "user-set"
            try vault.write(mine)
        }
        XCTAssertEqual(try refresher(store, t).usable(id, minValid: 60)?.accessToken, "user-set")
        XCTAssertEqual(try store.load(id)?.accessToken, "user-set")
        XCTAssertEqual(try store.load(id)?.refreshToken, "user-r")
    }

    func testADeleteDuringARefreshIsNotUndone() throws {
        let store = MemoryStore()
        try store.save(record(expiresAt: 900))
        let vault = CredentialVault(store: store, runtimeDirectory: runtime)
        let t = ScriptedTransport([ScriptedTransport.json(#"{"access_token":"refreshed","expires_in":3600}"#)])
        t.meanwhile = { try vault.delete(self.id) }
        XCTAssertNil(try refresher(store, t).usable(id, minValid: 60))
        XCTAssertNil(try store.load(id), "the refresh did not write the credential back")
    }

    func testAMalformedAnswerNeverDropsTheRotatedRefreshToken() throws {
        for expires in [#""nan""#, #""inf""#, "1e300", #""9.3e18""#, "-5", "1.5"] {
            let store = MemoryStore()
            try store.save(record(expiresAt: 900))
            let t = ScriptedTransport([
                ScriptedTransport.json(#"{"access_token":"new","refresh_token":"r2","expires_in":\#(expires)}"#)
            ])
            XCTAssertThrowsError(try refresher(store, t).usable(id, minValid: 60), expires) { e in
                XCTAssertEqual((e as? TokenVaultError)?.exitCode, 65, expires)
            }
            let kept = try XCTUnwrap(store.load(id))
            XCTAssertEqual(kept.refreshToken, "r2", "the provider rotated: the new refresh token is kept (\(expires))")
            XCTAssertLessThanOrEqual(kept.expiresAt ?? .max, 1_000, "the access token counts as expired")
        }
    }

    func testARenewalTheStoreRefusesIsSpooledAndWrittenByTheNextRun() throws {
        let store = MemoryStore()
        try store.save(record(expiresAt: 900))
        let t = ScriptedTransport([
            ScriptedTransport.json(#"{"access_token":"new","refresh_token":"r2","expires_in":3600}"#)
        ])
        store.failSaves = .vault("cannot write the vault: No space left on device")
        let warnings = Warnings()
        XCTAssertEqual(try refresher(store, t, warnings: warnings).usable(id, minValid: 60)?.accessToken, "new")
        XCTAssertTrue(warnings.items.joined().contains("spool"), warnings.items.joined())
        XCTAssertFalse(warnings.items.joined().contains("r2"), "no secret in the warning")
        XCTAssertEqual(try store.load(id)?.refreshToken, "r1")
        // Next run: the disk has room again.
        store.failSaves = nil
        let vault = CredentialVault(store: store, runtimeDirectory: runtime)
        XCTAssertEqual(try vault.load(id)?.refreshToken, "r2")
        XCTAssertEqual(try store.load(id)?.refreshToken, "r2")
        XCTAssertFalse(vault.spool.exists(id))
        XCTAssertFalse(vault.notices.isEmpty)
        let mode = try FileManager.default.attributesOfItem(atPath: runtime + "/spool")[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o700)
    }

    func testProviderTextNeverEchoesWhatWasSent() throws {
        let store = MemoryStore()
        try store.save(record(expiresAt: 900, refresh: "rt-secret-123"))
        let t = ScriptedTransport([
            ScriptedTransport.json(
                #"{"error":"invalid_client","error_description":"client csecret-value with token rt-secret-123 \u001b[31mrejected"}"#,
                status: 401)
        ])
        XCTAssertThrowsError(try refresher(store, t).usable(id, minValid: 60)) { e in
            let m = e.localizedDescription
            XCTAssertEqual((e as? TokenVaultError)?.exitCode, 76)
            XCTAssertFalse(m.contains("rt-secret-123"), m)
            XCTAssertFalse(m.contains("csecret-value"), m)
            XCTAssertFalse(m.contains("\u{1B}"), m)
            XCTAssertTrue(m.contains("[redacted]"), m)
        }
    }
}
