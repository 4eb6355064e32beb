import Foundation
import TokenVaultKit
import TokenVaultTestSupport
import XCTest

/// What one run of the built binary did.
struct Run {
    var status: Int32
    var stdout: String
    var stderr: String
    var out: String { stdout.trimmingCharacters(in: .newlines) }
}

/// The package root and the built executables next to the test bundle.
enum Paths {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static var binary: String { product("tokenvault") }

    /// An executable the package builds.
    static func product(_ name: String) -> String {
        var dir = Bundle.main.bundleURL
        for _ in 0..<3 {
            let candidate = dir.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return root.appendingPathComponent(".build/debug/" + name).path
    }
    static let fixtures = root.appendingPathComponent("Tests/Fixtures")
}

/// Runs a program with a given environment and stdin, in a session of its
/// own (no terminal), killed with its process group if it outlives `limit`
/// seconds. Spawned with posix_spawn and read with poll (Spawned.swift), not
/// Foundation's Process: the tests start hundreds of these from many threads
/// at once, which Process did not always survive.
func runProcess(
    _ executable: String, _ args: [String], stdin: String? = nil, env: [String: String],
    limit: Double = 120, in directory: String? = nil
) -> Run {
    var argv = [executable] + args
    if let directory { argv = ["/usr/bin/env", "-C", directory] + argv }
    do {
        let r = try Spawned.run(argv, env: env, stdin: stdin.map { Array($0.utf8) }, limit: limit)
        return Run(
            status: r.status, stdout: String(decoding: r.stdout, as: UTF8.self),
            stderr: String(decoding: r.stderr, as: UTF8.self))
    } catch {
        return Run(status: -1, stdout: "", stderr: "cannot start \(executable): \(error)")
    }
}

/// Starts a Python fixture server that prints `port N` first; its process and
/// port (the one starter of every test target: `FixtureServer`).
func startFixtureServer(
    _ script: String, _ args: [String] = [], python: String = "/usr/bin/python3"
) throws -> (Process, Int) {
    let (process, started) = FixtureServer.started(
        Paths.fixtures.appendingPathComponent(script), arguments: args, python: python,
        environment: ["PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"])
    guard let port = started else {
        if process.isRunning { process.terminate() }
        throw NSError(domain: script, code: 1, userInfo: [NSLocalizedDescriptionKey: "\(script) did not start"])
    }
    return (process, port)
}

/// Starts a server process and returns the first line it prints (its address or port).
func startAndReadFirstLine(_ process: Process) throws -> String {
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    var line = Data()
    while !line.contains(0x0A) {
        let chunk = Spawned.readChunk(out.fileHandleForReading.fileDescriptor)
        if chunk.isEmpty { break }
        line += chunk
    }
    return String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Waits up to `seconds` for `condition`, looking every tenth of a second;
/// true when it held. What a test waits on, instead of a sleep that stands for it.
func eventually(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if condition() { return true }
        usleep(100_000)
    }
    return condition()
}

/// A loopback port that refuses connections for as long as this value
/// lives: a socket is bound to it (so no other test can take it) and never
/// listens. Where a test needs "nobody serves this port", instead of a
/// number that another class's server may have been given.
final class ClosedPort {
    let port: Int
    private let fd: Int32

    init() {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in
                bind(fd, p, length) == 0 ? getsockname(fd, p, &length) : -1
            }
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        precondition(port > 0, "no loopback port could be bound")
    }

    deinit { close(fd) }
}

/// Writes to `path` a copy of the binary whose ELF build ID differs in one
/// byte: to the agent, another build (an older install, a second copy).
/// Returns this binary's own build ID.
@discardableResult
func copyOfAnotherBuild(to path: String) throws -> String {
    var bytes = try Data(contentsOf: URL(fileURLWithPath: Paths.binary))
    let id = runProcess("/usr/bin/readelf", ["-n", Paths.binary], env: ["PATH": "/usr/bin:/bin"]).stdout
        .components(separatedBy: "Build ID: ").dropFirst().first?.prefix(40)
    let build = try XCTUnwrap(id.map(String.init))
    let raw = Data(stride(from: 0, to: build.count, by: 2).map { UInt8(build.dropFirst($0).prefix(2), radix: 16)! })
    let at = try XCTUnwrap(bytes.range(of: raw), "the build ID is in the file")
    bytes[at.lowerBound] ^= 0xFF
    try bytes.write(to: URL(fileURLWithPath: path))
    chmod(path, 0o755)
    return build
}

