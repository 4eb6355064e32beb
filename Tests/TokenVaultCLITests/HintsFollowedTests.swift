import Foundation
import XCTest

/// The first hour, fourth pass (docs/reference.md, "Exit codes"): each hint
/// followed literally leads to the fix of that failure, never to a second
/// login for a credential that is stored but could not be read. Against the
/// quirk provider and a private gnome-keyring, started once.
final class HintsFollowedTests: QuirkProviderTestCase {
    var base: String { "http://127.0.0.1:\(Self.port)" }

    func sandbox(backend: String = "auto") throws -> Sandbox {
        let s = Sandbox(backend: backend, inProcess: false)
        s.env.merge(Self.keyring.env) { $1 }
        try s.writeConfig(
            """
            [providers.django]
            service = "api.django.example"
            token_url = "\(base)/rotate"
            client_id = "cid"
            """)
        return s
    }

    /// A credential only the locked file vault holds, the agent running (it
    /// has no passphrase): at a terminal the `get` asks for the passphrase,
    /// as it does without the agent; without one, the hint unlocks the vault.
    func testALockedFileVaultAsksOnTheTerminalThroughTheAgentToo() throws {
        let s = try sandbox()
        s.expect(
            "set", "django", "--provider", "django", stdin: #"{"access_token":"in-the-file","expires_in":3600}"#,
            env: ["TOKENVAULT_BACKEND": "file"])
        s.env["TOKENVAULT_PASSPHRASE"] = nil
        s.expect("agent")
        defer { s.expect("agent", "stop") }
        let asked = s.onTerminal(["get", "django"], answer: ("Vault passphrase: ", "correct horse"))
        XCTAssertEqual(asked.status, 0, asked.stdout)
        XCTAssertTrue(asked.stdout.hasSuffix("in-the-file\n"), asked.stdout)
        // No terminal: 77 (the locked vault may hold it: never "not stored"), and the hint opens the vault.
        let r = s.tv("get", "django")
        XCTAssertEqual(r.status, 77, r.stderr)
        XCTAssertFalse(r.stderr.contains("no credential stored"), r.stderr)
        XCTAssertTrue(r.stderr.contains("hint: unlock the file vault first: tokenvault unlock"), r.stderr)
        XCTAssertFalse(r.stderr.contains("hint: run: tokenvault login"), r.stderr)
        XCTAssertEqual(
            r.stderr.components(separatedBy: "is locked (no passphrase source").count, 2, "said once: \(r.stderr)")
    }

    /// A machine with no session bus (a server): the first store creates the
    /// file vault and records the choice, saying so once; a keyring that
    /// appears later does not take over, and misses no longer say what was
    /// not checked.
    func testWithNoSecretServiceTheFirstStoreRecordsTheFileVault() throws {
        let s = try sandbox()
        s.env["TOKENVAULT_BACKEND"] = nil
        let bus = s.env["DBUS_SESSION_BUS_ADDRESS"]
        s.env["DBUS_SESSION_BUS_ADDRESS"] = nil
        let first = s.expect("set", "api.first.example", stdin: "one\n")
        XCTAssertTrue(first.stderr.contains("no Secret Service here"), first.stderr)
        XCTAssertTrue(first.stderr.contains("recorded backend = \"file\""), first.stderr)
        let config = try String(
            contentsOfFile: s.env["XDG_CONFIG_HOME"]! + "/tokenvault/config.toml", encoding: .utf8)
        XCTAssertTrue(config.hasPrefix("backend = \"file\"\n"), config)
        XCTAssertTrue(config.contains("[providers.django]"), config)
        let second = s.expect("set", "api.second.example", stdin: "two\n")
        XCTAssertFalse(second.stderr.contains("recorded"), second.stderr)
        // The keyring answers now: still the file vault, and nothing goes to the keyring.
        s.env["DBUS_SESSION_BUS_ADDRESS"] = bus
        s.expect("set", "api.third.example", stdin: "three\n", stderr: ["in file"])
        let miss = s.tv("get", "api.none.example")
        XCTAssertEqual(miss.status, 3, miss.stderr)
        XCTAssertFalse(miss.stderr.contains("not checked"), miss.stderr)
        XCTAssertEqual(s.tv("get", "api.first.example").out, "one")
    }

