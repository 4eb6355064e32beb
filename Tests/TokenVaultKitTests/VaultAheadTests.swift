import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// The file vault opened on the `get` read-ahead thread (docs/benchmarks.md,
/// "The vault read ahead"): with the cached key alone, taken once by the
/// first read of the same file, and never in place of a newer vault.
final class VaultAheadTests: XCTestCase {
    var dir: String!
    let cache = FileVaultUnitTests.CountingCache()

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "tva-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(
            atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    override func tearDown() {
        FileStore.forgetReadAhead()
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// A store that can open the vault only with what it is given: no
    /// passphrase source, and (unless `cached`) no cached key.
    func store(pass: String? = nil, cached: Bool = false) -> FileStore {
        FileStore(
            path: dir + "/vault",
            passphrase: PassphraseSource(
                settings: Settings(environment: pass.map { ["TOKENVAULT_PASSPHRASE": $0] } ?? [:]), terminalPath: nil),
            keyCache: cached ? cache : NoKeyCache(), keyTTL: cached ? 60 : 0, newVaultParams: .minimum)
    }

    func save(_ token: String) throws {
        try store(pass: "p", cached: true).save(
            Credential(service: try ServiceKey(parsing: "a.com"), type: .token, accessToken: token, updatedAt: 1))
    }

    var id: CredentialID { CredentialID(service: try! ServiceKey(parsing: "a.com")) }

    /// What the read-ahead thread does, here on this one.
    func openAhead() {
        let ahead = VaultAhead.slot.mark(path: dir + "/vault")
        ahead.finish(try? store(cached: true).openWithCachedKey())
    }

    func testTheFirstReadTakesTheVaultOpenedAheadOnce() throws {
        try save("1")
        openAhead()
        let reader = store()
        XCTAssertEqual(try reader.load(id)?.accessToken, "1", "opened ahead: no passphrase needed")
        XCTAssertEqual(try reader.load(id)?.accessToken, "1", "the key came with it")
        XCTAssertThrowsError(try store().load(id), "taken once: another store must open it itself") { error in
            XCTAssertEqual((error as? TokenVaultError)?.exitCode, 77, "\(error)")
        }
    }

    func testAVaultReplacedAfterTheReadAheadIsReadAgain() throws {
        try save("1")
        openAhead()
        try save("2")
        XCTAssertEqual(try store(pass: "p").load(id)?.accessToken, "2")
    }

    func testNothingIsOpenedAheadWithoutACachedKey() throws {
        try save("1")
        cache.stored = [:]
        XCTAssertNil(try store(cached: true).openWithCachedKey())
        openAhead()
        XCTAssertThrowsError(try store().load(id))
        XCTAssertEqual(try store(pass: "p").load(id)?.accessToken, "1")
    }

    func testAReadOfAnotherVaultDoesNotTakeIt() throws {
        try save("1")
        let ahead = VaultAhead.slot.mark(path: dir + "/other")
        ahead.finish(try store(cached: true).openWithCachedKey())
        XCTAssertThrowsError(try store().load(id), "marked for another path")
    }

    func testWhatIsNotTakenIsForgotten() throws {
        try save("1")
        openAhead()
        FileStore.forgetReadAhead()
        XCTAssertThrowsError(try store().load(id))
    }
}