/// How many times `needle` is in the writable memory of process `pid`
/// (its heap, stacks and anonymous maps, read through /proc/PID/mem): where
/// a secret that should have been wiped would still be.
func occurrencesInMemory(of needle: String, pid: Int32) -> Int {
    guard let maps = try? String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8) else { return -1 }
    let fd = open("/proc/\(pid)/mem", O_RDONLY)
    guard fd >= 0 else { return -1 }
    defer { close(fd) }
    let pattern = Array(needle.utf8)
    var count = 0
    for line in maps.split(separator: "\n") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 5, fields[1].hasPrefix("rw") else { continue }
        let path = fields.count >= 6 ? String(fields[5]) : ""
        guard path.isEmpty || path.hasPrefix("[heap") || path.hasPrefix("[stack") else { continue }
        let range = fields[0].split(separator: "-").compactMap { UInt64($0, radix: 16) }
        guard range.count == 2, range[1] > range[0], range[1] - range[0] <= 1 << 30 else { continue }
        var buffer = [UInt8](repeating: 0, count: Int(range[1] - range[0]))
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(range[0])) }
        guard n > 0 else { continue }
        var i = 0
        while i + pattern.count <= n {
            if buffer[i] == pattern[0], buffer[i..<(i + pattern.count)].elementsEqual(pattern) { count += 1 }
            i += 1
        }
    }
    return count
}

/// True once process `pid` has ended (gone, or a zombie nobody reaped yet).
func processGone(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
    return stat.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).hasPrefix("Z") ?? true
}

/// The counters a fixture server publishes at `url` (its /stats).
func fixtureStats(_ url: String) throws -> [String: Int] {
    let r = runProcess("/usr/bin/curl", ["-s", url], env: [:])
    return (try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Int]) ?? [:]
}

/// Tests against quirk_provider.py and a private gnome-keyring, both started
/// once per test class.
class QuirkProviderTestCase: XCTestCase {
    nonisolated(unsafe) static var server: Process!
    nonisolated(unsafe) static var port = 0
    nonisolated(unsafe) static var keyring: PrivateKeyring!

    override class func setUp() {
        (server, port) = try! startFixtureServer("quirk_provider.py")
        keyring = try! PrivateKeyring()
    }

    override class func tearDown() {
        if server.isRunning {
            server.terminate()
            server.waitUntilExit()
        }
        keyring.stop()
    }

    /// The provider's counters of answers per path.
    func stats() throws -> [String: Int] {
        try fixtureStats("http://127.0.0.1:\(Self.port)/stats")
    }

    /// `s` holding an expired credential (refresh token `r`) of provider `q`
    /// (service api.quirk.example), whose token endpoint is the quirk server's `path`.
    @discardableResult
    func expiredAtQuirk(_ path: String, in s: Sandbox) throws -> Sandbox {
        try s.writeConfig(
            """
            [providers.q]
            service = "api.quirk.example"
            token_url = "http://127.0.0.1:\(Self.port)/\(path)"
            client_id = "cid"
            """)
        s.expect("set", "q", "--provider", "q", stdin: #"{"access_token":"a","refresh_token":"r","expires_at":1}"#)
        return s
    }
}

/// A throwaway home: its own XDG directories, vault and config.
final class Sandbox: @unchecked Sendable {
    let home: String
    var env: [String: String]

