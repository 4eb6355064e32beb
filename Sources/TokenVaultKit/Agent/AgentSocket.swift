internal import CTokenVault
import Dispatch
import FoundationEssentials
import Glibc

/// The agent's Unix socket (docs/agent.md): `$XDG_RUNTIME_DIR/tokenvault/agent.sock`,
/// in a 0700 directory, answering only its own uid. Messages are framed:
/// four bytes of length (big-endian), then that many bytes of JSON.
public enum AgentSocket {
    /// The protocol's version: an agent of another one is not used.
    public static let version: Int64 = 3
    /// This program's build (its ELF build ID): an agent of another build is
    /// not used, and is stopped (docs/agent.md, "Upgrades").
    public static let build: String = {
        var id = [UInt8](repeating: 0, count: 64)
        let n = tv_build_id(&id, id.count)
        return n > 0 ? Hex.encode(id[0..<n]) : "version-\(version)"
    }()
    /// The largest message either side takes.
    public static let maxMessage = 1 << 20

    public static func path(_ settings: Settings) -> String { settings.runtimeDirectory + "/agent.sock" }

    /// The lock one agent per runtime directory holds while it runs.
    public static func lockPath(_ settings: Settings) -> String { settings.runtimeDirectory + "/agent.lock" }

    /// True when no agent holds the lock (none runs or is starting).
    public static func lockFree(_ settings: Settings) -> Bool {
        try? PrivateDirectory.ensure(settings.runtimeDirectory)
        guard let lock = try? FileLock(path: lockPath(settings), wait: false) else { return false }
        lock.release()
        return true
    }

    /// Connects to the agent; nil at once when there is none (no socket, a
    /// dead one, another owner). `seconds` bounds every later read and write.
    public static func connect(_ path: String, seconds: Int) -> Int32? {
        var st = stat()
        guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFSOCK, st.st_uid == getuid() else { return nil }
        let fd = Descriptors.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue))
        guard fd >= 0 else { return nil }
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withAddress(path) { address, length in Glibc.connect(fd, address, length) == 0 }
        guard connected == true, peerUID(fd) == getuid() else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Listens on `path` (a stale socket file is replaced), its directory
    /// made 0700 first.
    public static func listen(_ path: String) throws -> Int32 {
        try PrivateDirectory.ensure(Posix.dirname(path))
        unlink(path)
        let fd = Descriptors.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue))
        guard fd >= 0 else { throw TokenVaultError.internal("socket: \(String(cString: strerror(errno)))") }
        let old = umask(0o077)
        defer { umask(old) }
        let bound = withAddress(path) { address, length in bind(fd, address, length) == 0 }
        guard bound == true, Glibc.listen(fd, 64) == 0 else {
            let why = bound == nil ? "the path is too long" : String(cString: strerror(errno))
            close(fd)
            throw TokenVaultError.permission("cannot listen on \(path): \(why)")
        }
        return fd
    }

    /// The process at the other end (SO_PEERCRED); nil when unknown.
    public static func peerPID(_ fd: Int32) -> pid_t? {
        var credentials: (pid: pid_t, uid: uid_t, gid: gid_t) = (0, 0, 0)
        var length = socklen_t(MemoryLayout<(pid_t, uid_t, gid_t)>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0, credentials.pid > 0 else {
            return nil
        }
        return credentials.pid
    }

    /// The uid of the process at the other end (SO_PEERCRED); nil when unknown.
    public static func peerUID(_ fd: Int32) -> uid_t? {
        // struct ucred (pid, uid, gid): glibc declares it only under _GNU_SOURCE.
        var credentials: (pid: pid_t, uid: uid_t, gid: gid_t) = (0, 0, 0)
        var length = socklen_t(MemoryLayout<(pid_t, uid_t, gid_t)>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
            Int(length) == MemoryLayout<(pid_t, uid_t, gid_t)>.size
        else { return nil }
        return credentials.uid
    }

    private static func withAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }

    // MARK: Framing

    /// Sends one message; false when the other end is gone.
    public static func send(_ fd: Int32, _ message: JSONValue) -> Bool {
        sendFrame(fd, Array(message.text.utf8))
    }

    /// Reads one message; nil when the other end is gone, too slow, or sent
    /// something that is not one.
    public static func receive(_ fd: Int32) -> JSONValue? {
        receiveFrame(fd).flatMap(json)
    }

    /// A frame's body read as a JSON message; nil when it is not one.
    public static func json(_ body: [UInt8]) -> JSONValue? {
        JSONValue.parsed(Data(body))
    }

    /// `n` as the four bytes (big-endian) that give a length on the socket.
    public static func lengthBytes(_ n: Int) -> [UInt8] {
        let n = UInt32(truncatingIfNeeded: n)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
    }

    /// The length in the four bytes at `start` of `bytes` (which has them).
    public static func length(in bytes: [UInt8], at start: Int) -> Int {
        Int(bytes[start]) << 24 | Int(bytes[start + 1]) << 16 | Int(bytes[start + 2]) << 8 | Int(bytes[start + 3])
    }

    /// Sends one frame (its length, then `body`); false when the other end is gone.
    public static func sendFrame(_ fd: Int32, _ body: [UInt8]) -> Bool {
        guard body.count <= maxMessage else { return false }
        let frame = lengthBytes(body.count) + body
        var done = 0
        while done < frame.count {
            let w = frame.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + done, frame.count - done, Int32(MSG_NOSIGNAL))
            }
            if w < 0, errno == EINTR { continue }
            guard w > 0 else { return false }
            done += w
        }
        return true
    }

    /// Reads one frame's body; nil when the other end is gone, too slow, or
    /// announced more than `maxMessage`.
    public static func receiveFrame(_ fd: Int32) -> [UInt8]? {
        guard let head = read(fd, 4) else { return nil }
        let n = length(in: head, at: 0)
        guard n <= maxMessage else { return nil }
        return read(fd, n)
    }

    /// A frame that arrives in pieces on a descriptor no thread waits on: the
    /// agent reads every connection's request this way, from one thread, so a
    /// client that sends half a frame holds no thread (docs/agent.md).
    public struct FrameAssembly: Sendable {
        private var bytes: [UInt8] = []

        public init() {}

        public enum Progress: Equatable, Sendable {
            /// More is to come.
            case more
            /// The frame's body, whole.
            case complete([UInt8])
            /// It announced more than `maxMessage`, or sent past its end.
            case invalid
        }

        /// Adds what arrived and says how the frame stands.
        public mutating func add(_ chunk: ArraySlice<UInt8>) -> Progress {
            bytes += chunk
            guard bytes.count >= 4 else { return .more }
            let n = AgentSocket.length(in: bytes, at: 0)
            guard n <= maxMessage, bytes.count <= 4 + n else { return .invalid }
            return bytes.count == 4 + n ? .complete(Array(bytes[4...])) : .more
        }
    }

    /// Reads `count` bytes, keeping only what has arrived: a frame that
    /// announces a megabyte and sends nothing costs nothing.
    private static func read(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: min(count, 1 << 16))
        while out.count < count {
            let want = min(chunk.count, count - out.count)
            let r = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, want, 0) }
            if r < 0, errno == EINTR { continue }
            guard r > 0 else { return nil }
            out += chunk[0..<r]
        }
        return out
    }
}
