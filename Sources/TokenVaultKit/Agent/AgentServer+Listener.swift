import FoundationEssentials
import Glibc

/// How the agent takes connections (docs/agent.md, "The socket, and who is
/// answered"; "Started by systemd").
extension AgentServer {
    /// Seconds a connection may take to send its whole request.
    static let requestSeconds = 10.0
    /// Connections whose request is still arriving, at most: beyond this the
    /// oldest is closed.
    static let mostPending = 256

    /// The socket systemd passed (LISTEN_FDS, LISTEN_PID: fd 3), if any.
    public func activatedSocket() -> Int32? {
        guard settings[.listenPID] == String(getpid()), settings[.listenFDs] == "1" else { return nil }
        return 3
    }

    /// Accepts connections of this user and reads each one's request here,
    /// on this one thread (poll): a client that sends half a request holds a
    /// descriptor for at most `requestSeconds`, never a thread. A request that
    /// has arrived whole is answered on a worker of `requests`. Once the agent
    /// stops listening, the listener is polled no more: a connection made
    /// meanwhile stays in the socket's queue, where systemd sees it and starts
    /// the next agent (a socket of the agent's own is gone by then).
    func acceptRequests() -> Never {
        var pending: [Int32: (frame: AgentSocket.FrameAssembly, until: Double)] = [:]
        var stop = stopEnds[0]
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let listening = stop >= 0 && !state.withLock { $0.leaving }
            var fds = [
                pollfd(fd: listening ? listener : -1, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stop, events: Int16(POLLIN), revents: 0),
            ]
            let connections = Array(pending.keys)
            fds += connections.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let now = Date().timeIntervalSince1970
            let soonest = pending.values.map(\.until).min().map { max(0, $0 - now) }
            let timeout = soonest.map { Int32(min($0 * 1000 + 1, 60_000)) } ?? (listening ? -1 : 60_000)
            guard poll(&fds, nfds_t(fds.count), timeout) >= 0 else { continue }
            if fds[1].revents != 0 { stop = -1 }  // stopped listening: the listener is left alone
            for (i, fd) in connections.enumerated() where fds[2 + i].revents != 0 {
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
                if n < 0, errno == EAGAIN || errno == EINTR { continue }
                let progress = n > 0 ? pending[fd]!.frame.add(chunk[0..<n]) : .invalid
                // The buffer outlives the request: what a client sent (its environment) is not kept in it.
                if n > 0 { chunk.withUnsafeMutableBytes { _ = memset($0.baseAddress!, 0, n) } }
                switch progress {
                case .more: continue
                case .invalid:
                    pending[fd] = nil
                    close(fd)
                case .complete(let body):
                    pending[fd] = nil
                    Descriptors.setBlocking(fd)
                    var timeout = timeval(tv_sec: Int(Self.requestSeconds), tv_usec: 0)
                    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                    requests.run { self.handle(fd, body) }
                }
            }
            let later = Date().timeIntervalSince1970
            for (fd, p) in pending where p.until <= later {
                pending[fd] = nil
                close(fd)
            }
            guard listening, fds[0].revents & Int16(POLLIN) != 0 else { continue }
            let fd = Descriptors.acceptNonBlocking(listener)
            guard fd >= 0 else { continue }
            guard AgentSocket.peerUID(fd) == getuid() else {
                close(fd)
                continue
            }
            if pending.count >= Self.mostPending, let oldest = pending.min(by: { $0.value.until < $1.value.until }) {
                pending[oldest.key] = nil
                close(oldest.key)
            }
            pending[fd] = (AgentSocket.FrameAssembly(), later + Self.requestSeconds)
        }
    }

    /// No more requests. A socket of the agent's own is shut and removed (if
    /// still its own); one systemd passed is left as it is — shutting it
    /// would fail the socket unit — and only no longer polled.
    func stopListening() {
        let first = state.withLock { s -> Bool in
            defer { s.leaving = true }
            return !s.leaving
        }
        guard first, stopEnds[1] >= 0 else { return }  // not serving (a test's): nothing to stop
        Posix.write(stopEnds[1], [1])
        guard !activated else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        if socketIdentity != nil { unlink(AgentSocket.path(settings)) }
    }
}