    init(backend: String = "file", inProcess: Bool = true) {
        self.inProcess = inProcess
        home = NSTemporaryDirectory() + "tv-test-" + UUID().uuidString.prefix(8)
        try! FileManager.default.createDirectory(atPath: home + "/run", withIntermediateDirectories: true)
        chmod(home + "/run", 0o700)
        env = [
            "HOME": home,
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "XDG_DATA_HOME": home + "/data",
            "XDG_CONFIG_HOME": home + "/config",
            "XDG_RUNTIME_DIR": home + "/run",
            "TOKENVAULT_BACKEND": backend,
            "TOKENVAULT_PASSPHRASE": "correct horse",
            "TOKENVAULT_KDF_PROFILE": "interactive",
            "TOKENVAULT_KEY_TTL": "0",
            // Agents only where a test starts one (the tests of starting on first use unset this).
            "TOKENVAULT_AGENT": "manual",
            "LANG": "C.UTF-8",
        ]
    }

    deinit { try? FileManager.default.removeItem(atPath: home) }

    var vault: String { env["XDG_DATA_HOME"]! + "/tokenvault/vault" }

    /// Runs `tokenvault ARGS` and fails the test, at the caller's line,
    /// unless it exits with `status` and its stdout and stderr hold every
    /// piece given (in the spirit of argument-parser's `AssertExecuteCommand`).
    /// For a step whose result the test does not look at otherwise.
    @discardableResult
    func expect(
        _ args: String..., status: Int32 = 0, stdin: String? = nil, env extra: [String: String] = [:],
        stdout: [String] = [], stderr: [String] = [], limit: Double = 120, file: StaticString = #filePath,
        line: UInt = #line
    ) -> Run {
        let r = run(args, stdin: stdin, env: extra, limit: limit)
        let shown = "tokenvault \(args.joined(separator: " "))"
        XCTAssertEqual(r.status, status, "\(shown): \(r.stderr)", file: file, line: line)
        for piece in stdout where !r.stdout.contains(piece) {
            XCTFail("\(shown): stdout lacks \(piece): \(r.stdout)", file: file, line: line)
        }
        for piece in stderr where !r.stderr.contains(piece) {
            XCTFail("\(shown): stderr lacks \(piece): \(r.stderr)", file: file, line: line)
        }
        return r
    }

    /// Runs `tokenvault ARGS` with this sandbox's environment plus `extra`
    /// (an empty value unsets a variable), killed after `limit` seconds. Its
    /// result is for the test to check; a step checked only for its status is `expect`.
    func tv(_ args: String..., stdin: String? = nil, env extra: [String: String] = [:], limit: Double = 120) -> Run {
        run(args, stdin: stdin, env: extra, limit: limit)
    }

    /// `tokenvault ARGS` run in this process at the time `clock` tells:
    /// what a clock decides (an expiry, a margin) without waiting for it.
    func tv(
        _ args: String..., at clock: Clock, env extra: [String: String] = [:], file: StaticString = #filePath,
        line: UInt = #line
    ) -> Run {
        var e = env
        for (k, v) in extra { e[k] = v.isEmpty ? nil : v }
        XCTAssertTrue(InProcess.runsInProcess(args, env: e), "runs in this process", file: file, line: line)
        return InProcess.run(args, env: e, stdin: nil, clock: clock)
    }

    /// `agent status --json` of the agent of `env`'s session; nil when none answers.
    func agentStatus(env extra: [String: String] = [:]) -> [String: Any]? {
        let r = run(["agent", "status", "--json"], env: extra)
        guard r.status == 0 else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
    }

    /// True when the agent (of `env`'s session) is done with the one
    /// credential it keeps renewed: its renewal ended (it asked the provider,
    /// or found another's record), or it looked after a renewal and waits
    /// longer than ten minutes. What a test waits for instead of a sleep.
    func agentSettled(env extra: [String: String] = [:]) -> Bool {
        guard let kept = (agentStatus(env: extra)?["credentials"] as? [[String: Any]])?.first else { return false }
        return kept["last"] != nil || (kept["next_renewal"] as? Int ?? 0) > Int(Date().timeIntervalSince1970) + 600
    }

