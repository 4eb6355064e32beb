import Foundation
import XCTest

/// The Secret Service backend against a real gnome-keyring on a private bus,
/// and the auto backend as the Secret Service comes and goes.
final class SecretServiceTests: XCTestCase {
    var keyring: PrivateKeyring!

    override func setUpWithError() throws {
        keyring = try PrivateKeyring()
    }

    override func tearDown() {
        keyring.stop()
    }

    func sandbox(_ backend: String) -> Sandbox {
        let s = Sandbox(backend: backend)
        s.env.merge(keyring.env) { $1 }
        return s
    }

    func secretTool(_ args: [String], stdin: String? = nil) -> Run {
        runProcess(
            "/usr/bin/secret-tool", args, stdin: stdin, env: keyring.env.merging(["PATH": "/usr/bin:/bin"]) { $1 })
    }

    func testRoundTripAndItemShape() {
        let s = sandbox("secret-service")
        XCTAssertEqual(s.tv("set", "https://api.weibo.com/2/", stdin: #"{"access_token":"abc","uid":"42"}"#).status, 0)
        XCTAssertEqual(s.tv("get", "weibo").out, "abc")
        XCTAssertEqual(s.tv("get", "weibo", "--field", "uid").out, "42")
        let search = secretTool(["search", "--all", "service", "api.weibo.com"])
        let found = search.stdout + search.stderr  // secret-tool prints attributes on stderr
        XCTAssertTrue(found.contains("label = tokenvault: api.weibo.com (default)"), found)
        XCTAssertTrue(found.contains("attribute.account = default"), found)
        XCTAssertTrue(found.contains("attribute.type = oauth2"), found)
        XCTAssertTrue(found.contains("schema = io.tokenvault.Credential"), found)
        // No secret in an attribute or the label.
        for line in found.split(separator: "\n") where line.hasPrefix("label") || line.hasPrefix("attribute") {
            XCTAssertFalse(line.contains("abc"), String(line))
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.vault), "nothing goes to the file")
        let status = s.tv("status", "weibo")
        XCTAssertTrue(status.stdout.contains("secret-service"), status.stdout)
        XCTAssertEqual(s.tv("delete", "weibo").status, 0)
        XCTAssertEqual(s.tv("get", "weibo").status, 3)
        XCTAssertEqual(secretTool(["lookup", "service", "api.weibo.com"]).stdout, "")
    }

    func testAResourceKeyIsOneItemOfItsOwn() {
        let s = sandbox("secret-service")
        XCTAssertEqual(s.tv("set", "mcp.example.com/a/mcp", stdin: "resource-token").status, 0)
        XCTAssertEqual(s.tv("set", "mcp.example.com", stdin: "host-token").status, 0)
        XCTAssertTrue(
            secretTool(["lookup", "service", "mcp.example.com/a/mcp"]).stdout.contains(
                #""access_token":"resource-token""#))
        XCTAssertEqual(s.tv("get", "https://mcp.example.com/a/mcp/x").out, "resource-token")
        XCTAssertEqual(s.tv("get", "https://mcp.example.com/b").out, "host-token")
        XCTAssertEqual(s.tv("delete", "mcp.example.com/a/mcp").status, 0)
        XCTAssertTrue(
            secretTool(["lookup", "service", "mcp.example.com"]).stdout.contains(#""access_token":"host-token""#))
    }

    func testSecretToolInteropBothWays() {
        let s = sandbox("secret-service")
        XCTAssertEqual(
            secretTool(
                ["store", "--label=by hand", "service", "api.example.com", "account", "default", "type", "token"],
                stdin: "handmade"
            ).status, 0)
        XCTAssertEqual(s.tv("get", "api.example.com").out, "handmade")
        XCTAssertTrue(s.tv("list").stdout.contains("api.example.com"))
        s.expect("set", "api.github.com", stdin: "gho_token\n")
        let lookup = secretTool(["lookup", "service", "api.github.com", "account", "default"])
        let record = try? JSONSerialization.jsonObject(with: Data(lookup.stdout.utf8)) as? [String: Any]
        XCTAssertEqual(record?["access_token"] as? String, "gho_token", lookup.stdout)
    }

    func testChangingTypeLeavesOneItem() {
        let s = sandbox("secret-service")
        s.expect("set", "api.x.com", stdin: "plain\n")
        s.expect("set", "api.x.com", stdin: #"{"oauth_token":"t","oauth_token_secret":"s"}"#)
        let found = secretTool(["search", "--all", "service", "api.x.com"])
        XCTAssertEqual(found.stdout.components(separatedBy: "label = ").count - 1, 1, found.stdout)
        XCTAssertEqual(s.tv("get", "api.x.com", "--field", "token_secret").out, "s")
    }

    func testMigrateBothWaysLosesNothing() {
        let s = sandbox("secret-service")
        s.expect("set", "api.a.com", stdin: "a\n")
        s.expect("set", "api.b.com", "--account", "two", stdin: #"{"access_token":"b","refresh_token":"rb"}"#)
        XCTAssertEqual(s.tv("migrate", "--to", "file").status, 0)
        XCTAssertEqual(s.tv("get", "api.a.com").status, 3, "moved out of the Secret Service")
        XCTAssertEqual(
            s.tv(
                "get", "api.b.com", "--account", "two", "--field", "refresh_token", env: ["TOKENVAULT_BACKEND": "file"]
            ).out, "rb")
        XCTAssertEqual(s.tv("migrate", "--to", "secret-service").status, 0)
        XCTAssertEqual(s.tv("get", "api.a.com").out, "a")
        XCTAssertEqual(s.tv("get", "api.b.com", "--account", "two").out, "b")
        XCTAssertEqual(s.tv("list", env: ["TOKENVAULT_BACKEND": "file"]).stdout, "")
    }

    func testAutoFindsCredentialsAfterAvailabilityChanged() {
        let s = sandbox("auto")
        let noBus = ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"]
        // Stored while the Secret Service was away: it went to the file...
        XCTAssertEqual(s.tv("set", "api.away.com", stdin: "from-file\n", env: noBus).status, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: s.vault))
        // ...and is found when it is back.
        XCTAssertEqual(s.tv("get", "api.away.com").out, "from-file")
        // Stored in the Secret Service, then looked up without it: the message says what was not checked.
        s.expect("set", "api.here.com", stdin: "in-keyring\n")
        let r = s.tv("get", "api.here.com", env: noBus)
        XCTAssertEqual(r.status, 3)
        XCTAssertTrue(r.stderr.contains("Secret Service was not checked"), r.stderr)
        // Where both hold a copy, the newer wins (the next second: records count whole seconds).
        let second = Int(Date().timeIntervalSince1970)
        XCTAssertTrue(eventually(2) { Int(Date().timeIntervalSince1970) > second })
        s.expect("set", "api.here.com", stdin: "newer-in-file\n", env: noBus)
        XCTAssertEqual(s.tv("get", "api.here.com").out, "newer-in-file")
        // delete removes every copy it can reach.
        XCTAssertEqual(s.tv("delete", "api.here.com").status, 0)
        XCTAssertEqual(s.tv("get", "api.here.com").status, 3)
    }

    func testBackendCommandSaysWhatAnswers() {
        let s = sandbox("auto")
        let r = s.tv("backend")
        XCTAssertEqual(r.status, 0)
        XCTAssertTrue(r.stdout.hasPrefix("secret-service (gnome-keyring-daemon via D-Bus)"), r.stdout)
        let json = s.tv("backend", "--json", env: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"])
        XCTAssertTrue(json.stdout.contains(#""in_use":"file""#), json.stdout)
    }

    func testAKeyringThatDoesNotAnswerIsWaitedForVisiblyOnATerminalOnly() throws {
        let s = sandbox("secret-service")
        XCTAssertEqual(s.tv("set", "api.x.com", stdin: "tok\n").status, 0)
        let bus = String(keyring.address.prefix { $0 != "," })
        // The real gnome-keyring, stopped: the bus is up, the Secret Service does not answer.
        let owner = runProcess(
            "/usr/bin/dbus-send",
            [
                "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                "org.freedesktop.DBus.GetConnectionUnixProcessID", "string:org.freedesktop.secrets",
            ],
            env: keyring.env.merging(["PATH": "/usr/bin:/bin"]) { $1 })
        let pid = try XCTUnwrap(
            owner.stdout.split(separator: " ").last.flatMap {
                Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }, owner.stderr)
        XCTAssertEqual(kill(pid, SIGSTOP), 0)
        defer { kill(pid, SIGCONT) }
        let env = ["TOKENVAULT_DBUS_TIMEOUT": "3"]
        // It is there and holds the call, as a provider whose database waits to be unlocked does:
        // after the wait, 77 (docs/config.md), not "no Secret Service".
        let seen = s.onTerminal(["get", "api.x.com"], env: env)
        XCTAssertEqual(seen.status, 77, seen.stdout)
        XCTAssertTrue(
            seen.stdout.contains(
                "\u{1B}[Ktokenvault: waiting for the Secret Service: 2 s left of 3 s to look up api.x.com (default) (bus \(bus))"
            ),
            seen.stdout)
        XCTAssertTrue(
            seen.stdout.contains("\u{1B}[Ktokenvault: waiting for the Secret Service: 1 s left of 3 s"), seen.stdout)
        XCTAssertTrue(
            seen.stdout.contains(
                "\u{1B}[Ktokenvault: error: the Secret Service holds the request to look up api.x.com"),
            "the line is cleared first: \(seen.stdout)")
        // A narrow terminal gets the line cut to fit, the time left kept.
        let doctor = s.onTerminal(["doctor", "--color", "never"], columns: 64, env: env)
        let drawn = doctor.stdout.components(separatedBy: "\u{1B}[K").filter { $0.hasPrefix("tokenvault: waiting for") }
        XCTAssertTrue(
            drawn.contains {
                $0.hasPrefix("tokenvault: waiting for the Secret Service: 2 s left of 3 s") && $0.hasSuffix("…")
            }, doctor.stdout)
        XCTAssertTrue(drawn.allSatisfy { $0.count < 64 }, doctor.stdout)
        let piped = s.tv("get", "api.x.com", env: env)
        XCTAssertEqual(piped.status, 77)
        XCTAssertFalse(
            piped.stderr.contains("waiting for") || piped.stderr.contains("\u{1B}"),
            "nothing of it in a pipe: \(piped.stderr)")
        kill(pid, SIGCONT)
        XCTAssertEqual(s.tv("get", "api.x.com", env: env).out, "tok")
    }

    /// A `get` asks the Secret Service for one session: the one the head start
    /// opened while the arguments were parsed. A lookup that took libsecret's
    /// other shared instance negotiated a second one (docs/benchmarks.md: 4.5 ms
    /// of a 15 ms `get`).
    func testAGetOpensOneSession() throws {
        let s = sandbox("secret-service")
        XCTAssertEqual(s.tv("set", "api.one.example", stdin: "one-token").status, 0)
        let monitor = try NotificationMonitor(
            keyring, match: "type='method_call',interface='org.freedesktop.Secret.Service'")
        let r = runProcess(Paths.binary, ["get", "api.one.example"], env: s.env)
        XCTAssertEqual(r.stdout, "one-token\n", r.stderr)
        let seen = monitor.stop(once: ["member=GetSecrets"])
        XCTAssertEqual(seen.components(separatedBy: "member=OpenSession").count - 1, 1, seen)
    }
}
