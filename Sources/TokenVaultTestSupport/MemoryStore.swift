import Foundation
import TokenVaultKit

/// A store in memory: the test double behind the `CredentialStore` protocol.
public final class MemoryStore: CredentialStore, @unchecked Sendable {
    public let name: String
    private var items: [CredentialID: Credential] = [:]
    private let lock = NSLock()
    /// When set, every save fails with it (a full disk, a locked keyring).
    public var failSaves: TokenVaultError?

    public init(name: String = "memory") { self.name = name }

    public func load(_ id: CredentialID) throws -> Credential? { lock.withLock { items[id] } }

    public func save(_ credential: Credential) throws {
        if let failSaves { throw failSaves }
        lock.withLock { items[credential.id] = credential }
    }

    public func delete(_ id: CredentialID) throws -> Bool { lock.withLock { items.removeValue(forKey: id) != nil } }
    public func list() throws -> [Credential] { lock.withLock { items.values.sorted { $0.id < $1.id } } }
}
