import Dispatch
import FoundationEssentials
import Glibc

/// One interactive login per credential at a time, across processes (docs/providers.md):
/// a flock in the runtime directory, which the kernel drops when its holder
/// exits or is killed, so Ctrl-C frees the way at once. The holder's pid is
/// in the file (`FileLock`), for the message the others print.
public final class LoginLock {
    private let lock: FileLock

    private init(_ lock: FileLock) { self.lock = lock }

    /// Takes the lock for `id`, or nil when another process holds it.
    public static func attempt(_ vault: CredentialVault, _ id: CredentialID) throws -> LoginLock? {
        try PrivateDirectory.ensure(vault.runtimeDirectory)
        guard let lock = try FileLock(path: vault.lockPath("login", id), wait: false) else { return nil }
        return LoginLock(lock)
    }

    /// Waits for the lock until `deadline` (seconds since the epoch); nil on timeout.
    public static func wait(_ vault: CredentialVault, _ id: CredentialID, until deadline: Double) throws -> LoginLock? {
        while true {
            if let held = try attempt(vault, id) { return held }
            if Date().timeIntervalSince1970 >= deadline { return nil }
            Posix.sleep(0.2)
        }
    }

    /// The pid the current holder wrote, when there is one.
    public static func holder(_ vault: CredentialVault, _ id: CredentialID) -> Int32? {
        FileLock.holder(vault.lockPath("login", id))
    }

    public func release() { lock.release() }
}
