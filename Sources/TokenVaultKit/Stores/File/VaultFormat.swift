import Dispatch
import FoundationEssentials
import Glibc

/// Argon2id cost, stored in the vault header.
public struct KDFParams: Equatable, Sendable {
    public var opsLimit: UInt64
    public var memLimit: UInt64

    public init(opsLimit: UInt64, memLimit: UInt64) {
        self.opsLimit = opsLimit
        self.memLimit = memLimit
    }

    public static var interactive: KDFParams {
        .init(opsLimit: Sodium.interactive.ops, memLimit: Sodium.interactive.mem)
    }
    public static var moderate: KDFParams { .init(opsLimit: Sodium.moderate.ops, memLimit: Sodium.moderate.mem) }
    public static var sensitive: KDFParams { .init(opsLimit: Sodium.sensitive.ops, memLimit: Sodium.sensitive.mem) }
    /// libsodium's minimum: only for tests, which make many vaults.
    public static var minimum: KDFParams { .init(opsLimit: Sodium.opsLimitMin, memLimit: Sodium.memLimitMin) }

    /// A cost by name (`TOKENVAULT_KDF_PROFILE`): interactive, moderate or
    /// sensitive, in any case; nil for another name.
    public static func named(_ name: String) -> KDFParams? {
        switch name.lowercased() {
        case "moderate": .moderate
        case "interactive": .interactive
        case "sensitive": .sensitive
        default: nil
        }
    }

    /// Stored parameters beyond these are refused before any memory is allocated:
    /// a tampered header must not make `get` allocate gigabytes or spin for minutes.
    /// libsodium's SENSITIVE cost, the most `TOKENVAULT_KDF_PROFILE` creates: the
    /// header checksum is unkeyed, so a crafted header could otherwise make every
    /// `get` spend gigabytes and many seconds before "wrong passphrase".
    public static let maxOpsLimit: UInt64 = Sodium.sensitive.ops
    public static let maxMemLimit: UInt64 = Sodium.sensitive.mem

    var isSane: Bool {
        (Sodium.opsLimitMin...KDFParams.maxOpsLimit).contains(opsLimit)
            && (Sodium.memLimitMin...KDFParams.maxMemLimit).contains(memLimit)
    }
}

/// The file vault's bytes (documented in docs/FORMAT.md):
///
///     0   8  magic "TKNVAULT"
///     8   1  format version (1)
///     9   1  KDF algorithm (2 = Argon2id v1.3, libsodium's crypto_pwhash_ALG_ARGON2ID13)
///     10  2  reserved, zero
///     12  4  opslimit, u32 little-endian
///     16  8  memlimit in bytes, u64 little-endian
///     24 16  salt
///     40 24  nonce (fresh for every write)
///     64 16  key check: BLAKE2b-128 keyed with the key, of "tokenvault key check v1"
///     80 16  header checksum: BLAKE2b-128 of bytes 0..<80
///     96  …  XChaCha20-Poly1305-IETF ciphertext and tag, additional data = bytes 0..<96
///
/// The plaintext is padded (ISO/IEC 7816-4, 512-byte blocks) and holds
/// `u32 count` entries of `u16 len, service, u16 len, account, u32 len, record JSON`.
public enum VaultFormat {
    static let magic = Array("TKNVAULT".utf8)
    static let version: UInt8 = 1
    static let headerBytes = 96
    static let padBlock = 512
    static let keyCheckMessage = Array("tokenvault key check v1".utf8)

    public struct Header: Equatable, Sendable {
        public var params: KDFParams
        public var salt: [UInt8]
        public var nonce: [UInt8]
        public var keyCheck: [UInt8]

        func bytes() -> [UInt8] {
            var b = VaultFormat.magic
            b += [VaultFormat.version, Sodium.argon2id13, 0, 0]
            b += withUnsafeBytes(of: UInt32(params.opsLimit).littleEndian, Array.init)
            b += withUnsafeBytes(of: params.memLimit.littleEndian, Array.init)
            b += salt + nonce + keyCheck
            b += Sodium.hash(b)
            return b
        }
    }

    static func corrupt(_ why: String) -> TokenVaultError {
        .vault(
            "the vault is corrupted or was tampered with (\(why)); nothing was read from it",
            hint: "restore the vault file from a backup, or move it away to start a new one")
    }

    /// Reads and checks the header; refuses absurd KDF parameters before any work.
    /// `file` holds at least the header; `fileSize` is the whole file's size.
    public static func parseHeader(_ file: [UInt8], fileSize: Int? = nil) throws -> Header {
        guard (fileSize ?? file.count) >= headerBytes + Sodium.tagBytes, file.count >= headerBytes else {
            throw corrupt("it is too short")
        }
        guard Array(file[0..<8]) == magic else { throw corrupt("not a tokenvault vault") }
        guard Sodium.equal(Sodium.hash(Array(file[0..<80])), Array(file[80..<96])) else {
            throw corrupt("the header checksum does not match")
        }
        guard file[8] == version else { throw corrupt("unknown format version \(file[8])") }
        guard file[9] == Sodium.argon2id13, file[10] == 0, file[11] == 0 else {
            throw corrupt("unknown key derivation")
        }
        let ops = file[12..<16].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let mem = file[16..<24].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let params = KDFParams(opsLimit: ops, memLimit: mem)
        guard params.isSane else { throw corrupt("absurd key-derivation parameters: opslimit \(ops), memlimit \(mem)") }
        return Header(
            params: params, salt: Array(file[24..<40]), nonce: Array(file[40..<64]), keyCheck: Array(file[64..<80]))
    }

