import Dispatch
import FoundationEssentials
import Glibc

/// The fleet backend (docs/fleet.md): credentials in an etcd v3 cluster, sealed on
/// the client so etcd never sees a token, a service or an account name.
///
/// Under the prefix P:
/// - `P kdf` — Argon2id parameters, salt and a key check (JSON);
/// - `P c/HEX` — one credential; HEX is a keyed BLAKE2b of service and
///   account, the value `TVE1 ‖ nonce ‖ XChaCha20-Poly1305(padded entry)`
///   with the key name, its create revision and its version as associated
///   data: a value copied to another key, put back later, or restored after
///   a delete no longer opens (74);
/// - `P lock/HEX/…` — the fleet lock of one credential (etcd's lock service).
///
/// A new key is created in two steps: a placeholder (sealed for version 1 and
/// create revision 0, read as "nothing stored"), then the record sealed for the
/// create revision etcd assigned. Every write is a transaction on the record's
/// mod revision (and, while a refresh holds it, on the fleet lock's key).
public final class EtcdStore: SharedStore {
    public let name = "etcd"
    public let settings: EtcdSettings
    let client: EtcdClient
    let passphrase: PassphraseSource
    let keyCache: KeyCache
    /// The agent's decoded records (nil in a command).
    let decoded: DecodedRecords?
    let keyTTL: Int
    let newParams: KDFParams
    /// How the passphrase becomes the fleet key: Argon2id, or a test's that remembers.
    let derivation: KeyDerivation
    /// Warnings that do not stop the command (a fleet lock lost mid-refresh).
    public private(set) var warnings: [String] = []

    struct Unlocked {
        var key: SecureBytes
        var names: SecureBytes
        var kdfValue: [UInt8]
    }
    var unlocked: Unlocked?

    /// What was last read of a credential's key: its etcd revisions and record.
    struct Slot {
        var kv: EtcdKeyValue?
        var credential: Credential?
    }
    private var slots: [CredentialID: Slot] = [:]
    /// Fleet locks this process holds: the lock key and its create revision.
    private var held: [CredentialID: (key: [UInt8], createRevision: Int64)] = [:]

    /// `clients`: the agent's, where it keeps one connection per fleet (nil:
    /// a client of its own); `decoded`: the agent's decoded records;
    /// `derivation`: the key's.
    public init(
        settings: EtcdSettings, passphrase: PassphraseSource, keyCache: KeyCache, keyTTL: Int, newParams: KDFParams,
        clients: EtcdClients? = nil, decoded: DecodedRecords? = nil, derivation: KeyDerivation = .argon2id
    ) {
        self.derivation = derivation
        self.decoded = decoded
        self.settings = settings
        self.client = clients?.client(settings) ?? EtcdClient(settings: settings)
        self.passphrase = passphrase
        self.keyCache = keyCache
        self.keyTTL = keyTTL
        self.newParams = newParams
    }

    var prefix: [UInt8] { Array(settings.prefix.utf8) }
    var kdfKey: [UInt8] { prefix + Array("kdf".utf8) }
    var recordsPrefix: [UInt8] { prefix + Array("c/".utf8) }

    // MARK: CredentialStore

    public func load(_ id: CredentialID) throws -> Credential? {
        try read(id).credential
    }

    public func list() throws -> [Credential] {
        guard try unlock(creating: false) != nil else { return [] }
        return try client.list(prefix: recordsPrefix).compactMap { kv in try open(kv, expecting: nil) }
    }

    public func save(_ credential: Credential) throws {
        try untilSettled(credential.id, while: "written to etcd") {
            try write(credential, over: try read(credential.id, creating: true)) ? () : nil
        }
    }

    @discardableResult
    public func delete(_ id: CredentialID) throws -> Bool {
        try untilSettled(id, while: "deleted from etcd") {
            let slot = try read(id)
            guard slot.kv != nil else { return false }
            return try remove(id, over: slot) ? slot.credential != nil : nil
        }
    }

    // MARK: SharedStore

    public func save(_ credential: Credential, ifUnchanged expected: [UInt8]?) throws -> Bool {
        try unlock(creating: true)
        let slot = try slot(credential.id, fingerprint: expected, creating: true)
        guard let slot else { return false }
        return try write(credential, over: slot)
    }

