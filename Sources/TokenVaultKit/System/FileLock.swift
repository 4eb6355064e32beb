import Dispatch
import FoundationEssentials
import Glibc

/// An exclusive flock(2) on a lock file; the kernel drops it if the holder dies.
/// Two locks on one file in one process exclude each other too (each open is
/// its own open file description), so callers never nest a lock they hold.
public struct FileLock {
    let fd: Int32

    /// Takes the lock, waiting as long as another process holds it; on a
    /// terminal the wait names that process (`WaitLine`).
    init(path: String) throws {
        if let lock = try FileLock(path: path, wait: false) {
            self = lock
            return
        }
        let holder = FileLock.holder(path).map { "process \($0)" } ?? "another tokenvault process"
        let what = Posix.basename(path).split(separator: "-").first.map(String.init) ?? "a"
        guard
            let lock = try WaitLine.during(
                { "waiting for \(holder), which holds the \(what) lock (\($0) s)" },
                {
                    try FileLock(path: path, wait: true)
                })
        else { throw TokenVaultError.internal("a blocking flock returned without the lock") }
        self = lock
    }

    /// The process that wrote the lock file last (each holder writes its pid).
    static func holder(_ path: String) -> Int32? {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else { return nil }
        return Int32(text.trimmedWhitespace())
    }

    /// Takes the lock; without `wait`, nil when another holder has it.
    public init?(path: String, wait: Bool) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw TokenVaultError.vault("cannot open the lock file \(path): \(String(cString: strerror(errno)))")
        }
        while flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            let failure = errno
            close(fd)
            if failure == EWOULDBLOCK { return nil }
            throw TokenVaultError.vault("cannot lock \(path): \(String(cString: strerror(failure)))")
        }
        // Who holds it, for a waiter to name.
        let pid = Array("\(getpid())\n".utf8)
        if ftruncate(fd, 0) == 0 { _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress!, $0.count, 0) } }
        self.fd = fd
    }

    public func release() {
        flock(fd, LOCK_UN)
        close(fd)
    }

    /// Runs `body` holding the lock at `path`.
    static func holding<T>(_ path: String, _ body: () throws -> T) throws -> T {
        let lock = try FileLock(path: path)
        defer { lock.release() }
        return try body()
    }
}
