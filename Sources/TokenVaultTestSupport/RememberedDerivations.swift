import Foundation
import TokenVaultKit

/// Argon2id, each (passphrase, salt, cost) derived once per test process:
/// the same answers as `KeyDerivation.argon2id`, without its time and memory
/// for every command the tests run in process (a sandbox's vault is opened
/// by one command after another). A wrong passphrase still derives a wrong
/// key. The keys stay in the test process's memory, which nothing else reads.
public final class RememberedDerivations: Sendable {
    private let keys = Locked<[Data: SecureBytes]>([:])

    public init() {}

    public var derivation: KeyDerivation {
        KeyDerivation { [keys] passphrase, salt, ops, mem in
            // The passphrase's length first: no two inputs spell the same name.
            var name = withUnsafeBytes(of: UInt64(passphrase.count).littleEndian) { Data($0) }
            passphrase.withUnsafeBytes { name.append(contentsOf: $0) }
            name.append(contentsOf: salt)
            withUnsafeBytes(of: ops.littleEndian) { name.append(contentsOf: $0) }
            withUnsafeBytes(of: mem.littleEndian) { name.append(contentsOf: $0) }
            if let known = keys.withLock({ $0[name] }) { return known.withUnsafeBytes { SecureBytes($0) } }
            let key = try KeyDerivation.argon2id.derive(passphrase, salt, ops, mem)
            keys.withLock { $0[name] = key.withUnsafeBytes { SecureBytes($0) } }
            return key
        }
    }
}
