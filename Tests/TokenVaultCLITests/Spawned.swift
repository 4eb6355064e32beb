import Foundation
import Glibc

/// One child process run to its end: posix_spawn into a new session, its
/// stdin written and its stdout and stderr read with poll, EINTR retried
/// everywhere, the whole process group killed at the time limit.
enum Spawned {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// glibc's POSIX_SPAWN_SETSID (spawn.h, a GNU extension Swift's Glibc
    /// module leaves out): the child leads a new session and process group.
    private static let setSID: Int32 = 0x80

    /// Pipes are made and the child spawned under one lock, so no other
    /// test thread's child inherits a pipe end between pipe() and FD_CLOEXEC
    /// (which would keep this child's output open past its exit).
    private static let spawnLock = NSLock()

    static func run(
        _ argv: [String], env: [String: String], stdin: [UInt8]?, limit: Double
    )
        throws -> (status: Int32, stdout: [UInt8], stderr: [UInt8])
    {
        BinaryUse.note(argv, env: env)
        // A child that stops reading its stdin early must not kill the test runner.
        signal(SIGPIPE, SIG_IGN)
        var out: [Int32] = [-1, -1], err: [Int32] = [-1, -1], input: [Int32] = [-1, -1]
        var pid: pid_t = 0
        try spawnLock.withLock {
            func makePipe(_ fds: inout [Int32]) throws {
                guard pipe(&fds) == 0 else { throw Failure(description: "pipe: \(String(cString: strerror(errno)))") }
                for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            }
            try makePipe(&out)
            try makePipe(&err)
            if stdin != nil { try makePipe(&input) }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            if stdin != nil {
                posix_spawn_file_actions_adddup2(&actions, input[0], 0)
            } else {
                posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            }
            posix_spawn_file_actions_adddup2(&actions, out[1], 1)
            posix_spawn_file_actions_adddup2(&actions, err[1], 2)
            var attr = posix_spawnattr_t()
            posix_spawnattr_init(&attr)
            defer { posix_spawnattr_destroy(&attr) }
            // The test runner ignores SIGPIPE; its children get the default back,
            // and an empty signal mask.
            var defaults = sigset_t(), empty = sigset_t()
            sigemptyset(&defaults)
            sigaddset(&defaults, SIGPIPE)
            sigemptyset(&empty)
            posix_spawnattr_setsigdefault(&attr, &defaults)
            posix_spawnattr_setsigmask(&attr, &empty)
            posix_spawnattr_setflags(&attr, Int16(setSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
            let cArgs = argv.map { strdup($0) } + [nil]
            let cEnv = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer {
                cArgs.forEach { free($0) }
                cEnv.forEach { free($0) }
            }
            let rc = posix_spawn(&pid, argv[0], &actions, &attr, cArgs, cEnv)
            for fd in [out[1], err[1], input[0]] where fd >= 0 { close(fd) }
            guard rc == 0 else {
                for fd in [out[0], err[0], input[1]] where fd >= 0 { close(fd) }
                throw Failure(description: String(cString: strerror(rc)))
            }
        }
        var stdout: [UInt8] = [], stderr: [UInt8] = []
        var pending = stdin.map { ArraySlice($0) } ?? []
        var writeFD = input[1]
        if writeFD >= 0 {
            _ = fcntl(writeFD, F_SETFL, fcntl(writeFD, F_GETFL) | O_NONBLOCK)
            if pending.isEmpty {
                close(writeFD)
                writeFD = -1
            }
        }
        var readFDs = [out[0], err[0]]
        let deadline = now() + limit
        var killed = false
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !readFDs.isEmpty {
            var fds = readFDs.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            if writeFD >= 0 { fds.append(pollfd(fd: writeFD, events: Int16(POLLOUT), revents: 0)) }
            // After the kill, a grandchild outside the group may still hold a
            // pipe open: give it a few seconds, then stop reading.
            let left = (killed ? deadline + 5 : deadline) - now()
            if left <= 0 {
                if killed { break }
                kill(-pid, SIGKILL)
                killed = true
                continue
            }
            let n = poll(&fds, nfds_t(fds.count), Int32(min(left, 3600) * 1000) + 1)
            if n < 0 {
                if errno == EINTR { continue }
                break
            }
            for p in fds where p.revents != 0 {
                if p.fd == writeFD {
                    let written = pending.withUnsafeBytes { write(writeFD, $0.baseAddress, $0.count) }
                    if written > 0 { pending = pending.dropFirst(written) }
                    if pending.isEmpty || (written < 0 && errno != EAGAIN && errno != EINTR) {
                        close(writeFD)
                        writeFD = -1
                    }
                    continue
                }
                let got = read(p.fd, &buffer, buffer.count)
                if got < 0, errno == EINTR || errno == EAGAIN { continue }
                if got <= 0 {
                    close(p.fd)
                    readFDs.removeAll { $0 == p.fd }
                } else if p.fd == out[0] {
                    stdout += buffer[..<got]
                } else {
                    stderr += buffer[..<got]
                }
            }
        }
        for fd in readFDs { close(fd) }
        if writeFD >= 0 { close(writeFD) }
        if !killed, now() >= deadline { kill(-pid, SIGKILL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let exited = status & 0x7F == 0
        return (exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F), stdout, stderr)
    }

    /// What one read(2) of `fd` gives, EINTR retried; empty at end of file.
    /// (FileHandle.availableData traps on EINTR.)
    static func readChunk(_ fd: Int32) -> Data {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n < 0, errno == EINTR { continue }
            return n > 0 ? Data(buffer[..<n]) : Data()
        }
    }

    private static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
