internal import CKeyutils
import Dispatch
import FoundationEssentials
import Glibc

/// Keeps a derived vault key for a while, so repeated `get`s pay no KDF.
public protocol KeyCache: Sendable {
    func load(name: String) -> SecureBytes?
    func store(name: String, key: SecureBytes, ttl: Int)
    /// Forgets one key; true when there was one.
    @discardableResult func forget(name: String) -> Bool
    /// Forgets every key tokenvault cached; returns how many.
    @discardableResult func forgetAll() -> Int
    /// A value that `lock` changes (`advanceGeneration`) before it forgets
    /// keys: a derivation that began before a `lock` and ends after it sees
    /// another value and does not cache its key (docs/security.md).
    func generation() -> [UInt8]?
    func advanceGeneration()
}

extension KeyCache {
    /// Caches `key` unless a `lock` came since `generation` was read: checked
    /// after the store, so that a `lock` between the check and the store (it
    /// advances, then forgets) cannot leave the key behind.
    public func store(name: String, key: SecureBytes, ttl: Int, since generation: [UInt8]?) {
        guard self.generation() == generation else { return }
        store(name: name, key: key, ttl: ttl)
        if self.generation() != generation { forget(name: name) }
    }
}

/// The kernel's per-user keyring (keyctl(2)): keys live in kernel memory,
/// expire on their own after the TTL, and go when the user's last session ends.
public struct KernelKeyring: KeyCache {
    static let prefix = "tokenvault:"

    public init() {}

    public func load(name: String) -> SecureBytes? {
        let found = keyctl_search(KEY_SPEC_USER_KEYRING, "user", KernelKeyring.prefix + name, 0)
        guard found > 0, let id = key_serial_t(exactly: found) else { return nil }
        var buffer: UnsafeMutableRawPointer?
        let n = keyctl_read_alloc(id, &buffer)
        guard n > 0, let buffer else { return nil }
        defer {
            memset(buffer, 0, Int(n))
            free(buffer)
        }
        return SecureBytes(UnsafeRawBufferPointer(start: buffer, count: Int(n)))
    }

    public func store(name: String, key: SecureBytes, ttl: Int) {
        guard ttl > 0 else { return }
        let id = key.withUnsafeBytes { k in
            add_key("user", KernelKeyring.prefix + name, k.baseAddress, k.count, KEY_SPEC_USER_KEYRING)
        }
        guard id > 0 else { return }
        // Possessor and user may read it; nobody else.
        _ = keyctl_setperm(id, 0x3f3f_0000)
        _ = keyctl_set_timeout(id, UInt32(clamping: ttl))
    }

    @discardableResult
    public func forget(name: String) -> Bool {
        let found = keyctl_search(KEY_SPEC_USER_KEYRING, "user", KernelKeyring.prefix + name, 0)
        guard found > 0, let id = key_serial_t(exactly: found) else { return false }
        return keyctl_invalidate(id) == 0 || keyctl_unlink(id, KEY_SPEC_USER_KEYRING) == 0
    }

    @discardableResult
    public func forgetAll() -> Int {
        var buffer: UnsafeMutableRawPointer?
        let n = keyctl_read_alloc(KEY_SPEC_USER_KEYRING, &buffer)
        guard n > 0, let buffer else { return 0 }
        defer { free(buffer) }
        let ids = UnsafeRawBufferPointer(start: buffer, count: Int(n)).bindMemory(to: key_serial_t.self)
        var forgotten = 0
        for id in ids {
            var desc: UnsafeMutablePointer<CChar>?
            guard keyctl_describe_alloc(id, &desc) > 0, let desc else { continue }
            defer { free(desc) }
            // "type;uid;gid;perm;description"
            let text = String(cString: desc)
            guard text.hasPrefix("user;"), let name = text.split(separator: ";", maxSplits: 4).last,
                name.hasPrefix(KernelKeyring.prefix)
            else { continue }
            if keyctl_invalidate(id) == 0 || keyctl_unlink(id, KEY_SPEC_USER_KEYRING) == 0 { forgotten += 1 }
        }
        return forgotten
    }
}

extension KernelKeyring {
    /// Not a key: 16 random bytes that `lock` replaces; it never expires and
    /// `forgetAll` (which forgets only `prefix` names) leaves it.
    static let generationName = "tokenvault-lock:generation"

    public func generation() -> [UInt8]? {
        let found = keyctl_search(KEY_SPEC_USER_KEYRING, "user", Self.generationName, 0)
        guard found > 0, let id = key_serial_t(exactly: found) else { return nil }
        var buffer: UnsafeMutableRawPointer?
        let n = keyctl_read_alloc(id, &buffer)
        guard n > 0, let buffer else { return nil }
        defer { free(buffer) }
        return Array(UnsafeRawBufferPointer(start: buffer, count: Int(n)))
    }

    public func advanceGeneration() {
        let value = Sodium.randomBytes(16)
        let id = value.withUnsafeBytes {
            add_key("user", Self.generationName, $0.baseAddress, $0.count, KEY_SPEC_USER_KEYRING)
        }
        if id > 0 { _ = keyctl_setperm(id, 0x3f3f_0000) }
    }
}

/// A cache that keeps nothing (`TOKENVAULT_KEY_TTL=0`, and tests).
public struct NoKeyCache: KeyCache {
    public init() {}
    public func load(name: String) -> SecureBytes? { nil }
    public func store(name: String, key: SecureBytes, ttl: Int) {}
    public func forget(name: String) -> Bool { false }
    public func forgetAll() -> Int { 0 }
    public func generation() -> [UInt8]? { nil }
    public func advanceGeneration() {}
}
