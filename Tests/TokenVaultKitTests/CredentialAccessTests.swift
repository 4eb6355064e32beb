import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// The credential policy of `get`, `header`, `exec` and `refresh`
/// (`CredentialAccess`), driven with a store in memory, a scripted provider
/// and a clock the test moves: when a credential is renewed before it is
/// handed out, when it is handed out as it is, what a refusal and a failure
/// for now do, and the daily warning that a refresh token dies.
final class CredentialAccessTests: XCTestCase {
    let id = CredentialID(service: try! ServiceKey(parsing: "127.0.0.1:9000"))
    var runtime: String!

    override func setUp() { runtime = NSTemporaryDirectory() + "tv-access-" + UUID().uuidString.prefix(8) }
    override func tearDown() { try? FileManager.default.removeItem(atPath: runtime) }

    /// What the policy said and asked for.
    final class Seen: @unchecked Sendable {
        var warnings: [String] = []
        var events: [Event] = []
        var failures: [String] = []
        var refreshersBuilt = 0
    }

    let config = try! Config.parse(
        """
        [providers.local]
        token_url = "http://127.0.0.1:9000/token"
        client_id = "cid"
        grant = "authorization_code"
        """)

    /// The run the policy serves: what it asks of it is counted in `seen`.
    final class Run: AccessRun {
        let seen: Seen
        let build: () -> Refresher
        let minValidSeconds: Int64
        let warnBeforeSeconds: Int64

        init(seen: Seen, minValid: Int64, warnBefore: Int64, build: @escaping () -> Refresher) {
            self.seen = seen
            self.minValidSeconds = minValid
            self.warnBeforeSeconds = warnBefore
            self.build = build
        }

        func refresher() throws -> Refresher {
            seen.refreshersBuilt += 1
            return build()
        }
        func minValid(_ option: Int?) throws -> Int64 { option.map(Int64.init) ?? minValidSeconds }
        var notices: Notices {
            let seen = self.seen
            return Notices(
                warning: { seen.warnings.append($0) }, notice: { _ in }, later: { _ in }, passOn: { _ in })
        }
        func notFound(_ id: CredentialID) throws -> TokenVaultError {
            .notFound(service: id.service.description, account: id.account)
        }
        func emit(_ event: Event, _ id: CredentialID, reason: String) { seen.events.append(event) }
        func renewalFailed(_ error: Error, _ c: Credential) { seen.failures.append("\(error)") }
    }

    func access(
        _ store: MemoryStore, _ t: ScriptedTransport, _ clock: TestClock, _ seen: Seen, minValid: Int64 = 60,
        warnBefore: Int64 = 0
    ) -> CredentialAccess {
        let vault = CredentialVault(store: store, runtimeDirectory: runtime)
        let config = self.config
        let run = Run(seen: seen, minValid: minValid, warnBefore: warnBefore) {
            var r = Refresher(
                vault: vault, transport: t, clock: clock,
                providers: ProviderTable(config: config),
                warn: { seen.warnings.append($0) })
            r.events = { event, _, _ in seen.events.append(event) }
            return r
        }
        return CredentialAccess(vault: vault, clock: clock, run: run)
    }

    func stored(
        _ store: MemoryStore, issued: Int64 = 1_000, lifetime: Int64?, refresh: String? = "r1",
        refreshExpiresAt: Int64? = nil
    ) throws {
        var c = Credential(
            service: id.service, type: .oauth2, provider: "local", accessToken: "old", refreshToken: refresh,
            expiresAt: lifetime.map { issued + $0 }, updatedAt: issued)
        c.refreshExpiresAt = refreshExpiresAt
        try store.save(c)
    }

