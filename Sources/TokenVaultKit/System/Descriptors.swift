internal import CTokenVault
import Glibc

/// Descriptors no child may have (docs/security.md, "Children, hooks and the
/// desktop"): the login's redirect listener, the agent's socket and its
/// connections, vault temporaries and lock files are opened close-on-exec
/// in the same call, never set afterwards (another thread may start
/// `$BROWSER`, a hook or `exec`'s program in between). FileLock and
/// AtomicFile open with O_CLOEXEC themselves.
public enum Descriptors {
    /// A socket of `domain` and `type`, close-on-exec.
    public static func socket(_ domain: Int32, _ type: Int32) -> Int32 {
        Glibc.socket(domain, type | Int32(SOCK_CLOEXEC.rawValue), 0)
    }

    /// The next connection on `listener`, close-on-exec.
    public static func accept(_ listener: Int32) -> Int32 {
        tv_accept_cloexec(listener)
    }

    /// The next connection on `listener`, close-on-exec and non-blocking
    /// (the listener's flags untouched); -1 when none is waiting.
    public static func acceptNonBlocking(_ listener: Int32) -> Int32 {
        tv_accept_nonblocking(listener)
    }

    /// `fd` made blocking again; false when it could not be.
    @discardableResult public static func setBlocking(_ fd: Int32) -> Bool {
        tv_set_blocking(fd) == 0
    }

    /// A file made from `template` (`…XXXXXX`, rewritten to its name), close-on-exec.
    public static func temporaryFile(_ template: inout [CChar]) -> Int32 {
        tv_mkstemp_cloexec(&template)
    }

    /// A pipe whose two ends are close-on-exec.
    public static func pipe(_ ends: inout [Int32]) -> Bool {
        tv_pipe_cloexec(&ends) == 0
    }
}
