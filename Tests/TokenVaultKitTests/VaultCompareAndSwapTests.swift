import Foundation
import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// The vault on a store several hosts write (`SharedStore`), with the
/// in-memory double: every conflict and retry path, deterministically, with
/// "another host" writing between the vault's read and its swap.
final class VaultCompareAndSwapTests: XCTestCase {
    var dir: String!
    override func setUp() { dir = NSTemporaryDirectory() + "tv-cas-" + UUID().uuidString.prefix(8) }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    let id = CredentialID(service: try! ServiceKey(parsing: "api.example.com"))

    func record(_ token: String) -> Credential {
        Credential(
            service: id.service, type: .oauth2, provider: "p", accessToken: token, refreshToken: "rt-" + token,
            updatedAt: 1)
    }

    func testAWriteThatLosesOneSwapReadsAgainAndLands() throws {
        let store = MemoryStore()
        let vault = CredentialVault(store: store, runtimeDirectory: dir)
        try store.save(record("first"))
        var interfered = false
        store.meanwhile = { s in
            guard !interfered else { return }
            interfered = true
            try? s.save(self.record("other-host"))  // lands between the vault's read and its swap
        }
        let written = try XCTUnwrap(vault.write(record("mine")))
        XCTAssertEqual(try store.load(id)?.accessToken, "mine", "an unconditional write lands on the second round")
        XCTAssertEqual(written.generation, try store.load(id)?.generation)
        XCTAssertEqual(store.revisions[id], 3, "first, the other host's, mine")
    }

    func testAConditionalWriteWhoseRecordChangedMeanwhileLandsNowhere() throws {
        let store = MemoryStore()
        let vault = CredentialVault(store: store, runtimeDirectory: dir)
        try store.save(record("read"))
        let read = try XCTUnwrap(store.load(id))
        store.meanwhile = { s in try? s.save(self.record("newer-login")) }
        XCTAssertNil(try vault.write(record("renewed"), if: .computed(from: read)))
        XCTAssertEqual(try store.load(id)?.accessToken, "newer-login", "the newer record is never undone")
        store.meanwhile = nil
        XCTAssertFalse(try vault.delete(id, if: .computed(from: read)), "nor deleted by a revoke of the old one")
        XCTAssertEqual(try store.load(id)?.accessToken, "newer-login")
    }

    func testADeleteMeanwhileIsNotBroughtBackByARenewal() throws {
        let store = MemoryStore()
        let vault = CredentialVault(store: store, runtimeDirectory: dir)
        try store.save(record("read"))
        let read = try XCTUnwrap(store.load(id))
        store.meanwhile = { s in _ = try? s.delete(self.id) }
        XCTAssertNil(try vault.write(record("renewed"), if: .computed(from: read)))
        XCTAssertNil(try store.load(id))
    }

    func testARecordThatNeverHoldsStillIsATemporaryFailureAfterTwentyRounds() throws {
        let store = MemoryStore()
        let vault = CredentialVault(store: store, runtimeDirectory: dir)
        try store.save(record("busy"))
        var n = 0
        store.meanwhile = { s in
            n += 1
            try? s.save(self.record("busy-\(n)"))
        }
        XCTAssertThrowsError(try vault.write(record("mine"))) { error in
            XCTAssertEqual((error as? TokenVaultError)?.exitCode, 75)
            XCTAssertEqual(
                error.errorText, "the record of api.example.com (default) kept changing while it was written; try again"
            )
        }
        XCTAssertEqual(n, 20)
        XCTAssertThrowsError(try vault.delete(id)) { error in
            XCTAssertTrue(error.errorText.hasSuffix("kept changing while it was deleted; try again"), error.errorText)
        }
        XCTAssertEqual(n, 40)
        store.meanwhile = nil
        XCTAssertEqual(try store.load(id)?.accessToken, "busy-40", "nothing of the losing writer landed")
    }

    func testASpooledRenewalLandsByCompareAndSwapAndNeverOverANewerRecord() throws {
        let store = MemoryStore()
        let vault = CredentialVault(store: store, runtimeDirectory: dir)
        try store.save(record("read"))
        let read = try XCTUnwrap(store.load(id))
        // The store refused the renewal (no quorum): the spool keeps it.
        XCTAssertTrue(vault.keepInSpool(record("renewed"), computedFrom: .computed(from: read)))
        // The next read writes it, by a swap over the record it was computed from.
        XCTAssertEqual(try vault.load(id)?.accessToken, "renewed")
        XCTAssertTrue(
            vault.notices.contains { $0.hasPrefix("wrote the record of api.example.com (default) kept in the spool") },
            "\(vault.notices)")
        // Again, but another host logs in between the spool's read and its swap: the spool is dropped.
        let now = try XCTUnwrap(store.load(id))
        XCTAssertTrue(vault.keepInSpool(record("renewed-again"), computedFrom: .computed(from: now)))
        store.meanwhile = { s in try? s.save(self.record("newer-login")) }
        XCTAssertEqual(try vault.load(id)?.accessToken, "newer-login")
        XCTAssertTrue(
            vault.notices.contains { $0.hasPrefix("dropped the renewed record of api.example.com (default)") },
            "\(vault.notices)")
        store.meanwhile = nil
        XCTAssertFalse(vault.spool.exists(id), "the spool entry is gone, not retried over the newer record")
    }
}
