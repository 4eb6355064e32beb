import Dispatch
import FoundationEssentials
import Glibc

/// Files whose contents tokenvault acts on — the config (its `*_command`
/// settings run), `providers.toml`, `*_file` secrets, the passphrase file,
/// private keys, the etcd TLS files — must be the user's own (or root's),
/// writable by nobody else, and in a directory nobody else can write, as ssh's
/// StrictModes demands: otherwise another local user could change what runs
/// or what is trusted (77). Such a file is opened once and read from that
/// descriptor, after the checks were made on it, so it cannot be swapped
/// between the check and the read (docs/security.md, "Files that decide where secrets go").
enum TrustedFile {
    /// The contents of the trusted file at `path`, checked on the descriptor
    /// they are read from; nil when there is no such file. A symbolic link is
    /// followed (a config kept with the user's dotfiles), and both the
    /// directory it is in and the directory of the file it names are checked.
    /// `secret`: a file only its owner may read (the vault passphrase).
    static func read(_ path: String, what: String, maxBytes: Int = 1 << 20, secret: Bool = false) throws -> [UInt8]? {
        guard let real = realpath(path, nil) else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw TokenVaultError.config("cannot read \(what) \(path): \(String(cString: strerror(errno)))")
        }
        let resolved = String(cString: real)
        free(real)
        try checkDirectory(of: path, what: what, file: path)
        if resolved != path { try checkDirectory(of: resolved, what: what, file: path) }
        // O_NOFOLLOW: the last component cannot have become a link since it was resolved;
        // O_NONBLOCK: a FIFO put there does not hang the open (it is refused below).
        let fd = open(resolved, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            if errno == ELOOP {
                throw TokenVaultError.permission(
                    "\(what) \(path) was replaced while it was read; refusing to use it",
                    hint: "check who else can write to \(Posix.dirname(path))")
            }
            throw TokenVaultError.config("cannot read \(what) \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            throw TokenVaultError.config("cannot read \(what) \(path): \(String(cString: strerror(errno)))")
        }
        try check(st, path: path, what: what)
        if secret, st.st_mode & 0o044 != 0 {
            throw TokenVaultError.permission(
                "\(what) \(path) is readable by others (mode \(String(st.st_mode & 0o777, radix: 8))); refusing to use it",
                hint:
                    "run: chmod 600 \(ShellWord.word(path)) (and choose a new passphrase if others could have read it)")
        }
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw TokenVaultError.config("\(what) \(path) is not a regular file")
        }
        guard st.st_size <= maxBytes else {
            throw TokenVaultError.config("\(what) \(path) is larger than \(maxBytes >> 10) KiB")
        }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size) + 1)
        var count = 0
        while count < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
            if n < 0, errno == EINTR { continue }
            if n < 0 {
                throw TokenVaultError.config("cannot read \(what) \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            count += n
        }
        guard count <= maxBytes else {
            throw TokenVaultError.config("\(what) \(path) is larger than \(maxBytes >> 10) KiB")
        }
        return Array(bytes[..<count])
    }

    /// The file's owner and mode, and its directory's, for a file handed on
    /// by name (the etcd TLS files, which libcurl opens itself).
    static func check(_ path: String, what: String) throws {
        var st = stat()
        guard stat(path, &st) == 0 else { return }  // a missing file is the caller's error
        try checkDirectory(of: path, what: what, file: path)
        if let real = realpath(path, nil) {
            let resolved = String(cString: real)
            free(real)
            if resolved != path { try checkDirectory(of: resolved, what: what, file: path) }
        }
        try check(st, path: path, what: what)
    }

    private static func check(_ st: stat, path: String, what: String) throws {
        guard st.st_uid == geteuid() || st.st_uid == 0 else {
            throw TokenVaultError.permission(
                "\(what) \(path) belongs to another user; refusing to use it",
                hint: "use a file of your own")
        }
        guard st.st_mode & 0o022 == 0 else {
            throw TokenVaultError.permission(
                "\(what) \(path) is writable by others (mode \(String(st.st_mode & 0o777, radix: 8))); refusing to use it",
                hint: "run: chmod go-w \(ShellWord.word(path))")
        }
    }

    /// The directory holding `path`: the user's own or root's, and writable by
    /// nobody else unless it is sticky (/tmp: others cannot replace a file
    /// they do not own there).
    private static func checkDirectory(of path: String, what: String, file: String) throws {
        let directory = Posix.dirname(path).isEmpty ? "." : Posix.dirname(path)
        var st = stat()
        guard stat(directory, &st) == 0 else { return }
        guard st.st_uid == geteuid() || st.st_uid == 0 else {
            throw TokenVaultError.permission(
                "\(what) \(file) is in \(directory), which belongs to another user; refusing to use it",
                hint: "keep it in a directory of your own")
        }
        guard st.st_mode & 0o022 == 0 || st.st_mode & 0o1000 != 0 else {
            throw TokenVaultError.permission(
                "\(what) \(file) is in \(directory), which others can write (mode \(String(st.st_mode & 0o777, radix: 8))); refusing to use it",
                hint: "run: chmod go-w \(ShellWord.word(directory))")
        }
    }
}