    public func delete(_ id: CredentialID, ifUnchanged expected: [UInt8]) throws -> Bool {
        guard let slot = try slot(id, fingerprint: expected, creating: false), slot.kv != nil else { return false }
        return try remove(id, over: slot)
    }

    /// Holds the fleet lock of `id` (docs/fleet.md): etcd's lock service, bound to a
    /// lease of this process that a thread keeps alive while `body` runs. A
    /// process that dies releases it within `lease_ttl`.
    public func withRenewalLock<T>(_ id: CredentialID, _ body: () throws -> T) throws -> T {
        guard try unlock(creating: false) != nil, let names = unlocked?.names else { return try body() }
        let lockName = prefix + Array("lock/".utf8) + Array(Hex.encode(Sodium.hash(idBytes(id), key: names)).utf8)
        for _ in 0..<3 {
            let lease = try client.grantLease(ttl: settings.leaseTTL)
            let keeper = LeaseKeeper(client: client, lease: lease, ttl: settings.leaseTTL)
            let key: [UInt8]
            do {
                // A waiter waits for one refresh (bounded by the provider timeout) or a dead holder's lease.
                key = try client.lock(lockName, lease: lease, wait: max(60, settings.leaseTTL * 2 + 35))
                // etcd 3.4 can hand the lock to a waiter whose lease has just expired:
                // hold it only when the lock key exists and carries our live lease.
                guard let kv = try client.get(key), kv.lease == lease else {
                    keeper.stop()
                    client.revokeLease(lease)
                    continue
                }
                held[id] = (key, kv.createRevision)
            } catch {
                keeper.stop()
                client.revokeLease(lease)
                throw error
            }
            defer {
                held[id] = nil
                keeper.stop()
                client.unlock(key)
                client.revokeLease(lease)
            }
            return try body()
        }
        throw TokenVaultError.temporary(
            "could not take the fleet lock for \(id): etcd granted it to expired leases three times")
    }

    // MARK: Reading

    private func idBytes(_ id: CredentialID) -> [UInt8] { Array("\(id.service)\n\(id.account)".utf8) }

    func recordKey(_ id: CredentialID, names: SecureBytes) -> [UInt8] {
        recordsPrefix + Array(Hex.encode(Sodium.hash(idBytes(id), key: names)).utf8)
    }

    /// The slot of `id` when it holds exactly the record of `fingerprint`
    /// (nil: nothing stored), from the last read if it still says so, else
    /// read again.
    private func slot(_ id: CredentialID, fingerprint: [UInt8]?, creating: Bool) throws -> Slot? {
        if let s = slots[id], s.credential?.fingerprint == fingerprint { return s }
        let s = try read(id, creating: creating)
        return s.credential?.fingerprint == fingerprint ? s : nil
    }

    /// Reads `id`. With a cached key, one round trip reads the key record and
    /// the credential together.
    func read(_ id: CredentialID, creating: Bool = false) throws -> Slot {
        if unlocked == nil, let cached = cachedKey() {
            let key = recordKey(id, names: cached.names)
            let (_, ranges) = try client.txn([], success: [.range(kdfKey), .range(key)], readOnly: true)
            if let kdf = ranges.first?.first,
                kdf.value == cached.kdfValue || (try? checkKey(cached.key, kdf.value)) == true
            {
                unlocked = Unlocked(key: cached.key, names: cached.names, kdfValue: kdf.value)
                return try remember(id, ranges.count > 1 ? ranges[1].first : nil)
            }
        }
        guard try unlock(creating: creating) != nil, let u = unlocked else {
            slots[id] = Slot()
            return Slot()
        }
        return try remember(id, try client.get(recordKey(id, names: u.names)))
    }

    private func remember(_ id: CredentialID, _ kv: EtcdKeyValue?) throws -> Slot {
        let s = Slot(kv: kv, credential: try kv.flatMap { try open($0, expecting: id) })
        slots[id] = s
        return s
    }

    // MARK: Sealing

    static let magic = Array("TVE1".utf8)
    static let padBlock = 256

    static func associatedData(key: [UInt8], createRevision: Int64, version: Int64) -> [UInt8] {
        Array("tokenvault-etcd-v1\0".utf8) + key + [0] + Array("\(createRevision)\0\(version)".utf8)
    }

