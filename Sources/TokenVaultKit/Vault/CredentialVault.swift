import Dispatch
import FoundationEssentials
import Glibc

/// When a write may land.
public enum WriteCondition: Equatable, Sendable {
    /// Whatever is stored (a `set`, a `login`, a `delete` by the user).
    case always
    /// Only while the stored record is exactly the one that was read (its
    /// `fingerprint`): a refresh, a refusal mark, a migration. `nil`: only
    /// while nothing is stored. A record deleted and made again, even with the
    /// same generation, is another record.
    case unchanged(fingerprint: [UInt8]?)

    /// The condition for a write computed from `read`.
    public static func computed(from read: Credential?) -> WriteCondition { .unchanged(fingerprint: read?.fingerprint) }

    /// Whether `current` (what is stored now) lets the write land.
    func holds(for current: Credential?) -> Bool {
        guard case .unchanged(let fingerprint) = self else { return true }
        return current?.fingerprint == fingerprint
    }
}

/// The one way credentials are written. Each write takes the credential's
/// record lock, re-reads it, checks the condition and stores the next
/// generation; so a write computed from a read never lands on a record that
/// changed in between (a refresh does not bring back a credential deleted
/// meanwhile, nor overwrite a `set` made while it talked to the provider).
/// A record that cannot be written is kept in a spool and written by the next run.
public final class CredentialVault {
    public let store: CredentialStore
    /// Private directory of the lock and spool files.
    public let runtimeDirectory: String
    /// Things the user should know that do not stop the command.
    public private(set) var notices: [String] = []

    public init(store: CredentialStore, runtimeDirectory: String) {
        self.store = store
        self.runtimeDirectory = runtimeDirectory
    }

    // MARK: Reading

    public func load(_ id: CredentialID) throws -> Credential? { try locate(id)?.credential }

    /// The stored credential, after writing a spooled record left by an
    /// earlier run that could not store it.
    public func locate(_ id: CredentialID) throws -> StoredCredential? {
        guard spool.exists(id) else { return try store.locate(id) }
        // Read after the spool is settled: another host may have written meanwhile.
        return try reconcileSpool(id) ?? store.locate(id)
    }

    /// Every credential; the client registrations kept beside them are not credentials.
    public func listLocated() throws -> [StoredCredential] {
        try store.listLocated().filter { !$0.credential.id.isRegistration }
    }
    public func listIDs() throws -> [CredentialID] { try store.listIDs().filter { !$0.isRegistration } }

    // MARK: Writing

    /// Stores `credential` as the next generation if `condition` holds. Returns
    /// the record as stored, or nil when the condition failed (nothing written).
    @discardableResult
    public func write(_ credential: Credential, if condition: WriteCondition = .always) throws -> Credential? {
        try withRecordLock(credential.id) { try writeHoldingLock(credential, if: condition) }
    }

    /// Makes sure a write can land before anything is sent whose answer must be stored.
    public func prepareToWrite() throws { try store.prepareToWrite() }

    /// Deletes if `condition` holds; true when something was deleted.
    @discardableResult
    public func delete(_ id: CredentialID, if condition: WriteCondition = .always) throws -> Bool {
        try withRecordLock(id) {
            if let shared = store as? SharedStore {
                return try untilSettled(id, while: "deleted") {
                    let current = try shared.load(id)
                    guard condition.holds(for: current), let current else { return false }
                    guard try shared.delete(id, ifUnchanged: current.fingerprint) else { return nil }
                    spool.remove(id)
                    return true
                }
            }
            // A delete whatever is stored reads nothing: an unreadable record can be deleted too.
            if condition != .always, !condition.holds(for: try store.load(id: id)) { return false }
            spool.remove(id)
            return try store.delete(id)
        }
    }

