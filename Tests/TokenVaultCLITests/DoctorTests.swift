import Foundation
import XCTest

/// `tokenvault doctor` in the states a setup can be in: healthy, a broken
/// config, no D-Bus, a locked gnome-keyring, a vault others can read, an etcd
/// that does not answer; `--network` against the quirk provider.
final class DoctorTests: QuirkProviderTestCase {
    var base: String { "http://127.0.0.1:\(Self.port)" }

    func line(_ r: Run, _ prefix: String) -> String {
        r.stdout.split(separator: "\n").map(String.init).first { $0.hasPrefix(prefix) } ?? ""
    }

    func testCompletionsInstalledUnderXDGDataDirsAreFound() throws {
        let s = Sandbox()
        let share = s.home + "/opt-share"
        for (dir, file) in [
            ("bash-completion/completions", "tokenvault"), ("zsh/site-functions", "_tokenvault"),
            ("fish/vendor_completions.d", "tokenvault.fish"),
        ] {
            try FileManager.default.createDirectory(atPath: share + "/" + dir, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: share + "/" + dir + "/" + file, contents: Data("#\n".utf8))
        }
        let r = s.tv("doctor", env: ["XDG_DATA_DIRS": "/nowhere:" + share])
        for shell in ["bash", "zsh", "fish"] {
            XCTAssertTrue(line(r, "✓ \(shell) completion: \(share)/").hasPrefix("✓"), r.stdout)
        }
    }

    func testAHealthyFileVaultSetupIsAllWell() throws {
        let s = Sandbox()
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: #"{"access_token":"t","expires_in":3600}"#).status, 0)
        let r = s.tv("doctor")
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(line(r, "✓ file vault: \(s.vault), format 1, private").hasPrefix("✓"), r.stdout)
        XCTAssertTrue(line(r, "✓ backend: file (set by TOKENVAULT_BACKEND)").hasPrefix("✓"), r.stdout)
        XCTAssertTrue(line(r, "✓ credentials: 1 stored, none needs a login").hasPrefix("✓"), r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("all is well\n"), r.stdout)
        XCTAssertFalse(r.stdout.contains("✗"), r.stdout)
        let json = s.tv("doctor", "--json")
        XCTAssertEqual(json.status, 0)
        let o = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(o["ok"] as? Bool, true)
        XCTAssertGreaterThan((o["checks"] as? [Any])?.count ?? 0, 5)
    }

