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

/// A Secret Service provider other than gnome-keyring, run by a fixture
/// script on a private bus as its users run it, in a directory of its own
/// (its HOME and XDG directories).
class PrivateProvider {
    /// The environment of a call the provider is to hold (a locked database,
    /// a closed wallet, an access request nobody answers): waited for one
    /// second, not the default three, which calls that are answered keep.
    static let held = ["TOKENVAULT_DBUS_TIMEOUT": "1"]

    let bus: PrivateBus
    let dir: String
    let script: String
    /// The provider's process, once started (the fixture's child, left running).
    var pid: pid_t = 0

    init(script: String) throws {
        bus = try PrivateBus()
        dir = bus.dir + "/provider"
        self.script = script
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    var env: [String: String] { bus.env }

    /// The X display the provider runs on (Qt's xcb platform), nil: offscreen.
    var display: VirtualDisplay?

    /// What the fixture printed; a failure throws with its stderr.
    @discardableResult
    func tool(_ args: [String], stdin: String? = nil) throws -> String {
        let r = runProcess(
            "/usr/bin/python3", [Paths.fixtures.appendingPathComponent(script).path] + args,
            stdin: stdin,
            env: bus.env.merging(
                ["PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1", "TV_DISPLAY": display?.name ?? ""]
            ) { $1 },
            limit: 60)
        guard r.status == 0 else {
            throw NSError(
                domain: script, code: Int(r.status),
                userInfo: [NSLocalizedDescriptionKey: "\(script) \(args[0]): \(r.stderr)"])
        }
        return r.out
    }

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
        display?.stop()
    }
}

/// Debian's KeePassXC with its Secret Service integration on
/// (Tests/Fixtures/keepassxc_provider.py): databases with an exposed group,
/// opened with their passwords, locked with `keepassxc --lock`, quit and
/// started again.
final class PrivateKeePassXC: PrivateProvider {
    /// Each database's password (its file and label are its name).
    /// "Bare" exposes no group to the Secret Service, as a new database.
    static let passwords = ["Passwords": "pw-one", "Work": "pw-two", "Bare": "pw-three"]

    /// `onDisplay`: on an X server (Xvfb) with Qt's xcb platform, as
    /// desktops run it: a locked database then shows its Unlock dialog.
    init(onDisplay: Bool = false) throws {
        try super.init(script: "keepassxc_provider.py")
        if onDisplay { display = try VirtualDisplay() }
        for (name, password) in Self.passwords {
            try tool(["make", dir, name] + (name == "Bare" ? ["bare"] : []), stdin: password)
        }
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
}

/// KWallet's kwalletd5 with its Secret Service API on
/// (Tests/Fixtures/kwallet_provider.py): the wallet `kdewallet` opened as
/// pam_kwallet5 opens it at login, closed as after its idle timeout.
final class PrivateKWallet: PrivateProvider {
    static let password = "wallet-pw"

    init() throws { try super.init(script: "kwallet_provider.py") }

    /// Started (again), `kdewallet` open; `firstLogin`: as the very first
    /// login leaves it, the wallet just created and no `default` alias.
    func start(firstLogin: Bool = false) throws {
        stop()
        pid = try XCTUnwrap(pid_t(try tool([firstLogin ? "first" : "start", dir], stdin: Self.password)))
    }

    /// Every wallet closed: the next access asks for the wallet's password.
    func close() throws { try tool(["close", dir]) }

    /// Quit as a logout quits it: its wallets closed first, which writes
    /// them (kwalletd5 writes a change to disk only seconds later, and not
    /// at all when it is stopped before: docs/config.md, "KWallet").
    override func stop() {
        if pid > 0 { try? close() }
        super.stop()
    }

    /// A second wallet, `name`, beside `kdewallet` (a copy of it, closed), from the next start.
    func addWallet(_ name: String) throws {
        let wallets = dir + "/data/kwalletd/"
        for ext in ["kwl", "salt"] where !FileManager.default.fileExists(atPath: wallets + name + "." + ext) {
            try FileManager.default.copyItem(atPath: wallets + "kdewallet." + ext, toPath: wallets + name + "." + ext)
        }
    }
}

/// The items of the Secret Service on `provider`'s bus that hold a
/// credential for `service`, by their D-Bus paths.
func items(_ service: String, on provider: PrivateProvider) -> [String] {
    let r = runProcess(
        "/usr/bin/python3", [Paths.fixtures.appendingPathComponent("keyring_collections.py").path, "items", service],
        env: provider.env.merging(["PATH": "/usr/bin:/bin"]) { $1 })
    XCTAssertEqual(r.status, 0, r.stderr)
    return r.out.split(separator: "\n").map(String.init)
}

/// The requests the sandbox's agent has answered.
func agentRequests(_ s: Sandbox) throws -> Int {
    let r = s.tv("agent", "status", "--json")
    XCTAssertEqual(r.status, 0, r.stderr)
    let status = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
    return status?["requests"] as? Int ?? -1
}

/// Debian's Xvfb on the first free display (`-displayfd`), no TCP; windows
/// found and typed into with xdotool, as a user answers a dialog.
final class VirtualDisplay {
    let name: String
    private let server: Process

    init() throws {
        server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/Xvfb")
        server.arguments = ["-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "1280x800x24"]
        server.environment = ["PATH": "/usr/bin:/bin"]
        name = ":" + (try startAndReadFirstLine(server))
    }

    /// The first window whose name contains `title`, within `seconds`; nil when none appeared.
    func window(_ title: String, within seconds: Double = 20) -> String? {
        var found: String?
        _ = eventually(seconds) {
            found = self.xdotool(["search", "--name", title]).split(separator: "\n").last.map(String.init)
            return found != nil
        }
        return found
    }

    /// Focuses the window and types `text`, then Return (no window manager: the focus is set directly).
    func type(_ text: String, into window: String) {
        xdotool(["windowfocus", "--sync", window])
        xdotool(["type", "--delay", "20", text])
        xdotool(["key", "Return"])
    }

    /// Escape in the window: its dialog cancelled.
    func escape(_ window: String) {
        xdotool(["windowfocus", "--sync", window])
        xdotool(["key", "Escape"])
    }

    @discardableResult
    func xdotool(_ args: [String]) -> String {
        runProcess("/usr/bin/xdotool", args, env: ["PATH": "/usr/bin:/bin", "DISPLAY": name], limit: 20).out
    }

    func stop() {
        if server.isRunning {
            server.terminate()
            server.waitUntilExit()
        }
    }
}
