import Foundation
import XCTest

/// A private session bus that starts nothing by itself: no service files, so
/// a call to org.freedesktop.secrets while no provider owns it fails at once
/// instead of starting gnome-keyring (which would take the name, and make
/// KeePassXC turn its own Secret Service off).
final class PrivateBus {
    let dir: String
    let address: String
    private let daemon: Process

    init() throws {
        dir = NSTemporaryDirectory() + "tv-sbus-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig><type>session</type><listen>unix:dir=\(dir)</listen>
            <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/>
            <allow own="*"/></policy></busconfig>
            """
        try config.write(toFile: dir + "/bus.conf", atomically: true, encoding: .utf8)
        daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        daemon.arguments = ["--config-file=\(dir)/bus.conf", "--nofork", "--print-address=1"]
        daemon.environment = ["PATH": "/usr/bin:/bin", "HOME": dir]
        address = try startAndReadFirstLine(daemon)
        guard address.hasPrefix("unix:") else {
            throw NSError(domain: "PrivateBus", code: 1, userInfo: [NSLocalizedDescriptionKey: "no bus address"])
        }
    }

    var env: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": address] }

    func stop() {
        if daemon.isRunning {
            daemon.terminate()
            daemon.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: dir)
    }

    deinit { stop() }
}

/// Debian's KeePassXC with its Secret Service integration on, as a user runs
/// it, on a private bus (Tests/Fixtures/keepassxc_provider.py): databases
/// with an exposed group, opened with their passwords, locked with
/// `keepassxc --lock`, quit and started again.
final class PrivateKeePassXC {
    let bus: PrivateBus
    let dir: String
    private(set) var pid: pid_t = 0
    /// Each database's password (its file and label are its name).
    static let passwords = ["Passwords": "pw-one", "Work": "pw-two"]

    init() throws {
        bus = try PrivateBus()
        dir = bus.dir + "/keepassxc"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for (name, password) in Self.passwords { try tool(["make", dir, name], stdin: password) }
    }

    var env: [String: String] { bus.env }

    @discardableResult
    private func tool(_ args: [String], stdin: String? = nil) throws -> String {
        let r = runProcess(
            "/usr/bin/python3", [Paths.fixtures.appendingPathComponent("keepassxc_provider.py").path] + args,
            stdin: stdin, env: bus.env.merging(["PATH": "/usr/bin:/bin"]) { $1 }, limit: 60)
        guard r.status == 0 else {
            throw NSError(
                domain: "PrivateKeePassXC", code: Int(r.status),
                userInfo: [NSLocalizedDescriptionKey: "keepassxc_provider.py \(args[0]): \(r.stderr)"])
        }
        return r.out
    }

    /// Started (again) with these databases open, the last one active (the
    /// one the `default` alias names); `confirm`: whether each access asks.
    func start(_ databases: [String] = ["Passwords"], confirm: Bool = false) throws {
        stop()
        try tool(["confirm", dir, confirm ? "yes" : "no"])
        let passwords = databases.map { Self.passwords[$0]! + "\n" }.joined()
        pid = try XCTUnwrap(pid_t(try tool(["start", dir] + databases, stdin: passwords)))
    }

    /// Every open database locked, as `keepassxc --lock` does.
    func lock() throws { try tool(["lock", dir]) }

    /// Quit as its user quits it (SIGTERM: it saves what a client wrote
    /// last), or killed when a pending dialog keeps it from quitting.
    func stop() {
        guard pid > 0 else { return }
        var status: Int32 = 0
        // Not the test's child (the fixture started it), unless the test process reaps orphans.
        let gone = { kill(self.pid, 0) != 0 || waitpid(self.pid, &status, WNOHANG) == self.pid }
        kill(pid, SIGTERM)
        if !eventually(3, gone) {
            kill(-pid, SIGKILL)
            _ = eventually(10, gone)
        }
        pid = 0
    }

    func shutdown() {
        stop()
        bus.stop()
    }
}
