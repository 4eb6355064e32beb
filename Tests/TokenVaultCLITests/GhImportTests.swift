import Foundation
import XCTest

/// `tokenvault import gh` (docs/reference.md, "Moving in") from what gh
/// itself keeps: Debian's gh 2.23 logging in with a token (it validates the
/// token against GitHub Enterprise's API at `ghe.test`, played by
/// Tests/Fixtures/gh_api.py behind a proxy, and keeps it in hosts.yml), and gh's
/// keyring items as gh 2.24 and later write them through go-keyring
/// (`service` `gh:HOST`, `username`; Debian's gh has no keyring support), in
/// a real gnome-keyring beside another application's items, which are read
/// and never changed.
final class GhImportTests: XCTestCase {
    nonisolated(unsafe) static var api: Process!
    nonisolated(unsafe) static var ca = ""
    nonisolated(unsafe) static var proxy = ""
    nonisolated(unsafe) static var keyring: PrivateKeyring!
    static let apiDir = NSTemporaryDirectory() + "tv-gh-api-" + UUID().uuidString.prefix(8)

    override class func setUp() {
        keyring = try! PrivateKeyring()
        api = Process()
        api.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        api.arguments = [Paths.fixtures.appendingPathComponent("gh_api.py").path, apiDir]
        api.environment = ["PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"]
        let line = try! startAndReadFirstLine(api).split(separator: " ").map(String.init)
        precondition(line.count == 2, "gh_api.py did not start")
        (proxy, ca) = ("http://127.0.0.1:\(line[0])", line[1])
    }

    override class func tearDown() {
        if api.isRunning {
            api.terminate()
            api.waitUntilExit()
        }
        keyring.stop()
        try? FileManager.default.removeItem(atPath: apiDir)
    }

    /// gh run in the sandbox's home, reaching the API through its proxy and trusting its CA.
    func gh(_ s: Sandbox, _ args: [String], stdin: String? = nil) -> Run {
        var e = s.env
        e["SSL_CERT_FILE"] = Self.ca
        e["HTTPS_PROXY"] = Self.proxy
        e["GH_NO_UPDATE_NOTIFIER"] = "1"
        e.removeValue(forKey: "DBUS_SESSION_BUS_ADDRESS")
        return runProcess("/usr/bin/gh", args, stdin: stdin, env: e, limit: 60)
    }

    /// A login Debian's gh made: its hosts.yml moves in, the token works
    /// through tokenvault, and --remove-source leaves gh logged out.
    func testALoginDebiansGhMadeMovesIn() throws {
        let s = Sandbox()
        let token = "ghp_" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        let login = gh(s, ["auth", "login", "--hostname", "ghe.test", "--with-token"], stdin: token + "\n")
        XCTAssertEqual(login.status, 0, login.stderr)
        XCTAssertEqual(gh(s, ["auth", "token", "--hostname", "ghe.test"]).out, token)
        let hosts = s.env["XDG_CONFIG_HOME"]! + "/gh/hosts.yml"
        s.expect("import", "gh", stderr: ["imported ghe.test (default)", "still holds 1 secret in plaintext"])
        XCTAssertEqual(s.tv("get", "ghe.test").out, token)
        s.expect("import", "gh", "--remove-source", stderr: ["already stored", "removed 1 secret from \(hosts)"])
        let left = try String(contentsOfFile: hosts, encoding: .utf8)
        XCTAssertFalse(left.contains(token), left)
        XCTAssertTrue(left.contains("ghe.test:"), left)
        XCTAssertNotEqual(gh(s, ["auth", "token", "--hostname", "ghe.test"]).out, token)
        XCTAssertEqual(s.tv("get", "ghe.test").out, token)
    }

    /// secret-tool with the keyring's bus.
    func secretTool(_ args: [String], stdin: String? = nil) -> Run {
        runProcess(
            "/usr/bin/secret-tool", args, stdin: stdin,
            env: Self.keyring.env.merging(["PATH": "/usr/bin:/bin"]) { $1 })
    }

    /// gh's keyring items (go-keyring's attributes, as gh 2.40 writes them
    /// for two accounts and the active one) beside another application's
    /// items: each account's token moves in, read from its own item; nothing
    /// in the keyring changes, --remove-source included.
    func testGhsKeyringItemsAreReadAndLeftAsTheyAre() throws {
        let s = Sandbox()
        s.env.merge(Self.keyring.env) { $1 }
        let host = "ghe-\(UUID().uuidString.prefix(6).lowercased()).example.com"
        let dir = s.env["XDG_CONFIG_HOME"]! + "/gh"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try """
        \(host):
            users:
                alice:
                bob:
            git_protocol: https
            user: alice
        gone.example.com:
            user: carol

        """.write(toFile: dir + "/hosts.yml", atomically: true, encoding: .utf8)
        let items: [(user: String, token: String)] = [("alice", "gho_alice"), ("bob", "gho_bob"), ("", "gho_alice")]
        for item in items {
            let r = secretTool(
                [
                    "store", "--label=Password for '\(item.user)' on 'gh:\(host)'", "service", "gh:\(host)", "username",
                    item.user,
                ], stdin: item.token)
            XCTAssertEqual(r.status, 0, r.stderr)
        }
        // Another application's item naming the same host: never read for gh, never touched.
        XCTAssertEqual(
            secretTool(["store", "--label=other", "service", host, "account", "alice"], stdin: "other").status, 0)
        func keyringNow() -> String { secretTool(["search", "--all", "--unlock", "service", "gh:\(host)"]).stdout }
        let before = keyringNow()

        s.expect(
            "import", "gh", "--remove-source",
            stderr: [
                "imported \(host) (default)", "imported \(host) (bob)",
                "kept out carol@gone.example.com: gh keeps no token for it in the keyring",
                "gh's keyring items stay as they are",
            ])
        XCTAssertEqual(s.tv("get", host).out, "gho_alice")
        XCTAssertEqual(s.tv("get", host, "--account", "bob").out, "gho_bob")
        XCTAssertEqual(keyringNow(), before, "gh's items are as they were")
        XCTAssertEqual(secretTool(["lookup", "service", host, "account", "alice"]).out, "other")
        for item in items {
            XCTAssertEqual(secretTool(["lookup", "service", "gh:\(host)", "username", item.user]).out, item.token)
        }

        // No session bus: the keyring cannot be asked; one line says so, nothing else changes.
        let t = Sandbox()
        t.env["XDG_CONFIG_HOME"] = s.env["XDG_CONFIG_HOME"]
        t.expect("import", "gh", stderr: ["kept out alice@\(host): gh keeps its token in the Secret Service"])
        XCTAssertEqual(t.tv("get", host).status, 3)
    }
}