    /// `tokenvault ARGS` run by `count` processes at once (threads other than
    /// the main one run the binary), their results in the order they ended.
    func concurrently(_ count: Int, _ args: String...) -> [Run] {
        let runs = Locked<[Run]>([])
        DispatchQueue.concurrentPerform(iterations: count) { _ in
            let r = run(args)
            runs.mutate { $0.append(r) }
        }
        return runs.value
    }

    func run(_ args: [String], stdin: String? = nil, env extra: [String: String] = [:], limit: Double = 120) -> Run {
        var e = env
        for (k, v) in extra { e[k] = v.isEmpty ? nil : v }
        if inProcess, InProcess.runsInProcess(args, env: e) { return InProcess.run(args, env: e, stdin: stdin) }
        return runProcess(Paths.binary, args, stdin: stdin, env: e, limit: limit)
    }

    /// Commands that need no process of their own run inside the test
    /// process (`InProcess`): for the classes whose tests are about what a
    /// command prints and stores, not about processes.
    var inProcess = true

    /// Runs `tokenvault ARGS` on a pseudo-terminal `columns` wide (on_pty.py);
    /// its stdout is everything the terminal showed. With `interruptAfter`,
    /// Ctrl-C is typed once that text has been shown; with `answer`, its line
    /// once its prompt has.
    func onTerminal(
        _ args: [String], columns: Int = 200, interruptAfter: String? = nil,
        answer: (prompt: String, line: String)? = nil,
        env extra: [String: String] = [:]
    ) -> Run {
        var e = env.merging(extra) { $1 }
        e["PTY_COLUMNS"] = String(columns)
        e["PTY_INTERRUPT_AFTER"] = interruptAfter
        e["PTY_PROMPT"] = answer?.prompt
        e["PTY_ANSWER"] = answer?.line
        return runProcess(
            "/usr/bin/python3", [Paths.fixtures.appendingPathComponent("on_pty.py").path, Paths.binary] + args, env: e,
            limit: 90)
    }

    /// Marks the stored credential of `service` expired, its tokens and
    /// provider kept; returns its access token.
    @discardableResult
    func expireStored(_ service: String, account: String = "default") throws -> String {
        let json = tv("get", service, "--account", account, "--format", "json", "--no-refresh")
        guard json.status == 0,
            let record = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        else {
            throw NSError(
                domain: "Sandbox", code: 3, userInfo: [NSLocalizedDescriptionKey: "no record: \(json.stderr)"])
        }
        let token = record["access_token"] as? String ?? ""
        let expired: [String: Any] = [
            "access_token": token, "refresh_token": record["refresh_token"] ?? NSNull(), "expires_at": 1,
        ]
        let again = String(decoding: try JSONSerialization.data(withJSONObject: expired), as: UTF8.self)
        XCTAssertEqual(
            tv("set", service, "--account", account, "--provider", record["provider"] as? String ?? "", stdin: again)
                .status, 0)
        return token
    }

    /// Writes `$XDG_CONFIG_HOME/tokenvault/config.toml`.
    func writeConfig(_ toml: String) throws {
        let dir = env["XDG_CONFIG_HOME"]! + "/tokenvault"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try toml.write(toFile: dir + "/config.toml", atomically: true, encoding: .utf8)
    }

    /// Runs `tokenvault ARGS` through /bin/sh, for umask and the like.
    func shell(_ script: String, env extra: [String: String] = [:]) -> Run {
        var e = env
        e["TV"] = Paths.binary
        for (k, v) in extra { e[k] = v }
        return runProcess("/bin/sh", ["-c", script], env: e)
    }
}

/// A private session bus with an unlocked gnome-keyring: the real Secret Service.
final class PrivateKeyring {
    let dir: String
    let address: String
    private let bus: Process

