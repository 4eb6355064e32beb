import Dispatch
import FoundationEssentials
import Glibc

/// The file vault's key (docs/security.md): cached in the kernel keyring,
/// unsealed by the TPM where `init --key tpm` sealed it, else derived from
/// the passphrase, one derivation per vault at a time.
extension FileStore {

    /// The key's name in the cache: a hash of the vault's real path, so each
    /// vault has its own entry and no path is shown by `keyctl show`.
    func cacheName() -> String {
        var full = path
        if let real = realpath(directory, nil) {
            full = String(cString: real) + "/" + Posix.basename(path)
            free(real)
        }
        return Hex.encode(Sodium.hash(Array(full.utf8)))
    }

    public var sharedLockDirectory: String? { Posix.dirname(path) }

    /// Forgets this vault's cached key (`tokenvault lock`).
    @discardableResult
    public func forgetCachedKey() -> Bool {
        unlocked = nil
        return keyCache.forget(name: cacheName())
    }

    /// Caches the key this store opened the vault with again, for `ttl`
    /// seconds from now (`tokenvault unlock`: the lifetime it names is the one
    /// it set, also when the key was cached already).
    public func cacheKeyAgain(ttl: Int) {
        guard let u = unlocked else { return }
        keyCache.store(name: cacheName(), key: u.key, ttl: ttl, since: keyCache.generation())
    }

    func cachedKey(for header: VaultFormat.Header) throws -> SecureBytes? {
        if let u = unlocked, u.salt == header.salt, u.params == header.params { return u.key }
        guard keyTTL > 0, let key = keyCache.load(name: cacheName()), key.count == Sodium.keyBytes,
            VaultFormat.keyMatches(key, header: header)
        else { return nil }
        return key
    }

    /// The vault's key: the cached one, else derived from the passphrase and
    /// cached. One derivation per vault at a time, across processes and
    /// within the agent (docs/security.md): it runs under `.unlock.lock`
    /// beside the vault, and whoever waited for it takes the key the other
    /// one cached. A passphrase from a variable, file or command is read
    /// under the lock too (a command's source runs once); a prompt never is.
    /// A `lock` that came meanwhile keeps the key out of the cache.
    func key(for header: VaultFormat.Header) throws -> SecureBytes {
        func opening(_ key: SecureBytes) -> SecureBytes {
            unlocked = (key, header.salt, header.params)
            return key
        }
        if let key = try cachedKey(for: header) { return opening(key) }
        let generation = keyCache.generation()
        let lockPath = directory + "/.unlock.lock"
        var unsealFailure: UnsealFailure?
        if let sealed = try SealedKey.load(forVault: path) {
            switch try unseal(sealed, header: header, generation: generation, lockPath: lockPath) {
            case .success(let key): return opening(key)
            case .failure(let failure): unsealFailure = failure
            }
        }
        let held = passphrase.isNonInteractive ? try FileLock(path: lockPath) : nil
        defer { held?.release() }
        if held != nil, let key = try cachedKey(for: header) { return opening(key) }
        var cachedMeanwhile = false
        let key = try passphrase.unlock(
            "the vault \(path)",
            preface: unsealFailure.map {
                "the TPM did not unseal the vault key: \($0.message)\nthe recovery passphrase opens the vault (tokenvault init --key tpm seals the key again)\n"
            },
            noSource: unsealFailure.map {
                TokenVaultError.permission(
                    "the TPM did not unseal the key of the vault \(path): \($0.message)", hint: $0.hint)
            }
        ) { secret -> SecureBytes? in
            let lock = held == nil ? try FileLock(path: lockPath) : nil
            defer { lock?.release() }
            if lock != nil, let key = try cachedKey(for: header) {
                cachedMeanwhile = true
                return key
            }
            let key = try derivation.key(passphrase: secret, salt: header.salt, params: header.params)
            return VaultFormat.keyMatches(key, header: header) ? key : nil
        }
        if !cachedMeanwhile { keyCache.store(name: cacheName(), key: key, ttl: keyTTL, since: generation) }
        _ = opening(key)
        if let unsealFailure, let source = passphrase.sourceName {
            warnings.append(
                "the TPM did not unseal the vault key (\(unsealFailure.message)); \(source) opened the vault: seal the key again with tokenvault init --key tpm"
            )
        }
        return key
    }

