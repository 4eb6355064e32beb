internal import CSodium
import Dispatch
import FoundationEssentials
import Glibc

/// The libsodium calls tokenvault uses. C types stay inside this file.
enum Sodium {
    private static let initialized: Bool = sodium_init() >= 0

    static func ensureInitialized() throws {
        guard initialized else { throw TokenVaultError.internal("libsodium failed to initialise") }
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, count) }
        return out
    }

    static func wipe(_ bytes: inout [UInt8]) {
        let n = bytes.count
        bytes.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, n) }
    }

    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && sodium_memcmp(a, b, a.count) == 0
    }

    // MARK: Argon2id

    static let saltBytes = Int(crypto_pwhash_SALTBYTES)
    static let keyBytes = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    static let argon2id13 = UInt8(crypto_pwhash_ALG_ARGON2ID13)
    static let opsLimitMin = UInt64(crypto_pwhash_OPSLIMIT_MIN)
    static let memLimitMin = UInt64(crypto_pwhash_MEMLIMIT_MIN)
    static let interactive = (
        ops: UInt64(crypto_pwhash_OPSLIMIT_INTERACTIVE), mem: UInt64(crypto_pwhash_MEMLIMIT_INTERACTIVE)
    )
    static let moderate = (ops: UInt64(crypto_pwhash_OPSLIMIT_MODERATE), mem: UInt64(crypto_pwhash_MEMLIMIT_MODERATE))
    static let sensitive = (
        ops: UInt64(crypto_pwhash_OPSLIMIT_SENSITIVE), mem: UInt64(crypto_pwhash_MEMLIMIT_SENSITIVE)
    )

    /// Derives a 32-byte key with Argon2id v1.3.
    static func deriveKey(passphrase: SecureBytes, salt: [UInt8], ops: UInt64, mem: UInt64) throws -> SecureBytes {
        let key = SecureBytes(count: keyBytes)
        let rc = key.withUnsafeMutableBytes { k in
            passphrase.withUnsafeBytes { p in
                crypto_pwhash(
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(keyBytes),
                    p.baseAddress!.assumingMemoryBound(to: CChar.self), UInt64(p.count),
                    salt, ops, Int(mem), crypto_pwhash_ALG_ARGON2ID13)
            }
        }
        guard rc == 0 else {
            throw TokenVaultError.vault("cannot derive the vault key (Argon2id needs \(mem >> 20) MiB of memory)")
        }
        return key
    }

    // MARK: XChaCha20-Poly1305 (IETF)

    static let nonceBytes = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    static let tagBytes = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    static func seal(_ plain: [UInt8], ad: [UInt8], nonce: [UInt8], key: SecureBytes) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plain.count + tagBytes)
        var outLen: UInt64 = 0
        key.withUnsafeBytes { k in
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                &out, &outLen, plain, UInt64(plain.count), ad, UInt64(ad.count), nil, nonce,
                k.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return out
    }

    /// nil when the tag does not verify: nothing of a forged message is released.
    /// The output is written into uninitialised memory: no 3 MB memset for a large vault.
    static func open(_ cipher: ArraySlice<UInt8>, ad: [UInt8], nonce: [UInt8], key: SecureBytes) -> [UInt8]? {
        guard cipher.count >= tagBytes else { return nil }
        var rc: Int32 = -1
        let out = [UInt8](unsafeUninitializedCapacity: cipher.count - tagBytes) { buffer, initialized in
            var outLen: UInt64 = 0
            rc = cipher.withUnsafeBufferPointer { c in
                key.withUnsafeBytes { k in
                    crypto_aead_xchacha20poly1305_ietf_decrypt(
                        buffer.baseAddress, &outLen, nil, c.baseAddress!, UInt64(c.count), ad, UInt64(ad.count), nonce,
                        k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
            if rc == 0 {
                initialized = Int(outLen)
            } else {
                sodium_memzero(buffer.baseAddress, buffer.count)
                initialized = 0
            }
        }
        return rc == 0 ? out : nil
    }

    /// Decrypts in place: the ciphertext and tag in `buffer` become the plaintext at
    /// its start (libsodium allows m == c). Returns the plaintext length, or nil when
    /// the tag does not verify (libsodium then zeroes the output).
    static func openInPlace(
        _ buffer: UnsafeMutableRawBufferPointer, ad: [UInt8], nonce: [UInt8], key: SecureBytes
    ) -> Int? {
        guard buffer.count >= tagBytes, let base = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            return nil
        }
        var outLen: UInt64 = 0
        let rc = key.withUnsafeBytes { k in
            crypto_aead_xchacha20poly1305_ietf_decrypt(
                base, &outLen, nil, base, UInt64(buffer.count), ad, UInt64(ad.count), nonce,
                k.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return rc == 0 ? Int(outLen) : nil
    }

    static func unpad(_ bytes: UnsafeRawBufferPointer, blockSize: Int) -> Int? {
        var unpadded = 0
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        return sodium_unpad(&unpadded, base, bytes.count, blockSize) == 0 ? unpadded : nil
    }

    static func wipe(_ bytes: UnsafeMutableRawBufferPointer) {
        if let base = bytes.baseAddress { sodium_memzero(base, bytes.count) }
    }

    // MARK: BLAKE2b

    static func hash(_ message: [UInt8], key: SecureBytes? = nil, bytes: Int = 16) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: bytes)
        if let key {
            key.withUnsafeBytes { k in
                _ = crypto_generichash(
                    &out, bytes, message, UInt64(message.count),
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
            }
        } else {
            _ = crypto_generichash(&out, bytes, message, UInt64(message.count), nil, 0)
        }
        return out
    }

    // MARK: SHA-256 (PKCE S256)

    static func sha256(_ message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        _ = crypto_hash_sha256(&out, message, UInt64(message.count))
        return out
    }

    // MARK: HMAC-SHA-256 (HS256; Fernet), a key of any length but 0

    static func hmacSHA256(key: UnsafeRawBufferPointer, _ message: [UInt8]) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: Int(crypto_auth_hmacsha256_BYTES))
        var state = crypto_auth_hmacsha256_state()
        crypto_auth_hmacsha256_init(&state, key.bindMemory(to: UInt8.self).baseAddress!, key.count)
        crypto_auth_hmacsha256_update(&state, message, UInt64(message.count))
        crypto_auth_hmacsha256_final(&state, &mac)
        withUnsafeMutableBytes(of: &state) { Sodium.wipe($0) }
        return mac
    }

    // MARK: Padding (ISO/IEC 7816-4), so the file size tells little

    static func pad(_ bytes: inout [UInt8], blockSize: Int) {
        let unpadded = bytes.count
        bytes.append(contentsOf: [UInt8](repeating: 0, count: blockSize - unpadded % blockSize))
        var padded = 0
        _ = sodium_pad(&padded, &bytes, unpadded, blockSize, bytes.count)
        bytes.removeLast(bytes.count - padded)
    }

    static func unpad(_ bytes: [UInt8], blockSize: Int) -> Int? {
        var unpadded = 0
        return sodium_unpad(&unpadded, bytes, bytes.count, blockSize) == 0 ? unpadded : nil
    }
}

/// Bytes in guarded, locked memory that libsodium zeroes when freed:
/// for passphrases and keys.
public final class SecureBytes: @unchecked Sendable {
    private let pointer: UnsafeMutableRawPointer
    public let count: Int

    public init(count: Int) {
        try? Sodium.ensureInitialized()
        guard let p = sodium_malloc(max(count, 1)) else { fatalError("sodium_malloc failed") }
        pointer = p
        self.count = count
        sodium_memzero(p, max(count, 1))
    }

    public convenience init(_ bytes: some Collection<UInt8>) {
        self.init(count: bytes.count)
        withUnsafeMutableBytes { dst in _ = dst.initializeMemory(as: UInt8.self, from: bytes) }
    }

    deinit { sodium_free(pointer) }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: pointer, count: count))
    }

    var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// The same bytes, compared in constant time.
    func same(as other: SecureBytes) -> Bool {
        count == other.count
            && withUnsafeBytes { a in
                other.withUnsafeBytes { b in sodium_memcmp(a.baseAddress, b.baseAddress, count) == 0 }
            }
    }
}
