import Dispatch
import FoundationEssentials
import Glibc

/// Replaces a file whole: a temporary file created 0600 (open with the mode,
/// never chmod'ed after, so no umask leaves it readable for an instant),
/// written, flushed, renamed over the file, and the directory flushed.
/// Readers see the old file or the new one.
public enum AtomicFile {
    /// Throws a `vault` error naming `what` when any step fails; nothing is left behind.
    public static func replace(_ path: String, with bytes: [UInt8], what: String) throws {
        func failure(_ step: String) -> TokenVaultError {
            .vault("cannot \(step) \(what) \(path): \(String(cString: strerror(errno)))")
        }
        guard let (fd, temp) = createTemporary(for: path) else { throw failure("create a temporary file for") }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, bytes.count - done) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                let error = failure("write")
                close(fd)
                unlink(temp)
                throw error
            }
            done += n
        }
        guard fsync(fd) == 0 else {
            let error = failure("flush")
            close(fd)
            unlink(temp)
            throw error
        }
        close(fd)
        guard rename(temp, path) == 0 else {
            let error = failure("replace")
            unlink(temp)
            throw error
        }
        let dfd = open(Posix.dirname(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
    }

    /// A new file beside `path`, created 0600 whatever the umask; its
    /// descriptor and path, or nil (errno says why).
    static func createTemporary(for path: String) -> (fd: Int32, path: String)? {
        let temp = path + ".tmp-\(getpid())"
        unlink(temp)  // a leftover of a killed run of this pid
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        return fd >= 0 ? (fd, temp) : nil
    }
}
