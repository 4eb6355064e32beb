internal import CKeyutils
import Glibc

/// Process hardening that needs C: no core dumps, not ptrace-able.
public enum ProcessHardening {
    public static func disableCoreDumps() {
        // A file-size limit (ulimit -f) or a full disk must end in a clean error
        // from write(2), with the rotated token spooled, not in a SIGXFSZ death.
        signal(SIGXFSZ, SIG_IGN)
        var limit = rlimit(rlim_cur: 0, rlim_max: 0)
        _ = setrlimit(Int32(RLIMIT_CORE.rawValue), &limit)
        _ = tv_set_not_dumpable()
    }
}