    public static func keyCheck(_ key: SecureBytes) -> [UInt8] {
        Sodium.hash(keyCheckMessage, key: key)
    }

    public static func keyMatches(_ key: SecureBytes, header: Header) -> Bool {
        Sodium.equal(keyCheck(key), header.keyCheck)
    }

    /// Decrypts; every changed byte is refused as a whole.
    public static func open(_ file: [UInt8], header: Header, key: SecureBytes) throws -> VaultPlaintext {
        try open(SensitiveBuffer(copying: file), header: header, key: key)
    }

    /// Decrypts the vault in `buffer` in place (no second copy of a large vault).
    static func open(_ buffer: SensitiveBuffer, header: Header, key: SecureBytes) throws -> VaultPlaintext {
        guard keyMatches(key, header: header) else {
            throw TokenVaultError.permission("wrong passphrase for the vault", hint: PassphraseSource.checkSourcesHint)
        }
        let all = buffer.bytes
        guard all.count >= headerBytes + Sodium.tagBytes else { throw corrupt("it is too short") }
        let ad = Array(all[0..<headerBytes])
        let body = UnsafeMutableRawBufferPointer(rebasing: all[headerBytes...])
        guard let padded = Sodium.openInPlace(body, ad: ad, nonce: header.nonce, key: key) else {
            throw corrupt("authentication failed")
        }
        guard let length = Sodium.unpad(UnsafeRawBufferPointer(rebasing: body[0..<padded]), blockSize: padBlock) else {
            throw corrupt("bad padding")
        }
        return VaultPlaintext(storage: buffer, offset: headerBytes, length: length)
    }

    /// Encrypts `contents` under a fresh nonce.
    public static func seal(
        _ contents: VaultContents, key: SecureBytes, salt: [UInt8], params: KDFParams
    ) throws -> [UInt8] {
        let header = Header(
            params: params, salt: salt, nonce: Sodium.randomBytes(Sodium.nonceBytes), keyCheck: keyCheck(key))
        let ad = header.bytes()
        var plain = try contents.plaintext()
        defer { Sodium.wipe(&plain) }
        Sodium.pad(&plain, blockSize: padBlock)
        return ad + Sodium.seal(plain, ad: ad, nonce: header.nonce, key: key)
    }
}

/// The decrypted vault: entries kept as raw record bytes, decoded only when
/// asked, so a `get` among 10,000 credentials parses one record.
public struct VaultContents: Sendable {
    public struct Entry: Sendable {
        /// Kept as text: a lookup compares strings and parses nothing.
        public var service: String
        public var account: String
        public var record: [UInt8]

        func id() throws -> CredentialID {
            guard let key = try? ServiceKey(parsing: service) else { throw VaultFormat.corrupt("a bad service name") }
            return CredentialID(service: key, account: account)
        }
    }

    public private(set) var entries: [Entry] = []

    public init() {}

    init(_ plain: VaultPlaintext) throws {
        var entries: [Entry] = []
        try plain.forEachEntry { service, account, record in
            let bytes = plain.bytes
            entries.append(
                Entry(
                    service: String(decoding: bytes[service], as: UTF8.self),
                    account: String(decoding: bytes[account], as: UTF8.self),
                    record: Array(bytes[record])))
        }
        self.entries = entries
    }

    /// The entries as bytes. A length that does not fit its field is refused,
    /// never cut: a cut length would make every later entry unreadable.
    func plaintext() throws -> [UInt8] {
        var out = [UInt8]()
        func put(_ v: Int, _ bytes: Int, _ what: String) throws {
            guard v >= 0, v < 1 << (8 * bytes) else {
                Sodium.wipe(&out)
                throw TokenVaultError.badInput(
                    "\(what) is too long for the vault (\(v) bytes, at most \((1 << (8 * bytes)) - 1)); nothing was stored"
                )
            }
            for i in 0..<bytes { out.append(UInt8(truncatingIfNeeded: v >> (8 * i))) }
        }
        try put(entries.count, 4, "the number of credentials")
        for e in entries {
            let s = Array(e.service.utf8), a = Array(e.account.utf8)
            try put(s.count, 2, "the service name")
            out += s
            try put(a.count, 2, "the account name")
            out += a
            try put(e.record.count, 4, "the record")
            out += e.record
        }
        return out
    }

