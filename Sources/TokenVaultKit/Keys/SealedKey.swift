internal import CTokenVault
import FoundationEssentials
import Glibc

/// The file vault's key sealed by the machine's TPM 2.0 (docs/headless.md):
/// `VAULT.tpm` beside the vault holds what the TPM returned when it sealed
/// the key (docs/FORMAT.md, "The TPM-sealed key"); only that TPM, unchanged,
/// unseals it. The key itself is the one the recovery passphrase derives, so
/// the passphrase opens the vault whatever becomes of the TPM.
public struct SealedKey: Sendable, Equatable {
    static let magic = Array("TVTPMKEY".utf8)
    static let version: UInt8 = 1

    /// Where the TPM was reached when the key was sealed ("device:/dev/tpmrm0",
    /// "swtpm:port=2321"); nil: the TSS's default places.
    public var tcti: String?
    /// PCRs of the SHA-256 bank the key is bound to (bit n: PCR n); 0: none.
    public var pcrs: UInt32
    /// The TPM's public and private parts of the sealed object.
    var blob: [UInt8]

    /// What to do when the TPM does not unseal the key.
    static let recoveryHint =
        "open it with the recovery passphrase (\(EnvironmentVariable.passphraseFile.name), or on a terminal), and seal the key to this TPM again: tokenvault init --key tpm (docs/headless.md)"

    /// What to do when no TPM answered.
    static let reachHint =
        "check that the TPM answers (/dev/tpmrm0, in group tss; or \(EnvironmentVariable.tpmTCTI.name)), or open the vault with the recovery passphrase (\(EnvironmentVariable.passphraseFile.name), or on a terminal) (docs/headless.md)"

    /// What to check when the TPM cannot seal.
    static let setupHint =
        "check that a TPM 2.0 answers (/dev/tpmrm0, in group tss) or set \(EnvironmentVariable.tpmTCTI.name); the vault and its passphrase are unchanged (docs/headless.md)"

    /// The sealed-key file of the vault at `vaultPath`.
    public static func path(forVault vaultPath: String) -> String { vaultPath + ".tpm" }

    /// The PCR numbers of `pcrs`, in order.
    public var pcrList: [Int] { (0..<24).filter { pcrs & (1 << $0) != 0 } }

    /// Seals `key` with the TPM at `tcti` (nil: the default places), bound to `pcrs`.
    public static func seal(_ key: SecureBytes, tcti: String?, pcrs: UInt32) throws -> SealedKey {
        var blob = [UInt8](repeating: 0, count: Int(TV_TPM_BLOB_MAX))
        var length = 0
        var message = [CChar](repeating: 0, count: 512)
        let r = key.withUnsafeBytes { k in
            tv_tpm_seal(
                tcti, k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count, pcrs, &blob, &length, &message,
                message.count)
        }
        guard r == Int32(TV_TPM_OK) else { throw failure(r, String(nulTerminated: message), sealing: true) }
        return SealedKey(tcti: tcti, pcrs: pcrs, blob: Array(blob[..<length]))
    }

    /// The key, unsealed by the TPM at `tcti` (nil: the one recorded at sealing).
    public func unseal(tcti override: String? = nil) throws -> SecureBytes {
        let key = SecureBytes(count: Int(TV_TPM_SECRET_MAX))
        var length = 0
        var message = [CChar](repeating: 0, count: 512)
        let r = key.withUnsafeMutableBytes { k in
            tv_tpm_unseal(
                override ?? tcti, blob, blob.count, pcrs, k.baseAddress!.assumingMemoryBound(to: UInt8.self), &length,
                &message, message.count)
        }
        guard r == Int32(TV_TPM_OK) else { throw Self.failure(r, String(nulTerminated: message), sealing: false) }
        let unsealed = SecureBytes(count: length)
        unsealed.withUnsafeMutableBytes { dst in
            key.withUnsafeBytes { dst.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[..<length])) }
        }
        return unsealed
    }

    /// Why the TPM did not do it; `reachable` false when no TPM answered.
    public struct Failure: Error, Sendable {
        public var message: String
        public var kind: Kind
        public enum Kind: Sendable { case noLibrary, unreachable, refused, damaged, failed }
    }

    private static func failure(_ r: Int32, _ message: String, sealing: Bool) -> Failure {
        let kind: Failure.Kind =
            switch r {
            case Int32(TV_TPM_NO_LIBRARY): .noLibrary
            case Int32(TV_TPM_UNREACHABLE): .unreachable
            case Int32(TV_TPM_REFUSED): .refused
            case Int32(TV_TPM_DAMAGED): .damaged
            default: .failed
            }
        let text =
            kind == .noLibrary
            ? "the TPM2 software stack is not installed (\(OutsideText.line(message, limit: 160))): install libtss2-esys-3.0.2-0 and libtss2-tctildr0"
            : OutsideText.line(message, limit: 300)
        return Failure(message: text, kind: kind)
    }

    // MARK: The file

    /// The file's bytes: magic, version, a zero byte, the PCR mask (u32), the
    /// TCTI (u16 length, UTF-8; 0: the default), the blob (u16 length).
    func encoded() -> [UInt8] {
        var out = Self.magic + [Self.version, 0]
        withUnsafeBytes(of: pcrs.littleEndian) { out += $0 }
        let t = Array((tcti ?? "").utf8)
        withUnsafeBytes(of: UInt16(t.count).littleEndian) { out += $0 }
        out += t
        withUnsafeBytes(of: UInt16(blob.count).littleEndian) { out += $0 }
        return out + blob
    }

    init(tcti: String?, pcrs: UInt32, blob: [UInt8]) {
        (self.tcti, self.pcrs, self.blob) = (tcti, pcrs, blob)
    }

    /// Reads `bytes` as `encoded()` wrote them; nil when they are not such a file.
    init?(decoding bytes: [UInt8]) {
        var at = Self.magic.count + 2
        guard bytes.count >= at + 8, Array(bytes[..<Self.magic.count]) == Self.magic,
            bytes[Self.magic.count] == Self.version
        else { return nil }
        func u16() -> Int? {
            guard at + 2 <= bytes.count else { return nil }
            defer { at += 2 }
            return Int(bytes[at]) | Int(bytes[at + 1]) << 8
        }
        pcrs = bytes[at..<at + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) }
        at += 4
        guard let tl = u16(), at + tl <= bytes.count else { return nil }
        let t = String(decoding: bytes[at..<at + tl], as: UTF8.self)
        tcti = t.isEmpty ? nil : t
        at += tl
        guard let bl = u16(), bl > 0, at + bl == bytes.count, pcrs >> 24 == 0 else { return nil }
        blob = Array(bytes[at...])
    }

    /// The sealed key beside the vault at `vaultPath`; nil when there is none.
    /// It must be the user's own and readable by nobody else, as the vault.
    public static func load(forVault vaultPath: String) throws -> SealedKey? {
        let path = path(forVault: vaultPath)
        guard let bytes = try TrustedFile.read(path, what: "the sealed vault key", maxBytes: 8192, secret: true)
        else { return nil }
        guard let sealed = SealedKey(decoding: bytes) else {
            throw TokenVaultError.vault(
                "the sealed vault key \(path) is damaged",
                hint: "seal the key again: tokenvault init --key tpm (it asks the recovery passphrase)")
        }
        return sealed
    }

    /// Writes it beside the vault at `vaultPath` (0600, replaced whole).
    public func save(forVault vaultPath: String) throws {
        try AtomicFile.replace(Self.path(forVault: vaultPath), with: encoded(), what: "the sealed vault key")
    }
}