    /// Stored in the keyring, asked where no session bus is: the hint is to
    /// reach the keyring, a login comes only after; `list` says what it did
    /// not look at; a login says where it stored the credential.
    func testNoSessionBusNeverLeadsStraightToASecondLogin() throws {
        let s = try sandbox()
        s.expect(
            "set", "django", "--provider", "django", stdin: #"{"access_token":"in-the-keyring","expires_in":3600}"#)
        let away = ["DBUS_SESSION_BUS_ADDRESS": ""]
        let r = s.tv("get", "django", env: away)
        XCTAssertEqual(r.status, 3, r.stderr)
        XCTAssertTrue(r.stderr.contains("the Secret Service was not checked"), r.stderr)
        XCTAssertTrue(
            r.stderr.contains("hint: if it is stored in a keyring, run this where that keyring answers"), r.stderr)
        XCTAssertFalse(r.stderr.contains("desktop"), "no desktop advice where there is none: \(r.stderr)")
        let listed = s.tv("list", env: away)
        XCTAssertEqual(listed.status, 0, listed.stderr)
        XCTAssertTrue(
            listed.stderr.contains("the Secret Service was not checked (no D-Bus session bus"), listed.stderr)
        XCTAssertTrue(listed.stderr.contains("what it may hold is not listed"), listed.stderr)
        let stored = s.tv("set", "api.other.example", stdin: "x", env: away)
        XCTAssertTrue(stored.stderr.contains("in file"), stored.stderr)
    }

    /// A provider's name mistyped in `get` or `status` is suggested, as
    /// `login` suggests it, instead of `set` under the typo.
    func testAMistypedProviderIsSuggested() throws {
        let s = try sandbox(backend: "file")
        for command in ["get", "status"] {
            let r = s.tv(command, "djnago")
            XCTAssertEqual(r.status, 3, r.stderr)
            XCTAssertTrue(
                r.stderr.contains("hint: did you mean django? (a provider: tokenvault login django)"), r.stderr)
            XCTAssertFalse(r.stderr.contains("tokenvault set djnago"), r.stderr)
        }
    }

    /// A token typed after the service is refused and never echoed; a
    /// passphrase file others can read is refused.
    func testSecretsInTheWrongPlaceAreRefusedWithoutBeingShown() throws {
        let s = try sandbox(backend: "file")
        let r = s.tv("set", "api.example.com", "ghp_secret123")
        XCTAssertEqual(r.status, 64, r.stderr)
        XCTAssertFalse(r.stderr.contains("ghp_secret123"), r.stderr)
        XCTAssertTrue(r.stderr.contains("set reads the token from stdin"), r.stderr)
        XCTAssertTrue(r.stderr.contains("hint: type it at the prompt of: tokenvault set api.example.com"), r.stderr)
        let file = s.home + "/passphrase"
        try "correct horse\n".write(toFile: file, atomically: true, encoding: .utf8)
        XCTAssertEqual(chmod(file, 0o644), 0)
        s.env["TOKENVAULT_PASSPHRASE"] = nil
        s.env["TOKENVAULT_PASSPHRASE_FILE"] = file
        let open = s.tv("set", "api.example.com", stdin: "tok")
        XCTAssertEqual(open.status, 77, open.stderr)
        XCTAssertTrue(open.stderr.contains("is readable by others (mode 644)"), open.stderr)
        XCTAssertTrue(open.stderr.contains("hint: run: chmod 600 \(file)"), open.stderr)
        XCTAssertEqual(chmod(file, 0o600), 0)
        s.expect("set", "api.example.com", stdin: "tok")
    }

    /// `doctor --network` does not approve a client id that the provider
    /// never looked at: a redirect to its sign-in page is "cannot tell".
    func testDoctorCannotTellFromASignInRedirect() throws {
        let s = try sandbox(backend: "file")
        try s.writeConfig(
            """
            [providers.django]
            service = "api.django.example"
            authorize_url = "\(base)/signin-first/authorize"
            token_url = "\(base)/rotate"
            client_id = "tokenvault-cl1"
            """)
        let r = s.tv("doctor", "--network", "--color", "never")
        XCTAssertFalse(r.stdout.contains("takes client_id"), r.stdout)
        XCTAssertTrue(
            r.stdout.contains(
                "- login django: cannot tell whether the authorization endpoint knows client_id tokenvault-cl1: it sends a visitor who is not signed in to /accounts/login/ first (HTTP 302)"
            ), r.stdout)
    }

    /// A login while the provider is down says so at once, as a refresh
    /// does, and opens no browser on a refused connection.
    func testALoginToAProviderThatIsDownSaysSoBeforeAnyBrowser() throws {
        let closed = ClosedPort()
        let s = try sandbox(backend: "file")
        try s.writeConfig(
            """
            [providers.django]
            service = "api.django.example"
            authorize_url = "http://127.0.0.1:\(closed.port)/o/authorize/"
            token_url = "http://127.0.0.1:\(closed.port)/o/token/"
            client_id = "cid"
            """)
        let opened = s.home + "/browser-opened"
        let r = s.tv(
            "login", "django", "--browser", "--timeout", "30",
            env: ["BROWSER": "/bin/sh -c 'touch \(opened)'"], limit: 20)
        XCTAssertEqual(r.status, 75, r.stderr)
        XCTAssertTrue(r.stderr.contains("cannot reach 127.0.0.1:\(closed.port)"), r.stderr)
        XCTAssertFalse(r.stderr.contains("open this URL"), r.stderr)
        XCTAssertFalse(r.stderr.contains("client_id"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: opened), "no browser was opened")
    }

    /// An agent started in a D-Bus session that has ended is replaced by the
    /// next command of another session; one whose session is still there is
    /// named by `doctor`, with the variable that differs.
    func testAnAgentOfAnotherSessionBusIsNamedOrReplaced() throws {
        let s = try sandbox(backend: "file")
        s.expect("set", "api.session.example", stdin: "kept")
        let other = try PrivateBus()
        s.expect("agent", env: ["DBUS_SESSION_BUS_ADDRESS": other.address])
        let status = s.tv("agent", "status", "--json", env: ["DBUS_SESSION_BUS_ADDRESS": other.address])
        let object = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let pid = try XCTUnwrap(object?["pid"] as? Int32, status.stdout)
        let doctor = s.tv("doctor", "--color", "never")
        XCTAssertTrue(
            doctor.stdout.contains("for another setup (the session bus (DBUS_SESSION_BUS_ADDRESS) differs)"),
            doctor.stdout)
        XCTAssertTrue(doctor.stdout.contains("so that it has this shell's DBUS_SESSION_BUS_ADDRESS"), doctor.stdout)
        // Its session ends: the next get is answered here, and the orphaned agent leaves.
        other.stop()
        let got = s.tv("get", "api.session.example", "--verbose")
        XCTAssertEqual(got.out, "kept", got.stderr)
        XCTAssertTrue(got.stderr.contains("its session bus is gone"), got.stderr)
        XCTAssertTrue(eventually(10) { kill(pid, 0) != 0 }, "the agent of the ended session left")
    }

    /// `setup mcp --write` from a shell with a session bus of its own says
    /// that the entry will lose it, and that the URL has no credential yet.
    func testSetupMCPSaysWhatTheEntryWillMeet() throws {
        let s = try sandbox(backend: "file")
        let config = s.home + "/claude_desktop_config.json"
        let r = s.tv(
            "setup", "mcp", "https://mcp.example.com/mcp", "--write", config,
            env: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/tmp/dbus-private-session", "BROWSER": "/bin/true"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(
            r.stderr.contains(
                "warning: the entry names this shell's own session bus (DBUS_SESSION_BUS_ADDRESS=unix:path=/tmp/dbus-private-session)"
            ), r.stderr)
        XCTAssertTrue(
            r.stderr.contains(
                "no credential is stored for https://mcp.example.com/mcp yet: the client's first call asks for a login in the browser; or log in now: tokenvault login https://mcp.example.com/mcp"
            ), r.stderr)
        // Over SSH with no display, nothing could open a browser for the client's bridge: log in now.
        let ssh = s.tv(
            "setup", "mcp", "https://mcp.example.com/mcp", "--name", "remote", "--write", config,
            env: ["SSH_CONNECTION": "10.0.0.2 50000 10.0.0.1 22", "DBUS_SESSION_BUS_ADDRESS": ""])
        XCTAssertTrue(
            ssh.stderr.contains(
                "no browser can open here (an SSH session without a display): log in now, before the client starts: tokenvault login https://mcp.example.com/mcp (it offers the device flow or paste mode)"
            ), ssh.stderr)
        XCTAssertFalse(ssh.stderr.contains("in the browser"), ssh.stderr)
        s.expect("set", "https://mcp.example.com/mcp", stdin: "tok")
        let again = s.tv(
            "setup", "mcp", "https://mcp.example.com/mcp", "--name", "second", "--write", config,
            env: ["DBUS_SESSION_BUS_ADDRESS": ""])
        XCTAssertFalse(again.stderr.contains("no credential"), again.stderr)
        XCTAssertFalse(again.stderr.contains("warning:"), again.stderr)
        // The same warning wherever an entry is printed.
        for args in [
            ["setup", "mcp", "https://mcp.example.com/mcp"], ["mcp", "https://mcp.example.com/mcp", "--print-config"],
        ] {
            let printed = s.run(args, env: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/tmp/dbus-private-session"])
            XCTAssertEqual(printed.status, 0, printed.stderr)
            XCTAssertTrue(printed.stdout.contains("DBUS_SESSION_BUS_ADDRESS"), printed.stdout)
            XCTAssertTrue(
                printed.stderr.contains("warning: the entry names this shell's own session bus"),
                "\(args): \(printed.stderr)")
        }
    }

    /// A table with two endpoints wrong names both; an issuer whose server
    /// fails says to check the issuer too, not only "try again later".
    func testEveryWrongEndpointIsNamedAndAFailingIssuerIsQuestioned() throws {
        let s = try sandbox(backend: "file")
        try s.writeConfig(
            """
            [providers.two]
            service = "api.two.example"
            token_url = "http://example.com/token"
            authorize_url = "http://example.com/authorize"
            client_id = "x"
            """)
        s.expect(
            "login", "two", "--no-browser", status: 78,
            stderr: [
                "token_url and authorize_url must be https:// URLs",
                "hint: fix token_url and authorize_url in [providers.two]",
            ])
        let issuer = s.tv("login", "--issuer", "\(base)/fail500", "--client-id", "abc", "xx")
        XCTAssertEqual(issuer.status, 75, issuer.stderr)
        XCTAssertTrue(
            issuer.stderr.contains("hint: nothing was changed; check that \(base)/fail500 is the issuer"),
            issuer.stderr)
    }
}
