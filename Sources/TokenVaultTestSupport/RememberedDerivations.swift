import Foundation
import TokenVaultKit

/// Argon2id, each (passphrase, salt, cost) derived once per test process:
/// the same answers as `KeyDerivation.argon2id`, without its time and memory
/// for every command the tests run in process (a sandbox's vault is opened
/// by one command after another). A wrong passphrase still derives a wrong
/// key. The keys stay in the test process's memory, which nothing else reads.
public final class RememberedDerivations: @unchecked Sendable {
    private let lock = NSLock()
    private var keys: [Data: SecureBytes] = [:]

    public init() {}

    public var derivation: KeyDerivation {
        KeyDerivation { [self] passphrase, salt, ops, mem in
            var name = passphrase.withUnsafeBytes { Data($0) }
            name.append(contentsOf: [0] + salt)
            withUnsafeBytes(of: ops.littleEndian) { name.append(contentsOf: $0) }
            withUnsafeBytes(of: mem.littleEndian) { name.append(contentsOf: $0) }
            name.insert(contentsOf: withUnsafeBytes(of: UInt64(passphrase.count).littleEndian) { Data($0) }, at: 0)
            if let known = lock.withLock({ keys[name] }) { return known.withUnsafeBytes { SecureBytes($0) } }
            let key = try KeyDerivation.argon2id.derive(passphrase, salt, ops, mem)
            lock.withLock { keys[name] = key.withUnsafeBytes { SecureBytes($0) } }
            return key
        }
    }
}
