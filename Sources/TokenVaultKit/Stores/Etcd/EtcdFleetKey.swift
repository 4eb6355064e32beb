import Dispatch
import FoundationEssentials
import Glibc

/// The fleet key of `EtcdStore`: derived from the passphrase and the `kdf`
/// record, checked, cached in the kernel keyring; and what `tokenvault
/// backend` reports of the cluster.
extension EtcdStore {
    // MARK: The fleet key

    fileprivate func cacheName() -> String {
        "etcd-"
            + Hex.encode(
                Sodium.hash(Array((settings.endpoints.sorted().joined(separator: ",") + "\n" + settings.prefix).utf8)))
    }

    fileprivate func namingKey(_ key: SecureBytes) -> SecureBytes {
        SecureBytes(Sodium.hash(Array("tokenvault etcd names v1".utf8), key: key, bytes: 32))
    }

    /// The cached key (key ‖ copy of the key record it was derived for).
    func cachedKey() -> Unlocked? {
        guard keyTTL > 0, let blob = keyCache.load(name: cacheName()), blob.count > Sodium.keyBytes else { return nil }
        let bytes = blob.bytes
        let key = SecureBytes(bytes[0..<Sodium.keyBytes])
        return Unlocked(key: key, names: namingKey(key), kdfValue: Array(bytes[Sodium.keyBytes...]))
    }

    fileprivate func cache(_ u: Unlocked, since generation: [UInt8]?) {
        var blob = u.key.bytes + u.kdfValue
        defer { Sodium.wipe(&blob) }
        keyCache.store(name: cacheName(), key: SecureBytes(blob), ttl: keyTTL, since: generation)
    }

    @discardableResult
    public func forgetCachedKey() -> Bool {
        unlocked = nil
        return keyCache.forget(name: cacheName())
    }

    struct KDFRecord {
        var params: KDFParams
        var salt: [UInt8]
        var check: [UInt8]

        init(params: KDFParams, salt: [UInt8], check: [UInt8]) {
            self.params = params
            self.salt = salt
            self.check = check
        }

        init(_ value: [UInt8]) throws {
            let damaged = TokenVaultError.vault(
                "the fleet's key record in etcd is damaged; refused",
                hint: "restore it from a backup; without it no credential under the prefix can be read")
            guard let v = JSONValue.parsed(Data(value)), case .object(let o) = v,
                o["format"]?.string == "tokenvault-etcd-kdf-1", o["alg"]?.string == "argon2id13",
                let ops = o["opslimit"]?.int64, let mem = o["memlimit"]?.int64, ops > 0, mem > 0,
                let salt = o["salt"]?.string.flatMap({ Data(base64Encoded: $0) }), salt.count == Sodium.saltBytes,
                let check = o["key_check"]?.string.flatMap({ Data(base64Encoded: $0) }), check.count == 16
            else { throw damaged }
            params = KDFParams(opsLimit: UInt64(ops), memLimit: UInt64(mem))
            guard params.isSane else {
                throw TokenVaultError.vault(
                    "the fleet's key record in etcd has absurd key-derivation parameters (opslimit \(ops), memlimit \(mem)); refused"
                )
            }
            self.salt = Array(salt)
            self.check = Array(check)
        }

        var value: [UInt8] {
            Array(
                JSONValue.object([
                    "format": .string("tokenvault-etcd-kdf-1"), "alg": .string("argon2id13"),
                    "opslimit": .integer(Int64(params.opsLimit)), "memlimit": .integer(Int64(params.memLimit)),
                    "salt": .string(Data(salt).base64EncodedString()),
                    "key_check": .string(Data(check).base64EncodedString()),
                ]).text.utf8)
        }
    }

    func checkKey(_ key: SecureBytes, _ kdfValue: [UInt8]) throws -> Bool {
        Sodium.equal(VaultFormat.keyCheck(key), try KDFRecord(kdfValue).check)
    }

    /// The fleet key: from this run, the cache, or the passphrase. Nil when
    /// the prefix has no key record and `creating` is false (nothing stored).
    @discardableResult
    func unlock(creating: Bool) throws -> SecureBytes? {
        if let u = unlocked { return u.key }
        let generation = keyCache.generation()
        let kdf = try client.get(kdfKey)
        if let kdf {
            let record = try KDFRecord(kdf.value)
            if let cached = cachedKey(), Sodium.equal(VaultFormat.keyCheck(cached.key), record.check) {
                unlocked = Unlocked(key: cached.key, names: cached.names, kdfValue: kdf.value)
                return cached.key
            }
            let key = try passphrase.unlock("the fleet vault in etcd (prefix \(settings.prefix))") {
                secret -> SecureBytes? in
                let key = try derivation.key(passphrase: secret, salt: record.salt, params: record.params)
                return Sodium.equal(VaultFormat.keyCheck(key), record.check) ? key : nil
            }
            let u = Unlocked(key: key, names: namingKey(key), kdfValue: kdf.value)
            unlocked = u
            cache(u, since: generation)
            return key
        }
        guard creating else { return nil }
        let secret = try passphrase.obtain(creating: true)
        let salt = Sodium.randomBytes(Sodium.saltBytes)
        let key = try derivation.key(passphrase: secret, salt: salt, params: newParams)
        let record = KDFRecord(params: newParams, salt: salt, check: VaultFormat.keyCheck(key))
        let (created, _) = try client.txn(
            [.createRevision(kdfKey, 0)], success: [.put(kdfKey, record.value)], readOnly: true)
        guard created else {
            // Another host created the fleet key at the same moment: use theirs.
            return try unlock(creating: false)
        }
        let u = Unlocked(key: key, names: namingKey(key), kdfValue: record.value)
        unlocked = u
        cache(u, since: generation)
        return key
    }

    // MARK: For `tokenvault backend`

    /// One endpoint as `tokenvault backend` shows it.
    public struct EndpointState: Sendable {
        public var endpoint: String
        /// False when it did not answer.
        public var reached: Bool
        /// "etcd 3.5.9, leader", or why it did not answer.
        public var state: String
        public var isLeader: Bool
    }

    /// Each endpoint's answer: version, whether it is the leader, or why not.
    public func endpointReport() -> [EndpointState] {
        settings.endpoints.map { e in
            do {
                let o = try client.status(of: e)
                // Member ids are uint64: compare them as the strings they come as.
                let leader = o["leader"]?.text
                var member: String?
                if case .object(let h)? = o["header"] { member = h["member_id"]?.text }
                let isLeader = leader != nil && leader == member
                let version =
                    "etcd \(OutsideText.line(o["version"]?.string ?? "?", limit: 40))" + (isLeader ? ", leader" : "")
                return EndpointState(endpoint: e, reached: true, state: version, isLeader: isLeader)
            } catch {
                return EndpointState(
                    endpoint: e, reached: false, state: "unreachable: \(error.errorText)", isLeader: false)
            }
        }
    }

    /// "present (argon2id, …)", "not created yet", or why it cannot be read.
    public func keyState() -> String {
        do {
            guard let kdf = try client.get(kdfKey) else { return "not created yet" }
            let r = try KDFRecord(kdf.value)
            let cached = cachedKey().map { Sodium.equal(VaultFormat.keyCheck($0.key), r.check) } ?? false
            return
                "present (argon2id, opslimit \(r.params.opsLimit), memlimit \(r.params.memLimit >> 20) MiB), key \(cached ? "cached" : "not cached")"
        } catch {
            return "unreadable: \(error.errorText)"
        }
    }
}
