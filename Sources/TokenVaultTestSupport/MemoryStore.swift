import Foundation
import TokenVaultKit

/// A store in memory: the test double behind the `CredentialStore` protocol,
/// and a `SharedStore` like etcd, whose conditional writes are a
/// compare-and-swap on each record, so the vault's conflict and retry paths
/// run without a cluster and without sleeps.
public final class MemoryStore: SharedStore, @unchecked Sendable {
    public let name: String
    private var items: [CredentialID: Credential] = [:]
    /// How many times each record was written or deleted.
    public private(set) var revisions: [CredentialID: Int] = [:]
    private let lock = NSRecursiveLock()
    /// When set, every save fails with it (a full disk, a locked keyring).
    public var failSaves: TokenVaultError?
    /// Runs inside each conditional write or delete, after the caller read and
    /// before the swap: what another host does meanwhile.
    public var meanwhile: ((MemoryStore) -> Void)?

    public init(name: String = "memory") { self.name = name }

    public func load(_ id: CredentialID) throws -> Credential? { lock.withLock { items[id] } }

    public func save(_ credential: Credential) throws {
        if let failSaves { throw failSaves }
        lock.withLock {
            items[credential.id] = credential
            revisions[credential.id, default: 0] += 1
        }
    }

    public func delete(_ id: CredentialID) throws -> Bool {
        lock.withLock {
            guard items.removeValue(forKey: id) != nil else { return false }
            revisions[id, default: 0] += 1
            return true
        }
    }

    public func list() throws -> [Credential] { lock.withLock { items.values.sorted { $0.id < $1.id } } }

    // MARK: SharedStore

    public func save(_ credential: Credential, ifUnchanged expected: [UInt8]?) throws -> Bool {
        meanwhile?(self)
        if let failSaves { throw failSaves }
        return lock.withLock {
            guard items[credential.id]?.fingerprint == expected else { return false }
            items[credential.id] = credential
            revisions[credential.id, default: 0] += 1
            return true
        }
    }

    public func delete(_ id: CredentialID, ifUnchanged expected: [UInt8]) throws -> Bool {
        meanwhile?(self)
        return lock.withLock {
            guard let current = items[id], current.fingerprint == expected else { return false }
            items[id] = nil
            revisions[id, default: 0] += 1
            return true
        }
    }

    public func withRenewalLock<T>(_ id: CredentialID, _ body: () throws -> T) throws -> T {
        try lock.withLock { try body() }
    }
}