    /// Runs `body` holding the credential's renewal lock: one per host (a
    /// file lock), and, on a store several hosts share, one for the fleet
    /// inside it, so only the first process of each host asks the cluster.
    /// `settled` runs first under the host's lock alone: what it returns (a
    /// renewal another process of this host or of the fleet finished while this
    /// one waited) is the answer, and the fleet's lock is not taken for it
    /// (docs/fleet.md: processes of a host that want one renewal read it once).
    public func withRenewalLock<T>(
        _ id: CredentialID, settled: (() throws -> T?)? = nil, _ body: () throws -> T
    ) throws -> T {
        try PrivateDirectory.ensure(runtimeDirectory)
        return try FileLock.holding(lockPath("refresh", id)) {
            if let settled, let done = try settled() { return done }
            if let shared = store as? SharedStore { return try shared.withRenewalLock(id, body) }
            // The same lock beside a file vault, for processes with another runtime directory.
            guard let directory = store.sharedLockDirectory, access(directory, W_OK) == 0 else { return try body() }
            return try FileLock.holding(directory + "/.refresh-" + CredentialVault.fileName(id) + ".lock", body)
        }
    }

    /// Runs `body` holding the credential's record lock, which every write of
    /// it by any tokenvault process holds too. `body` must not write through
    /// this vault (the lock is not re-entrant); it uses the stores directly.
    public func withRecordLock<T>(_ id: CredentialID, _ body: () throws -> T) throws -> T {
        try PrivateDirectory.ensure(runtimeDirectory)
        return try FileLock.holding(lockPath("record", id), body)
    }

    /// The path of a per-credential lock file (`record`, `refresh`).
    public func lockPath(_ kind: String, _ id: CredentialID) -> String {
        runtimeDirectory + "/\(kind)-" + CredentialVault.fileName(id) + ".lock"
    }

    private func writeHoldingLock(_ credential: Credential, if condition: WriteCondition) throws -> Credential? {
        if let shared = store as? SharedStore {
            // Other hosts write too: each attempt is a compare-and-swap on what it read.
            // nil: the record changed since it was read (again); .some(nil): the condition failed.
            return try untilSettled(credential.id, while: "written") { () -> Credential?? in
                let current = try shared.load(credential.id)
                guard condition.holds(for: current) else { return .some(nil) }
                let next = nextGeneration(credential, after: current)
                guard try shared.save(next, ifUnchanged: current?.fingerprint) else { return nil }
                spool.remove(credential.id)
                return .some(next)
            }
        }
        let current = try store.load(id: credential.id)
        guard condition.holds(for: current) else { return nil }
        let next = nextGeneration(credential, after: current)
        try store.save(next)
        // Durable before it is answered (docs/design.md, "The write path"): the
        // store gives the record back before anyone is told it is stored. One
        // that does not is a write that failed: a renewal then goes to the spool.
        guard let back = try store.load(id: credential.id), back.fingerprint == next.fingerprint else {
            throw TokenVaultError.backendUnavailable(
                "the \(store.name) store did not give back the record of \(credential.id) just written to it")
        }
        spool.remove(credential.id)
        return next
    }

    /// `credential` numbered as the write after `current`. A record with
    /// nothing before it starts at the time in microseconds, never at 1: a
    /// delete keeps no counter, and a record made after one must not take a
    /// number an old record (or a spool computed from it) had.
    private func nextGeneration(_ credential: Credential, after current: Credential?) -> Credential {
        var next = credential
        next.foreignItem = false  // what tokenvault writes is its own item
        let (after, overflow) = max(current?.generation ?? 0, credential.generation).addingReportingOverflow(1)
        next.generation = overflow ? Int64.max : after
        if let current {
            next.updatedAt = max(next.updatedAt, current.updatedAt)
        } else {
            next.generation = max(next.generation, Self.microsecondsNow())
        }
        return next
    }

    static func microsecondsNow() -> Int64 {
        Int64(Date().timeIntervalSince1970 * 1_000_000)
    }

    // MARK: Spool

