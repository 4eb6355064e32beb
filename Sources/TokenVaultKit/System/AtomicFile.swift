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
    /// Where `path` leads: the file a chain of symbolic links ends at (a
    /// relative target read from its link's directory), so that a rewrite
    /// replaces that file and leaves the link a link; `path` itself when it is
    /// no link. The chain is followed 40 links at most, as the kernel does.
    public static func linkTarget(_ path: String) -> String {
        var current = path
        for _ in 0..<40 {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let n = readlink(current, &buffer, buffer.count - 1)
            guard n > 0 else { return current }
            let target = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            current = target.hasPrefix("/") ? target : Posix.dirname(current) + "/" + target
        }
        return current
    }

    static func createTemporary(for path: String) -> (fd: Int32, path: String)? {
        let temp = path + ".tmp-\(getpid())"
        unlink(temp)  // a leftover of a killed run of this pid
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        return fd >= 0 ? (fd, temp) : nil
    }
}
