import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// FileStore and AutoStore with test doubles for the key cache and the Secret Service.
final class FileVaultUnitTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "tvu-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(
            atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    final class CountingCache: KeyCache, @unchecked Sendable {
        private let lock = NSLock()
        private var _stored: [String: [UInt8]] = [:]
        var stored: [String: [UInt8]] {
            get { lock.withLock { _stored } }
            set { lock.withLock { _stored = newValue } }
        }
        var loads = 0
        /// What `generation()` answers, call after call (the last one from then on).
        var generations: [[UInt8]] = [[0]]
        func load(name: String) -> SecureBytes? {
            lock.withLock {
                loads += 1
                return _stored[name].map { SecureBytes($0) }
            }
        }
        func store(name: String, key: SecureBytes, ttl: Int) { lock.withLock { _stored[name] = key.bytes } }
        func forget(name: String) -> Bool { lock.withLock { _stored.removeValue(forKey: name) != nil } }
        func forgetAll() -> Int {
            lock.withLock {
                defer { _stored = [:] }
                return _stored.count
            }
        }
        func generation() -> [UInt8]? {
            lock.withLock { generations.count > 1 ? generations.removeFirst() : generations[0] }
        }
        func advanceGeneration() { lock.withLock { generations = [[(generations.last?.first ?? 0) &+ 1]] } }
    }

    /// A `lock` while the key was being derived: the derivation opens the
    /// vault for its own request, but does not cache the key.
    func testALockDuringADerivationKeepsItsKeyOutOfTheCache() throws {
        let cache = CountingCache()
        try vault(pass: "p").save(try cred("a.com", "1"))
        cache.generations = [[0], [1]]  // read before deriving, then a lock came
        XCTAssertEqual(try vault(pass: "p", cache: cache, ttl: 60).load(try cred("a.com", "").id)?.accessToken, "1")
        XCTAssertEqual(cache.stored.count, 0, "not cached after the lock")
        XCTAssertEqual(try vault(pass: "p", cache: cache, ttl: 60).load(try cred("a.com", "").id)?.accessToken, "1")
        XCTAssertEqual(cache.stored.count, 1, "cached when no lock came")
    }

    /// Eight readers at once after the key's time ran out: one runs the
    /// passphrase command and derives, the others wait and take its key.
    func testReadersSideBySideDeriveTheKeyOnce() throws {
        try vault(pass: "p").save(try cred("a.com", "1"))
        let log = dir + "/asked"
        let cache = CountingCache()
        let settings = Settings(environment: ["TOKENVAULT_PASSPHRASE_COMMAND": "echo x >> \(log); echo p"])
        let path = dir + "/v/vault"
        let id = try cred("a.com", "").id
        let tokens = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let reader = FileStore(
                path: path, passphrase: PassphraseSource(settings: settings, terminalPath: nil),
                keyCache: cache, keyTTL: 60, newVaultParams: .minimum)
            let token = (try? reader.load(id))??.accessToken ?? "failed"
            tokens.mutate { $0.append(token) }
        }
        XCTAssertEqual(tokens.value, Array(repeating: "1", count: 8))
        let asked = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").count
        XCTAssertEqual(asked, 1, "the passphrase command ran once")
    }

    func vault(pass: String?, cache: KeyCache = NoKeyCache(), ttl: Int = 0) -> FileStore {
        FileStore(
            path: dir + "/v/vault",
            passphrase: PassphraseSource(
                settings: Settings(environment: pass.map { ["TOKENVAULT_PASSPHRASE": $0] } ?? [:]), terminalPath: nil),
            keyCache: cache, keyTTL: ttl, newVaultParams: .minimum)
    }

    func cred(_ host: String, _ token: String, updated: Int64 = 1) throws -> Credential {
        Credential(service: try ServiceKey(parsing: host), type: .token, accessToken: token, updatedAt: updated)
    }

    func testSaveLoadDeleteList() throws {
        let v = vault(pass: "p")
        XCTAssertNil(try v.load(try cred("a.com", "x").id), "no vault: nothing, and no passphrase asked")
        try v.save(try cred("a.com", "1"))
        try v.save(try cred("b.com", "2"))
        try v.save(try cred("a.com", "3"))
        let again = vault(pass: "p")
        XCTAssertEqual(try again.load(try cred("a.com", "").id)?.accessToken, "3")
        XCTAssertEqual(try again.list().map(\.accessToken), ["3", "2"])
        XCTAssertTrue(try again.delete(try cred("a.com", "").id))
        XCTAssertFalse(try again.delete(try cred("a.com", "").id))
        XCTAssertEqual(try vault(pass: "p").list().count, 1)
    }

    func testNoPassphraseSourceIsPermission() throws {
        try vault(pass: "p").save(try cred("a.com", "1"))
        XCTAssertThrowsError(try vault(pass: nil).load(try cred("a.com", "").id)) { e in
            XCTAssertEqual((e as? TokenVaultError)?.exitCode, 77)
            XCTAssertNotNil((e as? TokenVaultError)?.hint)
        }
    }

    func testCachedKeyNeedsNoPassphrase() throws {
        let cache = CountingCache()
        try vault(pass: "p", cache: cache, ttl: 60).save(try cred("a.com", "1"))
        XCTAssertEqual(cache.stored.count, 1)
        XCTAssertEqual(try vault(pass: nil, cache: cache, ttl: 60).load(try cred("a.com", "").id)?.accessToken, "1")
        // A cached key that does not fit this vault is ignored, not trusted.
        cache.stored[cache.stored.keys.first!] = [UInt8](repeating: 1, count: 32)
        XCTAssertThrowsError(try vault(pass: nil, cache: cache, ttl: 60).load(try cred("a.com", "").id))
        XCTAssertEqual(try vault(pass: "p", cache: cache, ttl: 60).load(try cred("a.com", "").id)?.accessToken, "1")
    }

    func testAutoPrefersTheNewerCopyAndSaysWhatItCouldNotCheck() throws {
        let file = vault(pass: "p")
        let ss = MemoryStore(name: "secret-service")
        try ss.save(try cred("a.com", "old", updated: 1))
        try file.save(try cred("a.com", "new", updated: 2))
        let auto = AutoStore(secretService: ss, unavailableReason: nil, quiet: false, file: file)
        XCTAssertEqual(try auto.locate(try cred("a.com", "").id)?.credential.accessToken, "new")
        XCTAssertEqual(try auto.locate(try cred("a.com", "").id)?.backend, "file")
        try auto.save(try cred("b.com", "b", updated: 3))
        XCTAssertEqual(
            try ss.load(try cred("b.com", "").id)?.accessToken, "b", "new credentials go to the Secret Service")
        XCTAssertEqual(try auto.list().count, 2)

        let away = AutoStore(secretService: nil, unavailableReason: "no bus", quiet: false, file: file)
        XCTAssertNil(try away.locate(try cred("b.com", "").id))
        XCTAssertTrue(away.uncheckedNote?.contains("no bus") ?? false)
        XCTAssertTrue(try away.delete(try cred("a.com", "").id))
        XCTAssertFalse(away.warnings.isEmpty)
    }
}