    /// Why the TPM did not give the vault's key, and what to do.
    struct UnsealFailure: Error {
        var message: String
        var hint: String
    }

    /// The vault's key as the TPM unseals it, under the unlock lock (or the
    /// key another process cached while this one waited), cached in turn.
    private func unseal(
        _ sealed: SealedKey, header: VaultFormat.Header, generation: [UInt8]?, lockPath: String
    ) throws -> Result<SecureBytes, UnsealFailure> {
        let lock = try FileLock(path: lockPath)
        defer { lock.release() }
        if let key = try cachedKey(for: header) { return .success(key) }
        do {
            let key = try sealed.unseal(tcti: tpmTCTI)
            guard key.count == Sodium.keyBytes, VaultFormat.keyMatches(key, header: header) else {
                return .failure(
                    UnsealFailure(
                        message: "the key the TPM unsealed does not open this vault (it was sealed for an earlier one)",
                        hint: SealedKey.recoveryHint))
            }
            keyCache.store(name: cacheName(), key: key, ttl: keyTTL, since: generation)
            return .success(key)
        } catch let failure as SealedKey.Failure {
            let unreachable = failure.kind == .unreachable || failure.kind == .noLibrary
            return .failure(
                UnsealFailure(
                    message: failure.message, hint: unreachable ? SealedKey.reachHint : SealedKey.recoveryHint))
        }
    }

    /// Seals the vault's key with the TPM (`tokenvault init --key tpm`): the
    /// key comes from the recovery passphrase, never from an earlier seal, so
    /// a seal is always of the key the passphrase opens. The seal is read back
    /// before it is kept.
    public func sealKey(tcti: String?, pcrs: UInt32) throws -> SealedKey {
        let header = try readHeaderOnly()
        let opened = unlocked.flatMap { $0.salt == header.salt && $0.params == header.params ? $0.key : nil }
        let key =
            try opened
            ?? passphrase.unlock("the vault \(path)") { secret -> SecureBytes? in
                let key = try derivation.key(passphrase: secret, salt: header.salt, params: header.params)
                return VaultFormat.keyMatches(key, header: header) ? key : nil
            }
        let sealed: SealedKey
        do {
            sealed = try SealedKey.seal(key, tcti: tcti, pcrs: pcrs)
            let back = try sealed.unseal()
            guard back.same(as: key) else {
                throw SealedKey.Failure(message: "the TPM unsealed another key than it sealed", kind: .failed)
            }
        } catch let failure as SealedKey.Failure {
            throw TokenVaultError.backendUnavailable(
                "the TPM did not seal the vault key: \(failure.message)", hint: SealedKey.setupHint)
        }
        try sealed.save(forVault: path)
        unlocked = (key, header.salt, header.params)
        return sealed
    }

    /// Forgets the sealed key (`tokenvault init --key passphrase`); true when there was one.
    public func removeSealedKey() throws -> Bool {
        let sealedPath = SealedKey.path(forVault: path)
        guard unlink(sealedPath) == 0 else {
            if errno == ENOENT { return false }
            throw ioError("cannot remove the sealed key \(sealedPath)")
        }
        return true
    }

    func keyForNewVault() throws -> (SecureBytes, [UInt8], KDFParams) {
        if let u = unlocked { return (u.key, u.salt, u.params) }
        let generation = keyCache.generation()
        let secret = try passphrase.obtain(creating: true, vault: path)
        // A key sealed for a vault that is no more would not open this one.
        _ = try? removeSealedKey()
        let salt = Sodium.randomBytes(Sodium.saltBytes)
        let key = try derivation.key(passphrase: secret, salt: salt, params: newVaultParams)
        keyCache.store(name: cacheName(), key: key, ttl: keyTTL, since: generation)
        unlocked = (key, salt, newVaultParams)
        return (key, salt, newVaultParams)
    }
}
