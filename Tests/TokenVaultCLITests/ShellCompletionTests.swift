import Foundation
import XCTest

/// The committed completion scripts, run in real bash, zsh and fish:
/// providers (built-in and configured), stored services and their accounts,
/// field names come back; a locked vault offers nothing and never prompts.
final class ShellCompletionTests: XCTestCase {
    enum Shell: String, CaseIterable { case bash, zsh, fish }

    var s: Sandbox!

    override func setUpWithError() throws {
        s = Sandbox()
        // A vault of its own with the key cached, as after any use within TOKENVAULT_KEY_TTL.
        s.env["TOKENVAULT_VAULT"] = s.home + "/cached/vault"
        s.env["TOKENVAULT_KEY_TTL"] = "120"
        XCTAssertEqual(s.tv("set", "api.weibo.com", stdin: "t\n").status, 0)
        XCTAssertEqual(s.tv("set", "api.weibo.com", "--account", "work", stdin: "t\n").status, 0)
        XCTAssertEqual(
            s.tv("set", "127.0.0.1:9000", stdin: #"{"access_token":"t","refresh_token":"r","expires_in":3600}"#).status,
            0)
        // A configured provider next to the presets.
        try s.writeConfig(
            """
            [providers.localdev]
            token_url = "http://127.0.0.1:9000/token"
            authorize_url = "http://127.0.0.1:9000/authorize"
            client_id = "tv"
            """)
        // From here on, only the cached key: no passphrase source.
        s.env["TOKENVAULT_PASSPHRASE"] = nil
        s.env["PATH"] = (Paths.binary as NSString).deletingLastPathComponent + ":/usr/bin:/bin"
    }

    override func tearDown() { s.expect("lock") }

    /// zsh's compinit dump, made once for the test process and copied for each
    /// zsh (complete_shell.py); a class that completes in zsh removes it at its end.
    static let zcompdump = NSTemporaryDirectory() + "tv-zcompdump-\(getpid())"

    override class func tearDown() { try? FileManager.default.removeItem(atPath: zcompdump) }

    /// What TAB offers in `shell` for `words` (the last one being completed).
    static func complete(_ shell: Shell, _ words: [String], env: [String: String], in directory: String? = nil) -> Run {
        let completions = Paths.root.appendingPathComponent("completions")
        switch shell {
        case .bash:
            return runProcess(
                "/bin/bash",
                [
                    Paths.fixtures.appendingPathComponent("complete.bash").path,
                    completions.appendingPathComponent("tokenvault.bash").path,
                ] + words, env: env, limit: 30, in: directory)
        case .zsh, .fish:
            let script = completions.appendingPathComponent(shell == .zsh ? "_tokenvault" : "tokenvault.fish").path
            let dump = ["TV_ZCOMPDUMP": zcompdump]
            return runProcess(
                "/usr/bin/python3",
                [
                    Paths.fixtures.appendingPathComponent("complete_shell.py").path,
                    shell.rawValue, script,
                ] + words, env: env.merging(dump) { $1 }, limit: 60, in: directory)
        }
    }

    func complete(
        _ shell: Shell, _ words: String..., in directory: String? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) -> [String] {
        let r = Self.complete(shell, words, env: s.env, in: directory)
        XCTAssertEqual(r.status, 0, "\(shell): \(r.stderr)", file: file, line: line)
        XCTAssertEqual(r.stderr, "", "\(shell): completion never prints errors or prompts", file: file, line: line)
        return r.stdout.split(separator: "\n").map(String.init)
    }

    func testProvidersServicesAccountsAndFields() {
        for shell in Shell.allCases {
            XCTAssertEqual(
                complete(shell, "tokenvault", "login", "").sorted(),
                ["flickr", "foursquare", "github", "gitlab", "google", "localdev", "microsoft", "twitter", "weibo"],
                "\(shell)")
            XCTAssertEqual(complete(shell, "tokenvault", "login", "loc"), ["localdev"], "\(shell)")
            XCTAssertEqual(complete(shell, "tokenvault", "set", "x.example", "--provider", "w"), ["weibo"], "\(shell)")
            XCTAssertEqual(
                complete(shell, "tokenvault", "get", "").sorted(), ["127.0.0.1:9000", "api.weibo.com"], "\(shell)")
            for command in ["header", "exec", "status", "refresh", "revoke", "delete", "logout"] {
                XCTAssertEqual(complete(shell, "tokenvault", command, "api"), ["api.weibo.com"], "\(shell) \(command)")
            }
            XCTAssertEqual(
                complete(shell, "tokenvault", "get", "api.weibo.com", "--account", "").sorted(), ["default", "work"],
                "\(shell)")
            XCTAssertEqual(
                complete(shell, "tokenvault", "status", "127.0.0.1:9000", "--account", ""), ["default"], "\(shell)")
            // The fields the record has: a bare token has no refresh token to offer.
            let fields = complete(shell, "tokenvault", "get", "api.weibo.com", "--field", "")
            XCTAssertTrue(fields.contains("access_token") && !fields.contains("refresh_token"), "\(shell): \(fields)")
            let full = complete(shell, "tokenvault", "get", "127.0.0.1:9000", "--field", "")
            XCTAssertTrue(full.contains("refresh_token") && full.contains("expires_at"), "\(shell): \(full)")
            XCTAssertTrue(complete(shell, "tokenvault", "ge").contains("get"), "\(shell)")
            XCTAssertEqual(
                complete(shell, "tokenvault", "header", "api.weibo.com", "--method", "P").sorted(),
                ["PATCH", "POST", "PUT"], "\(shell)")
        }
    }

    /// bash splits words at `:` (COMP_WORDBREAKS): a service with a port
    /// arrives in three words. The port itself, a resource key after it, and
    /// an option after the service are completed all the same; what is
    /// offered is what goes after the last colon (what bash replaces).
    func testBashCompletesAServiceWithAPort() throws {
        XCTAssertEqual(s.tv("set", "127.0.0.1:9000/a/mcp", stdin: "t\n").status, 0)
        XCTAssertEqual(
            complete(.bash, "tokenvault", "get", "127.0").sorted(), ["127.0.0.1:9000", "127.0.0.1:9000/a/mcp"])
        XCTAssertEqual(complete(.bash, "tokenvault", "get", "127.0.0.1:").sorted(), ["9000", "9000/a/mcp"])
        XCTAssertEqual(complete(.bash, "tokenvault", "get", "127.0.0.1:90").sorted(), ["9000", "9000/a/mcp"])
        XCTAssertEqual(complete(.bash, "tokenvault", "get", "127.0.0.1:9000/"), ["9000/a/mcp"])
        XCTAssertEqual(
            complete(.bash, "tokenvault", "get", "--account", "default", "127.0.0.1:9").sorted(),
            ["9000", "9000/a/mcp"])
        XCTAssertEqual(complete(.bash, "tokenvault", "status", "127.0.0.1:9000", "--account", ""), ["default"])
        let options = complete(.bash, "tokenvault", "status", "127.0.0.1:9000", "--")
        XCTAssertTrue(options.contains("--json"), "the service counts as one argument: \(options)")
        // What a user sees in a real bash: the keys whole, not their last path segment.
        XCTAssertEqual(s.tv("set", "127.0.0.1:9000/b/mcp", stdin: "t\n").status, 0)
        let shown = runProcess(
            "/usr/bin/python3",
            [
                Paths.fixtures.appendingPathComponent("complete_shell.py").path, "bash",
                Paths.root.appendingPathComponent("completions/tokenvault.bash").path, "tokenvault", "get",
                "127.0.0.1:9000/",
            ], env: s.env, limit: 60)
        XCTAssertTrue(
            shown.stdout.contains("9000/a/mcp") && shown.stdout.contains("9000/b/mcp"), shown.stdout + shown.stderr)
    }

    /// After `exec SERVICE --`: commands first (files when the word has a
    /// `/`), then files, in each shell's own way.
    func testExecCompletesACommandThenFiles() throws {
        let dir = s.home + "/work"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(
            atPath: dir + "/upload.sh", contents: Data(), attributes: [.posixPermissions: 0o755])
        for shell in Shell.allCases {
            let commands = complete(shell, "tokenvault", "exec", "api.weibo.com", "--", "tokenva", in: dir)
            XCTAssertTrue(commands.contains("tokenvault"), "\(shell): the test build is on PATH: \(commands)")
            XCTAssertFalse(
                commands.contains { $0.hasSuffix(".build") || $0.hasSuffix(".product") },
                "\(shell): directories are no commands")
            let bas = complete(shell, "tokenvault", "exec", "api.weibo.com", "--", "bas", in: dir)
            XCTAssertTrue(bas.contains("bash") && bas.allSatisfy { $0.hasPrefix("bas") }, "\(shell): \(bas)")
            XCTAssertEqual(Swift.Set(bas).count, bas.count, "\(shell): each command once")
            XCTAssertEqual(
                complete(shell, "tokenvault", "exec", "api.weibo.com", "--", "./up", in: dir), ["./upload.sh"],
                "\(shell)")
            XCTAssertEqual(
                complete(shell, "tokenvault", "exec", "api.weibo.com", "--", "sh", "up", in: dir), ["upload.sh"],
                "\(shell)")
        }
    }

    /// Each shell's script reads candidates back its own way (bash takes
    /// them verbatim and inserts them quoted, zsh splits at `:`); accounts
    /// with quotes, `$`, `\`, `:` or a space still come back as they are.
    func testAccountsWithShellSpecialCharacters() {
        let accounts = ["a:b", "back\\slash", "it's", "work bot", "x$y", "\"q\""]
        s.env["TOKENVAULT_PASSPHRASE"] = "correct horse"
        for account in accounts {
            XCTAssertEqual(s.tv("set", "api.odd.example", "--account", account, stdin: "t\n").status, 0, account)
        }
        s.env["TOKENVAULT_PASSPHRASE"] = nil
        for shell in Shell.allCases {
            // bash's COMPREPLY holds what readline inserts: each word quoted as printf %q does.
            let expected = shell == .bash ? accounts.map(Self.bashQuoted) : accounts
            XCTAssertEqual(
                complete(shell, "tokenvault", "get", "api.odd.example", "--account", "").sorted(), expected.sorted(),
                "\(shell)")
            XCTAssertEqual(
                complete(shell, "tokenvault", "get", "api.odd.example", "--account", "it"),
                [shell == .bash ? "it\\'s" : "it's"], "\(shell)")
        }
    }

    /// A word as bash's `printf %q` quotes it.
    static func bashQuoted(_ word: String) -> String {
        runProcess("/bin/bash", ["-c", #"printf '%q' "$1""#, "_", word], env: ["PATH": "/usr/bin:/bin"]).stdout
    }

    /// Accounts are written by whoever can write the store (another host of
    /// the fleet, any program on the session bus): TAB never runs what one
    /// names, and inserts it as one quoted word, so Enter does not run it either.
    func testBashNeverRunsWhatAStoredAccountNames() throws {
        let dir = s.home + "/tab"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let hostile = ["$(touch ran-dollar)", "<(touch ran-process)", "`touch ran-backtick`", "s;touch ran-semicolon"]
        s.env["TOKENVAULT_PASSPHRASE"] = "correct horse"
        for account in hostile {
            XCTAssertEqual(s.tv("set", "api.hostile.example", "--account", account, stdin: "t\n").status, 0, account)
        }
        s.env["TOKENVAULT_PASSPHRASE"] = nil
        let offered = complete(.bash, "tokenvault", "get", "api.hostile.example", "--account", "", in: dir)
        XCTAssertEqual(offered.sorted(), hostile.map(Self.bashQuoted).sorted())
        // In a real interactive bash: TAB inserts the one candidate quoted, and Enter runs tokenvault with it.
        let line = runProcess(
            "/usr/bin/python3",
            [
                Paths.fixtures.appendingPathComponent("complete_shell.py").path, "bash-line",
                Paths.root.appendingPathComponent("completions/tokenvault.bash").path, "tokenvault", "get",
                "api.hostile.example", "--account", "s",
            ], env: s.env, limit: 60, in: dir)
        XCTAssertEqual(
            line.stdout, "tokenvault get api.hostile.example --account s\\;touch\\ ran-semicolon \n", line.stderr)
        let left = try FileManager.default.contentsOfDirectory(atPath: dir)
        XCTAssertEqual(left, [], "nothing a stored account names was run: \(left)")
    }

    func testLockedVaultOffersNothingAndNeverPrompts() {
        s.expect("lock")
        for shell in Shell.allCases {
            XCTAssertEqual(complete(shell, "tokenvault", "get", ""), [], "\(shell)")
            XCTAssertEqual(complete(shell, "tokenvault", "login", "w"), ["weibo"], "\(shell): providers need no vault")
        }
    }
}