    /// Keeps `credential` (a refresh's result the store refused, e.g. on a full
    /// disk: the provider has already rotated the refresh token) in a 0600 file
    /// of the runtime directory, for the next run to write. True when kept.
    public func keepInSpool(_ credential: Credential, computedFrom read: WriteCondition) -> Bool {
        guard case .unchanged(let fingerprint) = read else { return false }
        do {
            try PrivateDirectory.ensure(runtimeDirectory)
            try spool.put(credential, readFingerprint: fingerprint)
            return true
        } catch {
            return false
        }
    }

    var spool: Spool { Spool(directory: runtimeDirectory + "/spool") }

    /// Writes the spooled record when the stored one is still exactly the one
    /// it was computed from; drops it when someone wrote since (a newer write
    /// always wins over a spool). Returns what now holds.
    private func reconcileSpool(_ id: CredentialID) throws -> StoredCredential? {
        try withRecordLock(id) {
            guard let entry = spool.get(id) else { return nil }
            let current = try store.load(id: id)
            func drop() -> StoredCredential? {
                spool.remove(id)
                notices.append(
                    "dropped the renewed record of \(id) that an earlier run kept in the spool: the stored record was replaced since (a login, a set or a delete), and the newer one wins; the refresh token in the dropped record may still be valid at the provider"
                )
                return nil
            }
            guard let read = entry.computedFrom, read.holds(for: current) else { return drop() }
            do {
                // Another host may write between this read and the swap: then it wins too.
                guard let written = try writeHoldingLock(entry.credential, if: read) else { return drop() }
                notices.append("wrote the record of \(id) kept in the spool by an earlier run that could not store it")
                return StoredCredential(credential: written, backend: store.name)
            } catch {
                notices.append("the record of \(id) is still in the spool (\(error.errorText)); using it")
                return StoredCredential(credential: entry.credential, backend: "spool")
            }
        }
    }

    static func fileName(_ id: CredentialID) -> String {
        Hex.encode(Sodium.hash(Array("\(id.service)\n\(id.account)".utf8)))
    }
}

/// Records that could not be stored, one 0600 file per credential, each with
/// the fingerprint of the record it was computed from.
struct Spool {
    let directory: String

    struct Entry {
        var credential: Credential
        /// The condition its write waits for; nil for an entry that does not
        /// say exactly what it was computed from (an older version's): dropped.
        var computedFrom: WriteCondition?
    }

    private func path(_ id: CredentialID) -> String { directory + "/" + CredentialVault.fileName(id) + ".json" }

    func exists(_ id: CredentialID) -> Bool {
        var st = stat()
        return lstat(path(id), &st) == 0
    }

    /// `readFingerprint`: of the record the entry was computed from; nil when nothing was stored.
    func put(_ c: Credential, readFingerprint: [UInt8]?) throws {
        try PrivateDirectory.ensure(directory)
        let entry: [String: JSONValue] = [
            "record": .string(String(decoding: c.recordJSON(), as: UTF8.self)),
            "computed_from": readFingerprint.map { .string(Hex.encode($0)) } ?? .null,
        ]
        try AtomicFile.replace(path(c.id), with: Array(JSONValue.object(entry).text.utf8), what: "the spool entry")
    }

    func get(_ id: CredentialID) -> Entry? {
        guard let data = FileManager.default.contents(atPath: path(id)),
            let value = JSONValue.parsed(data), case .object(let o) = value,
            let record = o["record"]?.string, let c = try? Credential.fromRecord(Data(record.utf8), id: id)
        else { return nil }
        switch o["computed_from"] {
        case .string(let hex)?:
            return Entry(credential: c, computedFrom: Hex.decode(hex).map { .unchanged(fingerprint: $0) })
        case .null?: return Entry(credential: c, computedFrom: .unchanged(fingerprint: nil))
        default: return Entry(credential: c, computedFrom: nil)
        }
    }

    func remove(_ id: CredentialID) {
        if exists(id) { unlink(path(id)) }
    }
}

extension CredentialStore {
    /// `load`, spelled so `CredentialVault` cannot call its own by mistake.
    func load(id: CredentialID) throws -> Credential? { try load(id) }
}