    public func credential(_ id: CredentialID, decoded: DecodedRecords? = nil) throws -> Credential? {
        // Compare the raw strings first: no record is decoded on the way.
        guard let i = index(of: id) else { return nil }
        return try Credential.fromRecord(Data(entries[i].record), id: id, decoded: decoded)
    }

    public func credentials() throws -> [Credential] {
        try entries.map { Credential.listed(Data($0.record), id: try $0.id()) }
    }

    public var ids: [CredentialID] { get throws { try entries.map { try $0.id() } } }

    private func index(of id: CredentialID) -> Int? {
        let service = id.service.description
        return entries.firstIndex(where: { $0.service == service && $0.account == id.account })
    }

    public mutating func put(_ c: Credential) {
        let entry = Entry(service: c.service.description, account: c.account, record: Array(c.recordJSON()))
        if let i = index(of: c.id) { entries[i] = entry } else { entries.append(entry) }
    }

    /// An entry that is no credential (an export's provider tables).
    mutating func putRaw(service: String, account: String, record: [UInt8]) {
        entries.append(Entry(service: service, account: account, record: record))
    }

    @discardableResult
    public mutating func remove(_ id: CredentialID) -> Bool {
        guard let i = index(of: id) else { return false }
        entries.remove(at: i)
        return true
    }
}

/// The decrypted, unpadded entries, not yet decoded. A lookup walks the bytes
/// and copies out one record: with 10,000 credentials a `get` builds no
/// strings or arrays for the other 9,999.
public struct VaultPlaintext: Sendable {
    let storage: SensitiveBuffer
    let offset: Int
    let length: Int

    /// The unpadded plaintext, valid while `storage` lives.
    var bytes: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: storage.base.advanced(by: offset).assumingMemoryBound(to: UInt8.self), count: length)
    }

    /// Calls `body` with each entry's raw service, account and record (as ranges
    /// into `bytes`), walking the whole structure even after `body` is satisfied,
    /// so a malformed plaintext is refused whatever is asked of it.
    func forEachEntry(_ body: (Range<Int>, Range<Int>, Range<Int>) -> Void) throws {
        let p = bytes
        do {
            var at = 0
            func int(_ n: Int) throws -> Int {
                guard n <= length - at else { throw VaultFormat.corrupt("an entry runs past the end") }
                var v = 0
                for i in stride(from: at + n - 1, through: at, by: -1) { v = v << 8 | Int(p[i]) }
                at += n
                return v
            }
            func take(_ n: Int) throws -> Range<Int> {
                guard n <= length - at else { throw VaultFormat.corrupt("an entry runs past the end") }
                defer { at += n }
                return at..<at + n
            }
            let count = try int(4)
            for _ in 0..<count {
                let service = try take(try int(2))
                let account = try take(try int(2))
                let record = try take(try int(4))
                body(service, account, record)
            }
            guard at == length else { throw VaultFormat.corrupt("trailing bytes") }
        }
    }

    /// The record stored for `id`, decoded; nil when there is none.
    public func credential(_ id: CredentialID, decoded: DecodedRecords? = nil) throws -> Credential? {
        let service = Array(id.service.description.utf8), account = Array(id.account.utf8)
        var found: Range<Int>?
        let p = bytes
        do {
            try forEachEntry { s, a, record in
                if found == nil, s.count == service.count, a.count == account.count,
                    memcmp(p.baseAddress! + s.lowerBound, service, s.count) == 0,
                    memcmp(p.baseAddress! + a.lowerBound, account, a.count) == 0
                {
                    found = record
                }
            }
        }
        return try found.map { try Credential.fromRecord(Data(p[$0]), id: id, decoded: decoded) }
    }

    public func contents() throws -> VaultContents { try VaultContents(self) }

    /// Overwrites the plaintext now (the storage also does when released).
    func wipe() { storage.wipe() }
}

/// Memory that held or holds plaintext: a private mapping of the vault file, or a
/// heap copy. Wiped, then unmapped or freed, when released.
final class SensitiveBuffer: @unchecked Sendable {
    let base: UnsafeMutableRawPointer
    let count: Int
    private let mapped: Bool

    var bytes: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(start: base, count: count) }

    init(copying source: [UInt8]) {
        base = malloc(max(source.count, 1))!
        count = source.count
        mapped = false
        source.withUnsafeBytes { if let s = $0.baseAddress { base.copyMemory(from: s, byteCount: source.count) } }
    }

    /// Maps `size` bytes of `fd` copy-on-write, so decrypting in place never touches the file.
    init(mapping fd: Int32, size: Int) throws {
        guard size > 0, let p = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_POPULATE, fd, 0),
            p != MAP_FAILED
        else {
            throw TokenVaultError.vault("cannot map the vault into memory: \(String(cString: strerror(errno)))")
        }
        base = p
        count = size
        mapped = true
    }

    func wipe() { Sodium.wipe(bytes) }

    deinit {
        wipe()
        if mapped { munmap(base, count) } else { free(base) }
    }
}
