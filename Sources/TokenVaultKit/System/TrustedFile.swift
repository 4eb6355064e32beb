import Dispatch
import FoundationEssentials
import Glibc

/// Files whose contents tokenvault acts on — the config (its `*_command`
/// settings run), `*_file` secrets, the passphrase file — must be the user's
/// own (or root's) and writable by nobody else, as ssh demands of its config:
/// otherwise another local user could change what runs or what is trusted (77).
enum TrustedFile {
    /// A `*_file` setting as written in the config: `~/` stands for `$HOME`.
    static func expandingHome(_ path: String) -> String {
        path.hasPrefix("~/") ? Settings.process.home + path.dropFirst() : path
    }

    static func check(_ path: String, what: String) throws {
        var st = stat()
        guard stat(path, &st) == 0 else { return }  // a missing file is the caller's error
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
}