    private func seal(_ entry: [UInt8], key: [UInt8], createRevision: Int64, version: Int64) throws -> [UInt8] {
        guard let u = unlocked else { throw TokenVaultError.internal("etcd store sealed without a key") }
        var plain = entry
        Sodium.pad(&plain, blockSize: Self.padBlock)
        defer { Sodium.wipe(&plain) }
        let nonce = Sodium.randomBytes(Sodium.nonceBytes)
        return Self.magic + nonce
            + Sodium.seal(
                plain, ad: Self.associatedData(key: key, createRevision: createRevision, version: version),
                nonce: nonce, key: u.key)
    }

    static func entry(_ c: Credential) throws -> [UInt8] {
        let s = Array(c.service.description.utf8), a = Array(c.account.utf8)
        guard s.count < 1 << 16, a.count < 1 << 16 else {
            throw TokenVaultError.badInput("the service or account name is too long")
        }
        return [1, UInt8(s.count & 0xff), UInt8(s.count >> 8)] + s + [UInt8(a.count & 0xff), UInt8(a.count >> 8)] + a
            + Array(c.recordJSON())
    }

    private func tampered(_ kv: EtcdKeyValue, _ why: String) -> TokenVaultError {
        let shown = String(decoding: kv.key, as: UTF8.self)
        return TokenVaultError.vault(
            "the etcd value \(Quoted.text(shown)) \(why); refused",
            hint: "restore it from a backup, or delete it and log in again")
    }

    /// The credential in `kv`; nil for a placeholder. 74 for anything that
    /// does not open under this key name, create revision and version.
    private func open(_ kv: EtcdKeyValue, expecting id: CredentialID?) throws -> Credential? {
        guard let u = unlocked else { throw TokenVaultError.internal("etcd store opened without a key") }
        let head = Self.magic.count, nonceEnd = head + Sodium.nonceBytes
        guard kv.value.count >= nonceEnd + Sodium.tagBytes, Array(kv.value[0..<head]) == Self.magic else {
            throw tampered(kv, "is not a tokenvault record")
        }
        let ad = Self.associatedData(
            key: kv.key, createRevision: kv.version == 1 ? 0 : kv.createRevision, version: kv.version)
        guard
            var plain = Sodium.open(kv.value[nonceEnd...], ad: ad, nonce: Array(kv.value[head..<nonceEnd]), key: u.key)
        else {
            throw tampered(kv, "does not authenticate: changed, copied from another key, or an old value put back")
        }
        defer { Sodium.wipe(&plain) }
        guard let n = Sodium.unpad(plain, blockSize: Self.padBlock), n >= 1 else {
            throw tampered(kv, "has bad padding")
        }
        if plain[0] == 0 { return nil }
        guard plain[0] == 1, n >= 5 else { throw tampered(kv, "has an unknown entry kind") }
        let sLen = Int(plain[1]) | Int(plain[2]) << 8
        guard 3 + sLen + 2 <= n else { throw tampered(kv, "is cut short") }
        let service = String(decoding: plain[3..<3 + sLen], as: UTF8.self)
        let aAt = 3 + sLen
        let aLen = Int(plain[aAt]) | Int(plain[aAt + 1]) << 8
        guard aAt + 2 + aLen <= n else { throw tampered(kv, "is cut short") }
        let account = String(decoding: plain[aAt + 2..<aAt + 2 + aLen], as: UTF8.self)
        guard let key = try? ServiceKey(parsing: service) else { throw tampered(kv, "names a bad service") }
        let found = CredentialID(service: key, account: account)
        if let id, id != found { throw tampered(kv, "holds another credential") }
        guard recordKey(found, names: u.names) == kv.key else {
            throw tampered(kv, "is stored under another credential's key")
        }
        let record = Data(plain[aAt + 2 + aLen..<n])
        // A listing shows a record that authenticates but cannot be read, and goes on.
        return id == nil
            ? Credential.listed(record, id: found, decoded: decoded)
            : try Credential.fromRecord(record, id: found, decoded: decoded)
    }

    // MARK: Writing