    /// `listen`: where the bus listens (a path, as a login session's
    /// `$XDG_RUNTIME_DIR/bus`); by default a private directory of its own.
    init(listen: String? = nil) throws {
        dir = NSTemporaryDirectory() + "tv-bus-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: dir + "/run", withIntermediateDirectories: true)
        chmod(dir + "/run", 0o700)
        let env = ["HOME": dir, "XDG_RUNTIME_DIR": dir + "/run", "PATH": "/usr/bin:/bin"]
        bus = Process()
        bus.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        bus.arguments = [
            "--session", "--nofork", "--print-address=1",
            "--address=" + (listen.map { "unix:path=\($0)" } ?? "unix:dir=\(dir)"),
        ]
        bus.environment = env
        address = try startAndReadFirstLine(bus)
        guard address.hasPrefix("unix:") else {
            throw NSError(
                domain: "PrivateKeyring", code: 1,
                userInfo: [NSLocalizedDescriptionKey: "dbus-daemon printed no address"])
        }
        var kenv = env
        kenv["DBUS_SESSION_BUS_ADDRESS"] = address
        try Self.startDaemon(env: kenv)
    }

    private static func startDaemon(env: [String: String], replace: Bool = false) throws {
        // The daemon forks and would keep open every descriptor it inherits,
        // including the one Foundation's Process watches to see a child exit:
        // Python's subprocess starts it with only stdin/stdout/stderr.
        let start = """
            import subprocess, sys
            r = subprocess.run(["gnome-keyring-daemon", "--unlock", "--components=secrets"\(replace ? ", \"--replace\"" : "")],
                               input=b"keyring-test-password", stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, close_fds=True)
            sys.exit(r.returncode)
            """
        let r = runProcess("/usr/bin/python3", ["-c", start], env: env, limit: 30)
        guard r.status == 0 else {
            throw NSError(
                domain: "PrivateKeyring", code: Int(r.status),
                userInfo: [NSLocalizedDescriptionKey: "gnome-keyring-daemon --unlock failed: \(r.stderr)"])
        }
    }

    /// gnome-keyring started again (a new daemon replaces the running one
    /// on the bus, as after a crash or an upgrade), its keyrings as they were.
    func restart() throws {
        try Self.startDaemon(
            env: [
                "HOME": dir, "XDG_RUNTIME_DIR": dir + "/run", "PATH": "/usr/bin:/bin",
                "DBUS_SESSION_BUS_ADDRESS": address,
            ],
            replace: true)
    }

    /// The environment a client needs to reach it.
    var env: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": address] }

    func stop() {
        if bus.isRunning {
            bus.terminate()
            bus.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: dir)
    }

    deinit { stop() }
}

/// dbus-monitor on a private bus, watching desktop notifications
/// (org.freedesktop.Notifications): what it saw, once stopped.
final class NotificationMonitor {
    /// Monitors running: while one watches, commands run as processes (a
    /// notification goes to the bus of the process's environment).
    static let watching = Locked(0)
    private let monitor = Process()
    private let path = NSTemporaryDirectory() + "tv-monitor-" + UUID().uuidString.prefix(8)

    /// `match`: the messages it prints (a D-Bus match rule): by default, desktop notifications.
    init(_ keyring: PrivateKeyring, match: String = "interface='org.freedesktop.Notifications'") throws {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        monitor.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-monitor")
        monitor.arguments = ["--session", match]
        monitor.environment = keyring.env
        monitor.standardOutput = FileHandle(forWritingAtPath: path)
        try monitor.run()
        Self.watching.mutate { $0 += 1 }
        // It has become a monitor once the bus took its name back (it prints each message as it comes).
        guard eventually(10, { self.seen.contains("member=NameLost") }) else {
            throw NSError(domain: "dbus-monitor did not become a monitor within 10 s", code: 1)
        }
    }

    private var seen: String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// What it saw, once it has seen every piece of `expected` (10 s at most).
    func stop(once expected: [String]) -> String {
        _ = eventually(10) { expected.allSatisfy(self.seen.contains) }
        monitor.terminate()
        monitor.waitUntilExit()
        return seen
    }

    deinit {
        Self.watching.mutate { $0 -= 1 }
        if monitor.isRunning { monitor.terminate() }
        try? FileManager.default.removeItem(atPath: path)
    }
}
