import Foundation

/// A credential and the backend it was found in.
public struct StoredCredential: Sendable, Equatable {
    public var credential: Credential
    public var backend: String
}

/// Where credentials live. One implementation per backend, plus an
/// in-memory double for tests.
public protocol CredentialStore: AnyObject {
    /// A short name for messages: "secret-service", "file".
    var name: String { get }
    /// What could not be looked at, when a lookup came back empty-handed.
    var uncheckedNote: String? { get }
    func load(_ id: CredentialID) throws -> Credential?
    func locate(_ id: CredentialID) throws -> StoredCredential?
    func listLocated() throws -> [StoredCredential]
    /// Which credentials exist, loading as little as the backend allows.
    func listIDs() throws -> [CredentialID]
    func save(_ credential: Credential) throws
    /// True when something was deleted.
    @discardableResult func delete(_ id: CredentialID) throws -> Bool
    func list() throws -> [Credential]
}

extension CredentialStore {
    public var uncheckedNote: String? { nil }

    public func locate(_ id: CredentialID) throws -> StoredCredential? {
        try load(id).map { StoredCredential(credential: $0, backend: name) }
    }

    public func listLocated() throws -> [StoredCredential] {
        try list().map { StoredCredential(credential: $0, backend: name) }
    }

    public func listIDs() throws -> [CredentialID] { try list().map(\.id) }
}

/// A store in memory: the test double.
public final class MemoryStore: CredentialStore, @unchecked Sendable {
    public let name: String
    private var items: [CredentialID: Credential] = [:]
    private let lock = NSLock()

    public init(name: String = "memory") { self.name = name }

    public func load(_ id: CredentialID) throws -> Credential? { lock.withLock { items[id] } }
    public func save(_ credential: Credential) throws { lock.withLock { items[credential.id] = credential } }
    public func delete(_ id: CredentialID) throws -> Bool { lock.withLock { items.removeValue(forKey: id) != nil } }
    public func list() throws -> [Credential] { lock.withLock { items.values.sorted { $0.id < $1.id } } }
}
