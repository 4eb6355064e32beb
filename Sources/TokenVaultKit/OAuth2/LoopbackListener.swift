import Dispatch
import FoundationEssentials
import Glibc

/// The redirect target of a native-app login (RFC 8252 §7.3): a socket on
/// 127.0.0.1 that accepts one redirect to `/callback`, answers the browser
/// with a page saying it may be closed, and closes. Requests for other paths
/// (a browser's /favicon.ico) get a 404 and do not end the wait.
public final class LoopbackListener {
    public let port: Int
    private var fd: Int32

    /// Binds 127.0.0.1:`port` (0: an ephemeral port).
    public init(port: Int = 0) throws {
        let fd = Descriptors.socket(AF_INET, Int32(SOCK_STREAM.rawValue))
        guard fd >= 0 else {
            throw TokenVaultError.temporary("cannot open a socket: \(String(cString: strerror(errno)))")
        }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 8) == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw TokenVaultError.usage(
                "cannot listen on 127.0.0.1:\(port) for the login redirect: \(why)",
                hint: "free that port, or choose another with --port or redirect_uri")
        }
        var actual = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        self.fd = fd
        self.port = Int(UInt16(bigEndian: actual.sin_port))
    }

    deinit { stop() }

    public func stop() {
        if fd >= 0 {
            close(fd)
            fd = -1
        }
    }

    /// Seconds one request may take to arrive in full: a client trickling
    /// bytes cannot hold the (single-threaded) listener for longer.
    static let requestDeadline = 2.0

    /// Waits up to `timeout` seconds (a hard bound) for the redirect of this
    /// login and returns its query parameters. A redirect that does not
    /// `belong` to it (a wrong or missing state: a stale tab, or any local
    /// process) gets an error page, and the wait goes on.
    public func waitForRedirect(
        path: String = "/callback", timeout: Double,
        belongs: ([String: String]) -> Bool,
        page: ([String: String]) -> String
    ) throws -> [String: String] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else {
                throw TokenVaultError.temporary("no login redirect arrived within \(Int(timeout)) s")
            }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(min(left, 3600) * 1000))
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { continue }
            let client = Descriptors.accept(fd)
            guard client >= 0 else { continue }
            _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
            defer { close(client) }
            let requestEnd = min(deadline, Date().addingTimeInterval(Self.requestDeadline))
            guard let target = readRequestTarget(client, until: requestEnd) else { continue }
            let (requestPath, query) = split(target)
            guard requestPath == path else {
                respond(
                    client, status: "404 Not Found", body: "<!doctype html><title>tokenvault</title><p>Not found.</p>")
                continue
            }
            let params = Dictionary(FormEncoding.decode(query) ?? [], uniquingKeysWith: { first, _ in first })
            guard belongs(params) else {
                respond(
                    client, status: "400 Bad Request",
                    body:
                        "<!doctype html><title>tokenvault</title><p>This is not the login tokenvault is waiting for; it goes on waiting.</p>"
                )
                continue
            }
            respond(client, status: "200 OK", body: page(params))
            stop()
            return params
        }
    }

    /// The request target of a GET, from the request line; nil for anything else.
    private func readRequestTarget(_ client: Int32, until end: Date) -> String? {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while buffer.count < 16384, !buffer.containsHeaderEnd {
            let left = end.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var pfd = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(left * 1000) + 1)
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { return nil }
            let n = read(client, &chunk, chunk.count)
            if n < 0, errno == EAGAIN || errno == EINTR { continue }
            guard n > 0 else { break }
            buffer += chunk[0..<n]
        }
        guard let lineEnd = buffer.firstIndex(of: 0x0D) ?? buffer.firstIndex(of: 0x0A) else { return nil }
        let parts = String(decoding: buffer[0..<lineEnd], as: UTF8.self).split(separator: " ")
        guard parts.count == 3, parts[0] == "GET" else { return nil }
        return String(parts[1])
    }

    private func split(_ target: String) -> (String, String) {
        guard let q = target.firstIndex(of: "?") else { return (target, "") }
        return (String(target[..<q]), String(target[target.index(after: q)...]))
    }

    private func respond(_ client: Int32, status: String, body: String) {
        let bytes = Array(body.utf8)
        let head =
            "HTTP/1.1 \(status)\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(bytes.count)\r\n"
            + "Cache-Control: no-store\r\nConnection: close\r\n\r\n"
        let all = Array(head.utf8) + bytes
        _ = all.withUnsafeBytes { write(client, $0.baseAddress!, $0.count) }
    }
}

private extension Array where Element == UInt8 {
    var containsHeaderEnd: Bool {
        guard count >= 4 else { return false }
        for i in 0...(count - 4)
        where self[i] == 0x0D && self[i + 1] == 0x0A && self[i + 2] == 0x0D && self[i + 3] == 0x0A {
            return true
        }
        return false
    }
}