    static let renewed = ScriptedTransport.json(
        #"{"access_token":"new","token_type":"Bearer","expires_in":3600,"refresh_token":"r2"}"#)

    func exitCode(_ body: () throws -> Any) -> Int32? {
        do {
            _ = try body()
            return nil
        } catch let error as TokenVaultError {
            return error.exitCode
        } catch {
            return -1
        }
    }

    func testNothingStoredIsNotFoundAndAsksNobody() {
        let t = ScriptedTransport([])
        let seen = Seen()
        let a = access(MemoryStore(), t, TestClock(1_000), seen)
        XCTAssertEqual(exitCode { try a.usable(self.id) }, 3)
        XCTAssertEqual(exitCode { try a.stored(self.id, refresh: true) }, 3)
        XCTAssertEqual(seen.refreshersBuilt, 0)
        XCTAssertTrue(t.requests.isEmpty)
    }

    func testATokenThatNeverExpiresIsHandedOutWithoutReadingTheConfig() throws {
        let store = MemoryStore()
        try stored(store, lifetime: nil)
        let t = ScriptedTransport([])
        let seen = Seen()
        XCTAssertEqual(try access(store, t, TestClock(9_999_999), seen).usable(id).accessToken, "old")
        XCTAssertEqual(seen.refreshersBuilt, 0, "no refresher (no config) for a token that never expires")
    }

    func testRenewedFromTheExactSecondFewerThanMinValidAreLeft() throws {
        let store = MemoryStore()
        try stored(store, lifetime: 300)
        let clock = TestClock(1_000 + 300 - 60)  // exactly min_valid left: still valid
        let t = ScriptedTransport([Self.renewed])
        let seen = Seen()
        let a = access(store, t, clock, seen)
        XCTAssertEqual(try a.usable(id).accessToken, "old")
        XCTAssertTrue(t.requests.isEmpty)
        clock.now += 1  // one second less than min_valid
        XCTAssertEqual(try a.usable(id).accessToken, "new")
        XCTAssertEqual(t.requests.count, 1)
        XCTAssertEqual(try store.load(id)?.refreshToken, "r2", "the rotated refresh token is stored")
    }

    /// A 30 s token under the default 60 s min_valid: handed out as it is
    /// while half its lifetime is left (docs/reference.md, "The renewal
    /// margin"), then renewed once, and the renewal handed out though it too
    /// is shorter than min_valid; the next uses ask nothing.
    func testATokenShorterThanMinValidIsRenewedOnceAndHandedOut() throws {
        let store = MemoryStore()
        try stored(store, lifetime: 30)
        let clock = TestClock(1_000)
        let t = ScriptedTransport([
            ScriptedTransport.json(#"{"access_token":"short","token_type":"Bearer","expires_in":30}"#)
        ])
        let seen = Seen()
        let a = access(store, t, clock, seen)
        XCTAssertEqual(try a.usable(id).accessToken, "old", "15 s or more left of 30: as it is")
        clock.now = 1_015
        XCTAssertEqual(try a.usable(id).accessToken, "old")
        XCTAssertTrue(t.requests.isEmpty)
        clock.now = 1_016
        let c = try a.usable(id)
        XCTAssertEqual(c.accessToken, "short", "a renewal shorter than min_valid is still handed out")
        XCTAssertEqual(c.expiresAt, 1_046)
        for _ in 0..<10 { XCTAssertEqual(try a.usable(id).accessToken, "short") }
        XCTAssertEqual(t.requests.count, 1, "one renewal for eleven uses")
    }

    func testWithoutRefreshAStaleTokenIsHandedOutUntilItExpires() throws {
        let store = MemoryStore()
        try stored(store, lifetime: 30)
        let clock = TestClock(1_010)
        let t = ScriptedTransport([])
        let seen = Seen()
        let a = access(store, t, clock, seen)
        XCTAssertEqual(try a.usable(id, refresh: false).accessToken, "old")
        clock.now = 1_030
        XCTAssertEqual(exitCode { try a.usable(self.id, refresh: false) }, 4)
        XCTAssertTrue(t.requests.isEmpty)
    }

    func testARefusalIsRememberedAndNotAskedAgain() throws {
        let store = MemoryStore()
        try stored(store, lifetime: 30)
        let clock = TestClock(1_100)
        let t = ScriptedTransport([ScriptedTransport.json(#"{"error":"invalid_grant"}"#, status: 400)])
        let seen = Seen()
        let a = access(store, t, clock, seen)
        XCTAssertEqual(exitCode { try a.usable(self.id) }, 4)
        XCTAssertNotNil(try store.load(id)?.refusal, "the refusal is kept with the record")
        XCTAssertEqual(try store.load(id)?.refreshToken, "r1", "the record is kept")
        XCTAssertEqual(seen.events, [.loginRequired])
        clock.now += 3600
        XCTAssertEqual(exitCode { try a.usable(self.id) }, 4)
        XCTAssertEqual(t.requests.count, 1, "a refused grant is not asked again")
        // An explicit refresh asks again.
        t.answers = [Self.renewed]
        XCTAssertEqual(try a.usable(id, force: true).accessToken, "new")
    }

    func testAFailureForNowHandsOutTheStillValidTokenAndFailsAnExpiredOne() throws {
        let store = MemoryStore()
        try stored(store, lifetime: 300)
        let clock = TestClock(1_290)  // 10 s left
        let t = ScriptedTransport([.failure(.temporary("cannot reach 127.0.0.1:9000"))])
        let seen = Seen()
        let a = access(store, t, clock, seen)
        XCTAssertEqual(try a.usable(id).accessToken, "old")
        XCTAssertTrue(seen.warnings.contains { $0.contains("valid 10 s more") }, "\(seen.warnings)")
        clock.now = 1_300
        t.answers = [.failure(.temporary("cannot reach 127.0.0.1:9000"))]
        XCTAssertEqual(exitCode { try a.usable(self.id) }, 75)
        XCTAssertEqual(seen.failures.count, 1, "the failure is told (a discovered provider is fetched again)")
        XCTAssertEqual(try store.load(id)?.accessToken, "old")
        XCTAssertNil(try store.load(id)?.refusal, "a failure for now is no refusal")
    }

    func testTheStoredRecordIsHandedOutWhenItsRenewalFails() throws {
        let store = MemoryStore()
        try stored(store, lifetime: 30)
        let t = ScriptedTransport([.failure(.temporary("cannot reach 127.0.0.1:9000"))])
        let seen = Seen()
        let c = try access(store, t, TestClock(2_000), seen).stored(id, refresh: true)
        XCTAssertEqual(c.accessToken, "old")
        XCTAssertTrue(seen.warnings.contains { $0.hasSuffix("printing what is stored") }, "\(seen.warnings)")
        // Without refresh, or valid: nobody is asked.
        t.answers = []
        XCTAssertEqual(try access(store, t, TestClock(2_000), seen).stored(id, refresh: false).accessToken, "old")
        XCTAssertEqual(t.requests.count, 1)
    }

    func testTheDyingRefreshTokenIsWarnedAboutOnceADay() throws {
        let store = MemoryStore()
        try stored(store, lifetime: nil, refreshExpiresAt: 1_000 + 3 * 86400)
        let clock = TestClock(1_000)
        let seen = Seen()
        let a = access(store, ScriptedTransport([]), clock, seen, warnBefore: 7 * 86400)
        _ = try a.usable(id)
        XCTAssertEqual(seen.warnings.count, 1)
        XCTAssertTrue(seen.warnings[0].contains("dies in 3d 0h"), seen.warnings[0])
        XCTAssertEqual(seen.events, [.refreshTokenExpiring])
        clock.now += 86400 - 1
        _ = try a.usable(id)
        XCTAssertEqual(seen.warnings.count, 1, "said once a day")
        clock.now += 1
        _ = try a.usable(id)
        XCTAssertEqual(seen.warnings.count, 2, "and again the next day")
        // Outside warn_before, or with warnings off: nothing.
        XCTAssertNil(CredentialAccess.refreshTokenDies(try store.load(id)!, within: 86400, now: 1_000))
        XCTAssertNil(CredentialAccess.refreshTokenDies(try store.load(id)!, within: 0, now: 1_000))
    }
}
