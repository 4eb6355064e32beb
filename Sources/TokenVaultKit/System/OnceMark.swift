import Glibc

/// "Said once per period": an empty file whose modification time is when it
/// was last said (the daily refresh-token warning, an event's hook).
public enum OnceMark {
    /// True when `path` was marked within the last `seconds` before `now`
    /// (a time after `now` counts as not: a clock set back).
    public static func seen(_ path: String, within seconds: Int64, now: Int64) -> Bool {
        var st = stat()
        guard lstat(path, &st) == 0 else { return false }
        let at = Int64(st.st_mtim.tv_sec)
        return at > now - seconds && at <= now
    }

    /// Marks `path` at `now` (unix seconds; nil: the system's now), 0600,
    /// never through a symbolic link.
    public static func mark(_ path: String, at now: Int64? = nil) {
        let fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        if let now {
            let t = timespec(tv_sec: Int(now), tv_nsec: 0)
            _ = withUnsafePointer(to: (t, t)) {
                $0.withMemoryRebound(to: timespec.self, capacity: 2) { futimens(fd, $0) }
            }
        } else {
            _ = futimens(fd, nil)
        }
        close(fd)
    }
}
