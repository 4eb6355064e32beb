import Dispatch
import FoundationEssentials
import Glibc

/// A credential and the backend it was found in.
public struct StoredCredential: Sendable, Equatable {
    public var credential: Credential
    public var backend: String

    public init(credential: Credential, backend: String) {
        self.credential = credential
        self.backend = backend
    }
}

/// Where credentials live: one implementation per backend (and an in-memory
/// double in the test support target). These are the backend's plain
/// operations; every write goes through `CredentialVault`, which checks it
/// against what was read.
public protocol CredentialStore: AnyObject {
    /// A short name for messages: "secret-service", "file".
    var name: String { get }
    /// What could not be looked at, when a lookup came back empty-handed.
    var uncheckedNote: String? { get }
    /// What makes the backend that was not checked checkable (unlock the file
    /// vault, reach the keyring): the next step of a lookup that found nothing.
    var uncheckedFix: String? { get }
    func load(_ id: CredentialID) throws -> Credential?
    func locate(_ id: CredentialID) throws -> StoredCredential?
    func listLocated() throws -> [StoredCredential]
    /// Which credentials exist, loading as little as the backend allows.
    func listIDs() throws -> [CredentialID]
    func save(_ credential: Credential) throws
    /// True when something was deleted.
    @discardableResult func delete(_ id: CredentialID) throws -> Bool
    func list() throws -> [Credential]
    /// What the store noticed on the way (auto fell back to the file vault,
    /// an etcd member did not answer), for the command to print once.
    var warnings: [String] { get }
    /// The store new credentials are written to ("secret-service", "file").
    var writesTo: String { get }
    /// Where processes that share this store but not a runtime directory
    /// (another `XDG_RUNTIME_DIR`, an agent of another session) take their
    /// renewal locks: the file vault's directory. Nil: the runtime directory's
    /// lock is all there is (the Secret Service is one session's), or the store
    /// orders renewals itself (etcd).
    var sharedLockDirectory: String? { get }
    /// What the store holds under `id` that is not tokenvault's and that it
    /// leaves alone (another application's Secret Service item), said for a
    /// message; nil when there is none.
    func foreignNote(_ id: CredentialID) -> String?
    /// Makes sure a write can land (the file vault's key at hand, asked for
    /// or derived now) before anything is sent whose answer must be stored:
    /// a one-use assertion is not spent on a result that is then dropped.
    func prepareToWrite() throws
}

extension CredentialStore {
    public var uncheckedNote: String? { nil }
    public var uncheckedFix: String? { nil }
    public var warnings: [String] { [] }
    public var writesTo: String { name }
    public var sharedLockDirectory: String? { nil }
    public func foreignNote(_ id: CredentialID) -> String? { nil }
    public func prepareToWrite() throws {}

    public func locate(_ id: CredentialID) throws -> StoredCredential? {
        try load(id).map { StoredCredential(credential: $0, backend: name) }
    }

    public func listLocated() throws -> [StoredCredential] {
        try list().map { StoredCredential(credential: $0, backend: name) }
    }

    public func listIDs() throws -> [CredentialID] { try list().map(\.id) }
}

/// Rounds of compare-and-swap on one record: `attempt` reads it and writes
/// on condition, and returns nil when the record changed in between. After
/// 20 rounds that lost, a temporary failure (75): others write it too fast.
func untilSettled<T>(_ id: CredentialID, while doing: String, _ attempt: () throws -> T?) throws -> T {
    for _ in 0..<20 {
        if let done = try attempt() { return done }
    }
    throw TokenVaultError.temporary("the record of \(id) kept changing while it was \(doing); try again")
}

/// A store several hosts write (etcd): no local lock orders its writers, so
/// it orders them itself, with conditional writes and a fleet-wide lock.
public protocol SharedStore: CredentialStore {
    /// Stores `credential` only while the stored record's fingerprint is
    /// `expected` (nil: nothing stored), in one atomic step. False: it changed
    /// meanwhile and nothing was written.
    func save(_ credential: Credential, ifUnchanged expected: [UInt8]?) throws -> Bool
    /// Deletes only while the stored record's fingerprint is `expected`.
    func delete(_ id: CredentialID, ifUnchanged expected: [UInt8]) throws -> Bool
    /// Runs `body` holding the credential's renewal lock for the whole fleet.
    func withRenewalLock<T>(_ id: CredentialID, _ body: () throws -> T) throws -> T
}