    /// Writes `c` over what `slot` read; false when the key changed since.
    private func write(_ c: Credential, over slot: Slot) throws -> Bool {
        guard let u = unlocked else { throw TokenVaultError.internal("etcd store written without a key") }
        let key = recordKey(c.id, names: u.names)
        var base = slot.kv
        if base == nil {
            // Step 1: a placeholder, so the record can be sealed for its create revision.
            let placeholder = try seal([0], key: key, createRevision: 0, version: 1)
            guard try transact(key, expected: nil, put: placeholder, lockOf: nil) else {
                _ = try read(c.id)
                return false
            }
            base = try client.get(key)
            guard let b = base, b.value == placeholder else { return false }
        }
        guard let base else { return false }
        // etcd's numbers come from outside: a version with no successor is a damaged answer, not a crash.
        let (version, overflow) = base.version.addingReportingOverflow(1)
        guard !overflow, base.version >= 1, base.createRevision >= 1 else {
            throw tampered(
                base, "has an impossible version (\(base.version)) or create revision (\(base.createRevision))")
        }
        let value = try seal(try Self.entry(c), key: key, createRevision: base.createRevision, version: version)
        if try transact(key, expected: base, put: value, lockOf: c.id) {
            slots[c.id] = nil  // its new mod revision is unknown: the next conditional write reads again
            return true
        }
        _ = try read(c.id)
        return false
    }

    private func remove(_ id: CredentialID, over slot: Slot) throws -> Bool {
        guard let kv = slot.kv else { return false }
        let done = try transact(kv.key, expected: kv, put: nil, lockOf: nil)
        slots[id] = nil
        return done
    }

    /// One conditional put (or delete, with `put` nil) of `key`: only while its
    /// mod revision is `expected`'s (absent when nil), and, when `lockOf` is a
    /// credential whose fleet lock we hold, while that lock key still exists.
    /// An answer that never came is resolved by reading the key back.
    private func transact(
        _ key: [UInt8], expected: EtcdKeyValue?, put value: [UInt8]?, lockOf id: CredentialID?
    ) throws -> Bool {
        var compare: [EtcdCompare] = [expected.map { .modRevision(key, $0.modRevision) } ?? .createRevision(key, 0)]
        let lock = id.flatMap { held[$0] }
        if let lock { compare.append(.createRevision(lock.key, lock.createRevision)) }
        let op: EtcdOp = value.map { .put(key, $0) } ?? .delete(key)
        for _ in 0..<10 {
            do {
                let (ok, ranges) = try client.txn(
                    compare, success: [op], failure: [.range(key)] + (lock.map { [.range($0.key)] } ?? []))
                if ok { return true }
                let now = ranges.first?.first
                if let lock, now?.modRevision == expected?.modRevision, now != nil || expected == nil,
                    ranges.count > 1, ranges[1].first?.createRevision != lock.createRevision
                {
                    // Our lease ran out while we renewed, yet nobody wrote since: the
                    // provider's answer is the newest truth, so store it (docs/fleet.md).
                    warnings.append(
                        "the fleet lock for \(id.map { "\($0)" } ?? "a credential") expired during the refresh (lease_ttl \(settings.leaseTTL) s is too short for this provider?); the result was stored anyway, since no one else wrote"
                    )
                    compare.removeLast()
                    held[id!] = nil
                    continue
                }
                return false
            } catch let ambiguous as EtcdAmbiguous {
                // Did it land? Read until the cluster answers.
                let now = try client.get(key)
                if let value, now?.value == value { return true }
                if value == nil, now == nil, expected != nil { return true }
                if now?.modRevision != expected?.modRevision || (now == nil) != (expected == nil) { return false }
                _ = ambiguous  // not applied: send it again
            }
        }
        throw TokenVaultError.temporary(
            "etcd did not settle a write of \(Quoted.text(String(decoding: key, as: UTF8.self))); nothing was lost, try again"
        )
    }
}

/// Keeps a lease alive from a thread of its own until stopped.
final class LeaseKeeper: @unchecked Sendable {
    private let stopped = DispatchSemaphore(value: 0)

    init(client: EtcdClient, lease: Int64, ttl: Int) {
        let interval = max(Double(ttl) / 3, 0.5)
        Posix.spawnThread { [stopped] in
            while stopped.wait(timeout: .now() + interval) == .timedOut {
                if (try? client.keepAlive(lease)) == false { break }
            }
        }
    }

    func stop() {
        stopped.signal()
    }
}
