import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// The file vault opened on the `get` read-ahead thread (docs/benchmarks.md,
/// "The vault read ahead"): with the cached key alone, handed by the run's
/// plan to its store, taken once by the first read of the same file, and
/// never in place of a newer vault.
final class VaultHeadStartTests: XCTestCase {
    var dir: String!
    let cache = FileVaultUnitTests.CountingCache()

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "tva-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(
            atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    /// A store that can open the vault only with what it is given: no
    /// passphrase source, and (unless `cached`) no cached key.
    /// `ahead`: what the run's plan hands it.
    func store(pass: String? = nil, cached: Bool = false, ahead: HeadStart<VaultHeadStart.Opened>? = nil) -> FileStore {
        let s = FileStore(
            path: dir + "/vault",
            passphrase: PassphraseSource(
                settings: Settings(environment: pass.map { ["TOKENVAULT_PASSPHRASE": $0] } ?? [:]), terminalPath: nil),
            keyCache: cached ? cache : NoKeyCache(), keyTTL: cached ? 60 : 0, newVaultParams: .minimum,
            headStart: ahead)
        return s
    }

    func save(_ token: String) throws {
        try store(pass: "p", cached: true).save(
            Credential(service: try ServiceKey(parsing: "a.com"), type: .token, accessToken: token, updatedAt: 1))
    }

    var id: CredentialID { CredentialID(service: try! ServiceKey(parsing: "a.com")) }

    /// What the read-ahead thread does, here on this one.
    func openForHeadStart(path: String? = nil) -> HeadStart<VaultHeadStart.Opened> {
        let ahead = HeadStart<VaultHeadStart.Opened>(path: path ?? dir + "/vault")
        ahead.finish(try? store(cached: true).openWithCachedKey())
        return ahead
    }

    func testTheFirstReadTakesTheVaultOpenedAheadOnce() throws {
        try save("1")
        let ahead = openForHeadStart()
        let reader = store(ahead: ahead)
        XCTAssertEqual(try reader.load(id)?.accessToken, "1", "opened ahead: no passphrase needed")
        XCTAssertEqual(try reader.load(id)?.accessToken, "1", "the key came with it")
        XCTAssertThrowsError(try store(ahead: ahead).load(id), "taken once: another store must open it itself") {
            error in
            XCTAssertEqual((error as? TokenVaultError)?.exitCode, 77, "\(error)")
        }
    }

    func testAVaultReplacedAfterTheReadAheadIsReadAgain() throws {
        try save("1")
        let ahead = openForHeadStart()
        try save("2")
        XCTAssertEqual(try store(pass: "p", ahead: ahead).load(id)?.accessToken, "2")
    }

    func testNothingIsOpenedAheadWithoutACachedKey() throws {
        try save("1")
        cache.stored = [:]
        XCTAssertNil(try store(cached: true).openWithCachedKey())
        let ahead = openForHeadStart()
        XCTAssertThrowsError(try store(ahead: ahead).load(id))
        XCTAssertEqual(try store(pass: "p", ahead: ahead).load(id)?.accessToken, "1")
    }

    func testAReadOfAnotherVaultDoesNotTakeIt() throws {
        try save("1")
        XCTAssertThrowsError(try store(ahead: openForHeadStart(path: dir + "/other")).load(id), "made for another path")
    }

    /// The plan opens the vault ahead only where the run will read it first
    /// (the file backend here), hands it to the store it builds, and
    /// forgets what was not taken.
    func testThePlanHandsItsStoreTheVaultAndForgetsWhatWasNotTaken() throws {
        let env: [String: String] = [
            "TOKENVAULT_VAULT": dir + "/vault", "TOKENVAULT_BACKEND": "file", "HOME": dir, "XDG_RUNTIME_DIR": dir,
        ]
        let plan = Plan(settings: Settings(environment: env))
        XCTAssertNil(try Backends(settings: plan.settings, plan: plan).fileVault().headStart, "nothing started yet")
        plan.startHeadStart()
        let ahead = try XCTUnwrap(plan.vaultHeadStart)
        XCTAssertTrue(try Backends(settings: plan.settings, plan: plan).fileVault().headStart === ahead)
        XCTAssertNil(plan.secretServiceHeadStart, "the Secret Service is not readied for the file backend")
        plan.dropHeadStart()
        XCTAssertNil(ahead.take(), "forgotten: nothing left to take")
    }
}
