import Foundation
import XCTest

/// The first-run paths of a new user, each hint followed literally
/// (docs/reference.md, "Exit codes"): no keyring and no vault yet, no config,
/// a wrong port, a login whose page never comes back. Every hint must get
/// the user a step further. Against the local authlib provider, started once.
final class FirstRunHintsTests: XCTestCase {
    nonisolated(unsafe) static var provider: LocalProvider!

    override class func setUp() { provider = try! LocalProvider() }
    override class func tearDown() { provider.stop() }

    var base: String { Self.provider.base }

    /// No Secret Service, no vault, no passphrase source, no terminal: the
    /// first `set` says there is no vault yet and how to make one; `unlock`
    /// says the same; the hint's file, followed, stores the token.
    func testNoKeyringNoVaultTheHintCreatesOne() throws {
        let s = Sandbox(backend: "auto")
        s.env["TOKENVAULT_PASSPHRASE"] = nil
        s.env["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(s.home)/no-bus"
        let first = s.expect(
            "set", "api.example.com", status: 77, stdin: "tok-1\n",
            stderr: ["there is no file vault yet", "hint: create it on a terminal"])
        XCTAssertTrue(first.stderr.contains("set TOKENVAULT_PASSPHRASE_FILE to its path"), first.stderr)
        s.expect("unlock", stderr: ["the first command that stores a credential creates it"])
        // The hint, literally: a passphrase in a file only this user reads, the variable set to its path.
        let file = s.home + "/passphrase"
        try "a passphrase of mine\n".write(toFile: file, atomically: true, encoding: .utf8)
        XCTAssertEqual(chmod(file, 0o600), 0)
        s.env["TOKENVAULT_PASSPHRASE_FILE"] = file
        s.expect("set", "api.example.com", stdin: "tok-1\n")
        s.expect("get", "api.example.com", stdout: ["tok-1"])
        XCTAssertTrue(FileManager.default.fileExists(atPath: s.vault))
    }

    /// No config: an unknown provider says how to define it; a table without
    /// a client id says which key to set where; set, the login works.
    func testNoConfigTheHintsLeadToALogin() throws {
        let s = Sandbox()
        let unknown = s.expect("login", "bot", status: 78, stderr: ["unknown provider 'bot'"])
        let config = s.env["XDG_CONFIG_HOME"]! + "/tokenvault/config.toml"
        XCTAssertTrue(unknown.stderr.contains("define [providers.bot] in \(config)"), unknown.stderr)
        try s.writeConfig(
            """
            [providers.bot]
            token_url = "\(base)/token"
            grant = "client_credentials"
            scopes = ["read"]
            """)
        let noClient = s.expect("login", "bot", status: 78, stderr: ["no client id for bot"])
        XCTAssertTrue(noClient.stderr.contains("set client_id"), noClient.stderr)
        XCTAssertTrue(noClient.stderr.contains("in [providers.bot] of \(config)"), noClient.stderr)
        try s.writeConfig(
            """
            [providers.bot]
            token_url = "\(base)/token"
            grant = "client_credentials"
            scopes = ["read"]
            client_id = "tv-bot"
            client_secret_command = "printf bot-secret"
            """)
        s.expect("login", "bot")
    }

    /// A wrong port: "try again later" would never help; the hint says to
    /// check the host and port and names doctor --network, which names the
    /// provider; the port fixed, the login works.
    func testAWrongPortSaysToCheckTheConfig() throws {
        let s = Sandbox()
        let table = """
            [providers.bot]
            token_url = "%@/token"
            grant = "client_credentials"
            client_id = "tv-bot"
            client_secret_command = "printf bot-secret"
            """
        try s.writeConfig(table.replacingOccurrences(of: "%@", with: "http://127.0.0.1:1"))
        let refused = s.expect("login", "bot", status: 75, stderr: ["cannot reach 127.0.0.1:1"])
        XCTAssertTrue(refused.stderr.contains("check its host and port (tokenvault doctor --network"), refused.stderr)
        XCTAssertFalse(refused.stderr.contains("hint: nothing was changed; try again later\n"), refused.stderr)
        let doctor = s.expect("doctor", "--network", status: 2)
        XCTAssertTrue(doctor.stdout.contains("✗ provider bot: cannot reach 127.0.0.1:1"), doctor.stdout)
        try s.writeConfig(table.replacingOccurrences(of: "%@", with: base))
        s.expect("login", "bot")
    }

    /// A browser login whose page never comes back (a client id the
    /// provider does not know): while it waits, a line says what to check and where.
    func testALoginThatNeverComesBackSaysWhatToCheck() throws {
        let s = Sandbox()
        try s.writeConfig(
            """
            [providers.local]
            authorize_url = "\(base)/authorize"
            token_url = "\(base)/token"
            client_id = "not-registered"
            """)
        let config = s.env["XDG_CONFIG_HOME"]! + "/tokenvault/config.toml"
        let r = s.onTerminal(["login", "local", "--browser", "--timeout", "4"], env: ["BROWSER": "/bin/true"])
        XCTAssertEqual(r.status, 75, r.stdout)
        XCTAssertTrue(
            r.stdout.contains(
                "nothing came back yet: if the page shows an error, check client_id (and redirect_uri) of [providers.local] in \(config)"
            ), r.stdout)
        // doctor --network asks the authorization endpoint what it makes of the client id.
        let doctor = s.expect("doctor", "--network", status: 2)
        XCTAssertTrue(
            doctor.stdout.contains(
                "✗ login local: the authorization endpoint refuses client_id not-registered: invalid_client — fix: check client_id (and redirect_uri) in [providers.local] of \(config)"
            ), doctor.stdout)
        try s.writeConfig(
            """
            [providers.local]
            authorize_url = "\(base)/authorize"
            token_url = "\(base)/token"
            client_id = "tv-client"
            """)
        let fixed = s.tv("doctor", "--network")
        XCTAssertTrue(
            fixed.stdout.contains("✓ login local: the authorization endpoint takes client_id tv-client"), fixed.stdout)
    }

    /// A usage error names the help of the command it is about; that help,
    /// asked for, shows the option meant. `get --json` is `--format json`.
    func testAUsageErrorNamesItsCommandsHelp() throws {
        let s = Sandbox()
        s.expect("set", "api.x.example", stdin: #"{"access_token":"a1"}"#)
        let typo = s.expect("get", "api.x.example", "--jsn", status: 64, stderr: ["Did you mean '--json'?"])
        XCTAssertTrue(typo.stderr.hasSuffix("hint: see: tokenvault help get\n"), typo.stderr)
        s.expect("help", "get", stdout: ["--json"])
        let json = s.expect("get", "api.x.example", "--json")
        XCTAssertEqual(json.stdout, s.expect("get", "api.x.example", "--format", "json").stdout)
        XCTAssertTrue(json.stdout.contains(#""access_token":"a1""#), json.stdout)
        s.expect("get", "api.x.example", "--json", "--format", "env", status: 64)
        let nested = s.expect("setup", "git", "--bogus", status: 64)
        XCTAssertTrue(nested.stderr.hasSuffix("hint: see: tokenvault help setup git\n"), nested.stderr)
    }
}
