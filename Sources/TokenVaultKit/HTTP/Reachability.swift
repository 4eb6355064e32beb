import FoundationEssentials
import Glibc

extension HTTPTransport {
    /// A double checks nothing.
    public func checkConnects(to url: String) throws {}
}

extension CurlTransport {
    /// Whether `url`'s server takes a TCP connection, before a browser is
    /// sent there (docs/providers.md, "Login lifecycle"): nothing is sent, so
    /// no server sees a request it would count. Refused or unresolvable: the
    /// error a request would meet. Through a proxy, or slower than a few
    /// seconds, nothing is said (the browser has its own way there).
    public func checkConnects(to url: String) throws {
        guard let parts = URLComponents(string: url), let host = parts.host, !host.isEmpty,
            let scheme = parts.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { return }
        let settings = proxies ?? ProxySettings(settings: Settings())
        if (try? settings.proxy(for: url)) != nil { return }
        let port = parts.port ?? (scheme == "https" ? 443 : 80)
        let peer = (try? ServiceKey(parsing: url).description) ?? host
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let name = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        guard getaddrinfo(name, String(port), &hints, &found) == 0, let first = found else {
            throw HTTPFailure(kind: .unreachable, detail: "could not resolve host \(host)")
                .error(peer: peer, what: "a provider")
        }
        defer { freeaddrinfo(found) }
        var refused = false
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let a = entry {
            switch Self.connects(a.pointee, within: min(timeout, 5)) {
            case true?: return
            case false?: refused = true
            case nil: return  // slow: not for this check to decide
            }
            entry = a.pointee.ai_next
        }
        if refused {
            throw HTTPFailure(kind: .refused, detail: "connection refused").error(peer: peer, what: "a provider")
        }
    }

    /// True: connected; false: refused; nil: no answer within `seconds`.
    private static func connects(_ a: addrinfo, within seconds: Int) -> Bool? {
        let fd = socket(
            a.ai_family, a.ai_socktype | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), a.ai_protocol)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if connect(fd, a.ai_addr, a.ai_addrlen) == 0 { return true }
        guard errno == EINPROGRESS else { return false }
        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        guard poll(&p, 1, Int32(seconds * 1000)) == 1 else { return nil }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        return error == 0
    }
}
