import Dispatch
import FoundationEssentials
import Glibc

/// The encrypted file backend (docs/config.md): one file, 0600 in a 0700 directory,
/// sealed with a key derived from the passphrase.
public final class FileStore: CredentialStore {
    public let name = "file"
    public let path: String
    let directory: String
    let passphrase: PassphraseSource
    let keyCache: KeyCache
    let keyTTL: Int
    let newVaultParams: KDFParams
    /// How the passphrase becomes the key: Argon2id, or a test's that remembers.
    let derivation: KeyDerivation
    /// Where to reach the TPM instead of the place recorded when the key was
    /// sealed (`TOKENVAULT_TPM_TCTI`); nil: that place.
    let tpmTCTI: String?

    /// What this store noticed on the way (a TPM that did not unseal).
    public internal(set) var warnings: [String] = []

    /// The vault this run's head start opened (`Plan.startHeadStart`), for the first read.
    let headStart: HeadStart<VaultHeadStart.Opened>?
    /// The agent's decoded records (nil in a command).
    let decoded: DecodedRecords?

    /// The key, once derived or fetched from the cache, with the header it opened.
    var unlocked: (key: SecureBytes, salt: [UInt8], params: KDFParams)?

    /// Everything that changes what it does: `tpmTCTI` (where the TPM is),
    /// `headStart` (the vault opened while the command was parsed), `decoded`
    /// (the agent's decoded records), `derivation` (the key's).
    init(
        path: String, passphrase: PassphraseSource, keyCache: KeyCache, keyTTL: Int, newVaultParams: KDFParams,
        tpmTCTI: String? = nil, headStart: HeadStart<VaultHeadStart.Opened>? = nil, decoded: DecodedRecords? = nil,
        derivation: KeyDerivation = .argon2id
    ) {
        self.derivation = derivation
        self.tpmTCTI = tpmTCTI
        self.headStart = headStart
        self.decoded = decoded
        self.path = path
        self.directory = Posix.dirname(path)
        self.passphrase = passphrase
        self.keyCache = keyCache
        self.keyTTL = keyTTL
        self.newVaultParams = newVaultParams
    }

    public var exists: Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// What `doctor` says of the vault file, without asking for a passphrase.
    public struct Health: Sendable {
        public var exists: Bool
        /// Why it cannot be used (permissions, owner, damage); nil when it can.
        public var problem: TokenVaultError?
        public var formatVersion: Int?
        public var keyCached: Bool
        /// A key sealed by the TPM lies beside the vault.
        public var sealed = false
    }

    public func health() -> Health {
        guard exists else { return Health(exists: false, problem: nil, formatVersion: nil, keyCached: false) }
        do {
            let header = try readHeaderOnly()
            return Health(
                exists: true, problem: nil, formatVersion: Int(VaultFormat.version),
                keyCached: (try? cachedKey(for: header)) != nil,
                sealed: access(SealedKey.path(forVault: path), F_OK) == 0)
        } catch let error as TokenVaultError {
            return Health(exists: true, problem: error, formatVersion: nil, keyCached: false)
        } catch {
            return Health(exists: true, problem: .vault("\(error)"), formatVersion: nil, keyCached: false)
        }
    }

    /// True when opening needs nobody to type anything.
    public var canOpenQuietly: Bool {
        passphrase.isNonInteractive || (try? cachedKey(for: readHeaderOnly())) != nil
    }

    // MARK: CredentialStore

    public func load(_ id: CredentialID) throws -> Credential? {
        guard let plain = try readPlaintext() else { return nil }
        defer { plain.wipe() }
        return try plain.credential(id, decoded: decoded)
    }

    public func list() throws -> [Credential] {
        try readContents()?.credentials() ?? []
    }

    public func listIDs() throws -> [CredentialID] {
        try readContents()?.ids ?? []
    }

    public func save(_ credential: Credential) throws {
        try modify { $0.put(credential) }
    }

    public func prepareToWrite() throws {
        guard unlocked == nil else { return }
        if exists { _ = try readContents() } else { _ = try keyForNewVault() }
    }

    @discardableResult
    public func delete(_ id: CredentialID) throws -> Bool {
        guard exists else { return false }
        var removed = false
        try modify { removed = $0.remove(id) }
        return removed
    }

    /// Read-modify-write under the vault's lock, so concurrent writers lose nothing.
    public func modify(_ change: (inout VaultContents) throws -> Void) throws {
        try ensureDirectory()
        let lock = try FileLock(path: path + ".lock")
        defer { lock.release() }
        var contents = try readContents() ?? VaultContents()
        try change(&contents)
        try write(contents)
    }

    // MARK: Reading

    /// The decrypted vault, or nil when there is none yet.
    func readContents() throws -> VaultContents? {
        guard let plain = try readPlaintext() else { return nil }
        defer { plain.wipe() }
        return try plain.contents()
    }

    private func readPlaintext() throws -> VaultPlaintext? {
        guard let (fd, st) = try openVaultFile() else { return nil }
        defer { close(fd) }
        if let ahead = VaultHeadStart.take(headStart, path: path, st) {
            unlocked = (ahead.key, ahead.header.salt, ahead.header.params)
            return ahead.plain
        }
        let (buffer, header) = try mapped(fd, size: Int(st.st_size))
        return try VaultFormat.open(buffer, header: header, key: try key(for: header))
    }

    /// The vault opened with the cached key alone, for the read ahead
    /// (VaultHeadStart); nil when there is no vault or no cached key.
    func openWithCachedKey() throws -> VaultHeadStart.Opened? {
        guard let (fd, st) = try openVaultFile() else { return nil }
        defer { close(fd) }
        let (buffer, header) = try mapped(fd, size: Int(st.st_size))
        guard let key = try cachedKey(for: header) else { return nil }
        return VaultHeadStart.Opened(
            plain: try VaultFormat.open(buffer, header: header, key: key), key: key, header: header,
            identity: Posix.identity(st))
    }

