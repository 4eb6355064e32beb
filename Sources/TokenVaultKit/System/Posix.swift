import CDispatch
internal import CTokenVault
import Dispatch
import FoundationEssentials
import Glibc

/// The few things tokenvault took from the whole of Foundation, on the C
/// library instead: the binary links only FoundationEssentials, which keeps
/// ICU and ~2,300 conformance records out of every start.
public enum Posix {
    /// `path` without its last component (NSString.deletingLastPathComponent).
    public static func dirname(_ path: String) -> String {
        var p = Substring(path)
        while p.count > 1, p.hasSuffix("/") { p = p.dropLast() }
        guard let slash = p.lastIndex(of: "/") else { return "" }
        if slash == p.startIndex { return "/" }
        return String(p[..<slash])
    }

    /// Where the symbolic link `path` points; nil when it cannot be read.
    public static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n >= 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether this process has a controlling terminal (`/dev/tty` opens):
    /// a prompt could be answered, and a command may need the terminal's
    /// foreground group.
    public static var hasControllingTerminal: Bool {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        if fd >= 0 { close(fd) }
        return fd >= 0
    }

    /// The last component of `path` (NSString.lastPathComponent).
    public static func basename(_ path: String) -> String {
        var p = Substring(path)
        while p.count > 1, p.hasSuffix("/") { p = p.dropLast() }
        guard let slash = p.lastIndex(of: "/") else { return String(p) }
        return p.count == 1 ? "/" : String(p[p.index(after: slash)...])
    }

    public static func sleep(_ seconds: Double) {
        guard seconds > 0 else { return }
        var t = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
        var left = timespec()
        while nanosleep(&t, &left) != 0, errno == EINTR { t = left }
    }

    /// Writes all of `bytes` to `fd` (stdout, stderr), retrying short writes.
    public static func write(_ fd: Int32, _ bytes: [UInt8]) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, bytes.count - done) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return }
            done += n
        }
    }

    public static func write(_ fd: Int32, _ text: String) { write(fd, Array(text.utf8)) }

    /// A file as a reader that must notice a replaced or rewritten one
    /// compares it: device, inode, size, and modification and change times.
    public static func identity(_ st: stat) -> [Int] {
        [
            Int(st.st_dev), Int(st.st_ino), Int(st.st_size), Int(st.st_mtim.tv_sec), Int(st.st_mtim.tv_nsec),
            Int(st.st_ctim.tv_sec), Int(st.st_ctim.tv_nsec),
        ]
    }
}
