/// How a passphrase becomes a key (docs/config.md, "Backends"): Argon2id v1.3 with the
/// vault's own salt and cost. The tests that run many commands in one
/// process hand in a derivation that remembers its answers (the same
/// passphrase, salt and cost give the same key), as they hand in a clock.
public struct KeyDerivation: Sendable {
    public let derive:
        @Sendable (_ passphrase: SecureBytes, _ salt: [UInt8], _ ops: UInt64, _ mem: UInt64) throws -> SecureBytes

    public init(
        _ derive:
            @escaping @Sendable (_ passphrase: SecureBytes, _ salt: [UInt8], _ ops: UInt64, _ mem: UInt64) throws
            -> SecureBytes
    ) {
        self.derive = derive
    }

    /// libsodium's crypto_pwhash.
    public static let argon2id = KeyDerivation { try Sodium.deriveKey(passphrase: $0, salt: $1, ops: $2, mem: $3) }

    func key(passphrase: SecureBytes, salt: [UInt8], params: KDFParams) throws -> SecureBytes {
        try derive(passphrase, salt, params.opsLimit, params.memLimit)
    }
}