    /// The vault file mapped privately, and its header.
    private func mapped(_ fd: Int32, size: Int) throws -> (SensitiveBuffer, VaultFormat.Header) {
        guard size >= VaultFormat.headerBytes + Sodium.tagBytes else { throw VaultFormat.corrupt("it is too short") }
        let buffer = try SensitiveBuffer(mapping: fd, size: size)
        return (buffer, try VaultFormat.parseHeader(Array(buffer.bytes[0..<VaultFormat.headerBytes]), fileSize: size))
    }

    func readHeaderOnly() throws -> VaultFormat.Header {
        guard let (fd, st) = try openVaultFile() else { throw TokenVaultError.notFound(service: "", account: "") }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: VaultFormat.headerBytes)
        let n = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, $0.count, 0) }
        guard n == head.count else { throw VaultFormat.corrupt("it is too short") }
        return try VaultFormat.parseHeader(head, fileSize: Int(st.st_size))
    }

    /// Opens the vault after the permission checks; nil when there is none.
    /// The checks look at the file that was opened (fstat), never at the name
    /// again: a writer renaming a new vault into place between a check and the
    /// open cannot make a reader fail, it only decides which vault it reads.
    private func openVaultFile() throws -> (Int32, stat)? {
        // O_NOFOLLOW refuses a symlink (ELOOP); O_NONBLOCK keeps a FIFO from hanging us.
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            switch errno {
            case ENOENT: return nil
            case ELOOP:
                throw TokenVaultError.permission(
                    "the vault \(path) is a symbolic link; refusing to follow it",
                    hint: "replace the link by the file itself, or point \(EnvironmentVariable.vault.name) at the file")
            default:
                throw TokenVaultError.vault("cannot open the vault \(path): \(String(cString: strerror(errno)))")
            }
        }
        var st = stat()
        do {
            guard fstat(fd, &st) == 0 else {
                throw TokenVaultError.vault("cannot read the vault \(path): \(String(cString: strerror(errno)))")
            }
            try checkDirectory()
            try checkVaultFile(st)
            guard Int(st.st_size) <= 1 << 30 else { throw VaultFormat.corrupt("it is larger than 1 GiB") }
        } catch {
            close(fd)
            throw error
        }
        return (fd, st)
    }

    // MARK: Writing

    /// Temp file, fsync, rename, fsync of the directory: a crash leaves the old or the new vault.
    private func write(_ contents: VaultContents) throws {
        let (key, salt, params) = try unlocked.map { ($0.key, $0.salt, $0.params) } ?? keyForNewVault()
        let sealed = try VaultFormat.seal(contents, key: key, salt: salt, params: params)
        removeStaleTemporaries()
        var template = Array((path + ".tmp.XXXXXX").utf8CString)
        let fd = Descriptors.temporaryFile(&template)
        guard fd >= 0 else { throw ioError("cannot create a temporary file next to the vault") }
        let tmp = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var ok = false
        defer {
            if !ok { unlink(tmp) }
        }
        guard fchmod(fd, 0o600) == 0 else {
            close(fd)
            throw ioError("cannot set the temporary file's permissions")
        }
        var done = 0
        while done < sealed.count {
            let n = sealed.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, sealed.count - done) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                close(fd)
                throw ioError("cannot write the vault")
            }
            done += n
        }
        guard fsync(fd) == 0 else {
            close(fd)
            throw ioError("cannot flush the vault to disk")
        }
        close(fd)
        guard rename(tmp, path) == 0 else { throw ioError("cannot replace the vault") }
        ok = true
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
    }

    /// Leftovers of writers that were killed. Called under the lock, so no live writer owns one.
    private func removeStaleTemporaries() {
        let base = Posix.basename(path) + ".tmp."
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for n in names where n.hasPrefix(base) { unlink(directory + "/" + n) }
    }

    func ioError(_ what: String) -> TokenVaultError {
        .vault("\(what) (\(directory)): \(String(cString: strerror(errno)))")
    }

    // MARK: Permissions

    /// Creates the directory 0700 whatever the umask, or checks the one there.
    func ensureDirectory() throws {
        var st = stat()
        if stat(directory, &st) != 0 { try PrivateDirectory.createWithParents(directory) }
        try checkDirectory()
    }

    private func checkDirectory() throws {
        var st = stat()
        guard stat(directory, &st) == 0 else { throw ioError("cannot read the vault directory") }
        guard st.st_uid == geteuid() else {
            throw TokenVaultError.permission(
                "the vault directory \(directory) belongs to another user",
                hint: "use a directory of your own (\(EnvironmentVariable.vault.name))")
        }
        guard st.st_mode & 0o077 == 0 else {
            throw TokenVaultError.permission(
                "unsafe permissions \(String(st.st_mode & 0o777, radix: 8)) on the vault directory \(directory)",
                hint: "run: chmod 700 \(ShellWord.word(directory))")
        }
    }

    private func checkVaultFile(_ st: stat) throws {
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw TokenVaultError.vault("the vault \(path) is not a regular file")
        }
        guard st.st_uid == geteuid() else {
            throw TokenVaultError.permission("the vault \(path) belongs to another user")
        }
        guard st.st_mode & 0o077 == 0 else {
            throw TokenVaultError.permission(
                "unsafe permissions \(String(st.st_mode & 0o777, radix: 8)) on the vault \(path)",
                hint: "run: chmod 600 \(ShellWord.word(path))")
        }
    }
}
