import Dispatch
import FoundationEssentials
import Glibc

/// A directory only this user can enter: created 0700 (and every missing
/// parent with it, whatever the umask), refused when someone else owns it or
/// it is open to others (a lock or spool another user could hold or read).
public enum PrivateDirectory {
    public static func ensure(_ path: String) throws {
        var st = stat()
        if lstat(path, &st) != 0 {
            try createWithParents(path)
            guard lstat(path, &st) == 0 else { throw TokenVaultError.vault("cannot read \(path)") }
        }
        guard st.st_mode & S_IFMT == S_IFDIR, st.st_uid == geteuid(), st.st_mode & 0o077 == 0 else {
            throw TokenVaultError.permission(
                "\(path) is not a private directory of yours (0700, owned by you)",
                hint: "remove it, or set XDG_RUNTIME_DIR to a private directory")
        }
    }

    /// Why `path` is not a private directory of this user's, without creating
    /// it: nil when it is, or when it does not exist yet (it is made so when needed).
    public static func problem(_ path: String) -> String? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        if st.st_mode & S_IFMT != S_IFDIR { return "\(path) is not a directory" }
        if st.st_uid != geteuid() { return "\(path) belongs to another user (uid \(st.st_uid))" }
        if st.st_mode & 0o077 != 0 { return "\(path) is open to others (mode \(String(st.st_mode & 0o777, radix: 8)))" }
        return nil
    }

    /// `mkdir -p` where every directory made is 0700 whatever the umask: a
    /// missing `~/.local` must not appear world-writable under `umask 000`.
    /// Directories already there are left as they are.
    static func createWithParents(_ path: String) throws {
        var missing: [String] = []
        var p = path
        var st = stat()
        while !p.isEmpty, p != "/", lstat(p, &st) != 0 {
            missing.append(p)
            p = Posix.dirname(p)
        }
        for dir in missing.reversed() {
            if mkdir(dir, 0o700) != 0, errno != EEXIST {
                throw TokenVaultError.vault("cannot create \(dir): \(String(cString: strerror(errno)))")
            }
            _ = chmod(dir, 0o700)
        }
    }
}