    /// No Secret Service, no file vault, no passphrase source and no terminal
    /// (a cron job, a CI step): nothing can store a credential, and doctor
    /// fails saying so, with what to set; with a passphrase source it is a
    /// vault not created yet.
    func testNothingThatCanStoreACredentialIsAFailure() throws {
        let s = Sandbox(backend: "auto", inProcess: false)
        s.env["TOKENVAULT_PASSPHRASE"] = nil
        s.env["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=/nonexistent/bus"
        // setsid: no controlling terminal, as under cron.
        let none = s.shell(#"setsid -w "$TV" doctor --color never"#)
        XCTAssertEqual(none.status, 2, none.stdout + none.stderr)
        XCTAssertTrue(
            line(none, "✗ file vault:").contains("nothing here can create it (no passphrase source, no terminal)"),
            none.stdout)
        XCTAssertTrue(none.stdout.contains("TOKENVAULT_PASSPHRASE_FILE"), none.stdout)
        let given = s.shell(#"setsid -w "$TV" doctor --color never"#, env: ["TOKENVAULT_PASSPHRASE": "correct horse"])
        XCTAssertTrue(line(given, "- file vault:").contains("not created yet"), given.stdout)
        XCTAssertFalse(given.stdout.contains("nothing here can create it"), given.stdout)
    }

    func testABrokenConfigIsALineNotTheEnd() throws {
        let s = Sandbox()
        try s.writeConfig(
            """
            [providers.local]
            token_url = "\(base)/rotate"
            client_id = "cid"
            client_secert = "x"
            """)
        let r = s.tv("doctor")
        XCTAssertEqual(r.status, 2, r.stdout + r.stderr)
        XCTAssertTrue(
            line(r, "✗ provider local:").contains(
                "config.toml:4: unknown setting providers.local.client_secert (did you mean client_secret?)"), r.stdout)
        XCTAssertTrue(
            line(r, "✓ file vault").hasPrefix("✓") || line(r, "- file vault").hasPrefix("-"),
            "the other checks still run: \(r.stdout)")
        XCTAssertTrue(r.stdout.hasSuffix("1 check failed\n"), r.stdout)
        try s.writeConfig("backend = \"file\ntimeout = 3\n")
        let syntax = s.tv("doctor")
        XCTAssertEqual(syntax.status, 2)
        XCTAssertTrue(
            line(syntax, "✗ config:").contains("config.toml:1:16: a string is not closed on this line"), syntax.stdout)
        XCTAssertEqual(
            syntax.stdout.components(separatedBy: "✗ config:").count, 2,
            "one failed check; the line and caret are not mistakes of their own: \(syntax.stdout)")
        XCTAssertTrue(syntax.stdout.hasSuffix("1 check failed\n"), syntax.stdout)
        XCTAssertTrue(line(syntax, "✓ runtime directory").hasPrefix("✓"), syntax.stdout)
    }

    func testNoDBusForTheSecretServiceBackend() throws {
        let s = Sandbox(backend: "secret-service")
        let r = s.tv("doctor", env: ["DBUS_SESSION_BUS_ADDRESS": ""])
        XCTAssertEqual(r.status, 2, r.stdout)
        XCTAssertTrue(line(r, "✗ d-bus: no D-Bus session bus").hasPrefix("✗"), r.stdout)
        // For auto it is information: the file vault is used.
        let auto = Sandbox(backend: "auto")
        let a = auto.tv("doctor", env: ["DBUS_SESSION_BUS_ADDRESS": ""])
        XCTAssertEqual(a.status, 0, a.stdout)
        XCTAssertTrue(line(a, "- d-bus: no D-Bus session bus").hasPrefix("-"), a.stdout)
    }

    func testALockedKeyringIsSaidWithTheWayToUnlockIt() throws {
        let keyring = try PrivateKeyring()
        defer { keyring.stop() }
        let s = Sandbox(backend: "auto")
        s.env.merge(keyring.env) { $1 }
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "t").status, 0)
        let healthy = s.tv("doctor")
        XCTAssertEqual(healthy.status, 0, healthy.stdout)
        XCTAssertTrue(
            line(healthy, "✓ secret service: gnome-keyring-daemon, default collection unlocked").hasPrefix("✓"),
            healthy.stdout)
        let lock = runProcess(
            "/usr/bin/python3", [Paths.fixtures.appendingPathComponent("unlock_keyring.py").path, "lock"],
            env: keyring.env.merging(["PATH": "/usr/bin:/bin"]) { $1 }, limit: 60)
        XCTAssertEqual(lock.out, "locked")
        let r = s.tv("doctor")
        XCTAssertEqual(r.status, 2, r.stdout)
        XCTAssertTrue(
            line(r, "✗ secret service:").contains("default collection locked")
                && line(r, "✗ secret service:").contains("fix: unlock"), r.stdout)
        XCTAssertTrue(
            line(r, "- credentials: not checked").hasPrefix("-"), "no prompt, no failure to read: \(r.stdout)")
    }

    func testAVaultOthersCanReadIsRefusedWithTheFix() throws {
        let s = Sandbox()
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "t").status, 0)
        chmod(s.vault, 0o644)
        let r = s.tv("doctor")
        XCTAssertEqual(r.status, 2, r.stdout)
        XCTAssertTrue(
            line(r, "✗ file vault: unsafe permissions 644 on the vault \(s.vault) — fix: run: chmod 600 \(s.vault)")
                .hasPrefix("✗"), r.stdout)
    }

    func testAnEtcdThatDoesNotAnswer() throws {
        let s = Sandbox(backend: "etcd")
        try s.writeConfig("backend = \"etcd\"\n[etcd]\nendpoints = [\"http://127.0.0.1:1\"]\ntimeout = 1\n")
        let r = s.tv("doctor", limit: 60)
        XCTAssertEqual(r.status, 2, r.stdout + r.stderr)
        XCTAssertTrue(line(r, "✗ etcd http://127.0.0.1:1: unreachable").hasPrefix("✗"), r.stdout)
    }

    func testNetworkReachesEachProviderAndComparesClocks() throws {
        let s = Sandbox()
        try s.writeConfig(
            """
            [providers.q]
            token_url = "\(base)/rotate"
            client_id = "cid"

            [providers.gone]
            token_url = "http://127.0.0.1:1/token"
            client_id = "cid"
            """)
        let r = s.tv("doctor", "--network")
        XCTAssertEqual(r.status, 2, r.stdout)
        XCTAssertTrue(line(r, "✓ provider q: \(base)/rotate answered HTTP").contains("clocks agree"), r.stdout)
        XCTAssertTrue(line(r, "✗ provider gone:").contains("cannot reach"), r.stdout)
    }
}
