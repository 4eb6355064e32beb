import Foundation
import XCTest

/// What a new user meets (README, "The first hour"): one owner per service,
/// `list` columns that say what they show, messages that say what is true.
/// Against the quirk provider and a private gnome-keyring, started once.
final class FirstHourTests: QuirkProviderTestCase {
    var base: String { "http://127.0.0.1:\(Self.port)" }

    /// Provider q of the quirk provider, with `extra` lines in its table.
    func sandbox(extra: String = "") throws -> Sandbox {
        let s = Sandbox()
        try s.writeConfig(
            "[providers.q]\nservice = \"api.quirk.example\"\ntoken_url = \"\(base)/rotate\"\nclient_id = \"cid\"\n\(extra)\n"
        )
        return s
    }

    /// Two client-credentials providers that store under one service.
    func twoOwners() throws -> Sandbox {
        let s = Sandbox()
        s.env.merge(Self.keyring.env) { $1 }
        try s.writeConfig(
            """
            [providers.local]
            service = "api.quirk.example"
            token_url = "\(base)/rotate"
            grant = "client_credentials"
            client_id = "cid"

            [providers.myidp]
            service = "api.quirk.example"
            token_url = "\(base)/rotate"
            grant = "client_credentials"
            client_id = "cid"
            """)
        return s
    }

    // MARK: One service, one owner

    func testALoginNeverReplacesAnotherProvidersCredentialWithoutAWord() throws {
        let s = try twoOwners()
        XCTAssertEqual(s.tv("login", "local").status, 0)
        let first = s.tv("get", "api.quirk.example").out
        let other = s.tv("login", "myidp")
        XCTAssertEqual(other.status, 64, other.stderr)
        XCTAssertTrue(other.stderr.contains("provider local") && other.stderr.contains("myidp"), other.stderr)
        XCTAssertTrue(
            other.stderr.contains(
                "hint: keep both: tokenvault login myidp --account NAME; replace it: tokenvault login myidp --force"),
            other.stderr)
        XCTAssertEqual(s.tv("get", "api.quirk.example").out, first, "nothing replaced")
        // The ways out.
        XCTAssertEqual(s.tv("login", "myidp", "--account", "work").status, 0)
        XCTAssertEqual(s.tv("get", "api.quirk.example").out, first)
        let list = s.tv("list").stdout
        XCTAssertTrue(list.contains("PROVIDER"), list)
        XCTAssertNotNil(list.split(separator: "\n").first { $0.contains("default") && $0.contains("local") }, list)
        XCTAssertNotNil(list.split(separator: "\n").first { $0.contains("work") && $0.contains("myidp") }, list)
        let forced = s.tv("login", "myidp", "--force")
        XCTAssertEqual(forced.status, 0, forced.stderr)
        XCTAssertNotEqual(s.tv("get", "api.quirk.example").out, first)
        XCTAssertEqual(s.tv("get", "api.quirk.example", "--field", "provider").out, "myidp")
        // set --provider follows the same rule; a set of the same provider, or of none, is not a change of owner.
        let set = s.tv("set", "api.quirk.example", "--provider", "local", stdin: "by-hand")
        XCTAssertEqual(set.status, 64, set.stderr)
        XCTAssertTrue(set.stderr.contains("tokenvault set api.quirk.example --provider local --force"), set.stderr)
        XCTAssertEqual(s.tv("set", "api.quirk.example", "--provider", "myidp", stdin: "by-hand").status, 0)
        XCTAssertEqual(s.tv("set", "api.quirk.example", "--provider", "local", "--force", stdin: "by-hand-2").status, 0)
        XCTAssertEqual(s.tv("get", "api.quirk.example", "--field", "provider").out, "local")
    }

    func testListSaysWhatItsRefreshTokenColumnShows() throws {
        let s = Sandbox()
        XCTAssertEqual(
            s.tv("set", "rt.example", stdin: #"{"access_token":"a","refresh_token":"r","expires_in":3600}"#).status, 0)
        XCTAssertEqual(
            s.tv(
                "set", "dies.example",
                stdin: #"{"access_token":"a","refresh_token":"r","expires_in":3600,"refresh_token_expires_in":86400}"#
            ).status, 0)
        XCTAssertEqual(s.tv("set", "plain.example", stdin: "static-token").status, 0)
        let lines = s.tv("list").stdout.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines[0].contains("RT EXPIRES") && !lines[0].contains("REFRESH TOKEN"), lines[0])
        func row(_ service: String) -> String { lines.first { $0.hasPrefix(service) } ?? "" }
        XCTAssertTrue(
            row("rt.example").contains("unknown"), "a refresh token whose end nobody told: \(row("rt.example"))")
        XCTAssertTrue(
            row("dies.example").contains("in 1d") || row("dies.example").contains("in 23h")
                || row("dies.example").contains("in 24h"),
            row("dies.example"))
        XCTAssertFalse(row("plain.example").contains("unknown"), row("plain.example"))
    }

    // MARK: Messages that say what is true

    func testRefreshOfATokenThatNeverExpiresHasNothingToDo() throws {
        let s = Sandbox()
        XCTAssertEqual(s.tv("set", "static.example", stdin: "static-token").status, 0)
        let r = s.tv("refresh", "static.example")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("never expires: nothing to renew"), r.stderr)
        XCTAssertFalse(r.stderr.contains("cannot be renewed"), r.stderr)
        XCTAssertEqual(s.tv("refresh", "missing.example").status, 3)
    }

    func testInputThatIsNeitherJSONNorATokenSaysWhere() throws {
        let s = Sandbox()
        let cases: [(String, String)] = [
            (#"{access_token: "x"}"#, "not JSON (line 1, column 2: a key in double quotes should be here)"),
            ("{\"access_token\": \"x\",\n \"expires_in\": }", "not JSON (line 2, column 16:"),
            (#"{'access_token':'x'}"#, "not JSON (line 1, column 2:"),
            (#""access_token": "x""#, "not JSON (line 1, column 15: more after the end of the JSON value)"),
            ("two words", "not JSON (line 1, column 1:"),
        ]
        for (input, message) in cases {
            let r = s.tv("set", "j.example", stdin: input)
            XCTAssertEqual(r.status, 65, input)
            XCTAssertTrue(r.stderr.contains(message), "\(input): \(r.stderr)")
            XCTAssertFalse(r.stderr.contains("token contains white space"), r.stderr)
        }
        XCTAssertEqual(s.tv("get", "j.example").status, 3, "nothing stored")
    }

    func testMigrateTakesTheBackendSettingAlong() throws {
        let s = Sandbox()
        s.env.merge(Self.keyring.env) { $1 }
        s.env["TOKENVAULT_BACKEND"] = nil
        let config = """
            # my settings
            backend = "secret-service"   # for now
            min_valid = 30

            [providers.q]
            service = "api.quirk.example"
            token_url = "\(base)/rotate"
            client_id = "cid"
            """
        try s.writeConfig(config)
        let path = s.env["XDG_CONFIG_HOME"]! + "/tokenvault/config.toml"
        XCTAssertEqual(s.tv("set", "m.example", stdin: "moved-token").status, 0)
        let r = s.tv("migrate", "--to", "file")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("set backend = \"file\" in \(path)"), r.stderr)
        let edited = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertEqual(
            edited,
            config.replacingOccurrences(
                of: "backend = \"secret-service\"   # for now",
                with:
                    "# tokenvault migrate: backend was secret-service, credentials in secret-service\nbackend = \"file\""
            )
                + "\n")
        XCTAssertTrue(s.tv("backend").stdout.contains("file"), "new logins go to the file")
        XCTAssertEqual(s.tv("get", "m.example").out, "moved-token")
        // --keep-backend leaves the file alone.
        let kept = s.tv("migrate", "--to", "secret-service", "--keep-backend")
        XCTAssertEqual(kept.status, 0, kept.stderr)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), edited)
        // Without a config file one is made; where none can be written, the line to add is printed.
        let fresh = Sandbox()
        fresh.env.merge(Self.keyring.env) { $1 }
        fresh.env["TOKENVAULT_BACKEND"] = nil
        XCTAssertEqual(fresh.tv("set", "n.example", stdin: "n", env: ["TOKENVAULT_BACKEND": "file"]).status, 0)
        XCTAssertEqual(fresh.tv("migrate", "--to", "secret-service").status, 0)
        XCTAssertEqual(
            try String(contentsOfFile: fresh.env["XDG_CONFIG_HOME"]! + "/tokenvault/config.toml", encoding: .utf8),
            "# tokenvault migrate: backend was unset, credentials in file\nbackend = \"secret-service\"\n")
        // Back to the file: `file`, not the unset setting that was (auto would choose the keyring).
        let back = fresh.tv("migrate", "--to", "file")
        XCTAssertEqual(back.status, 0, back.stderr)
        XCTAssertTrue(back.stderr.contains("set backend = \"file\""), back.stderr)
        XCTAssertTrue(fresh.tv("backend").stdout.hasPrefix("file"), fresh.tv("backend").stdout)
        XCTAssertEqual(fresh.tv("migrate", "--to", "secret-service").status, 0)
        let nowhere = fresh.tv("migrate", "--to", "file", env: ["TOKENVAULT_CONFIG": "/dev/null/config.toml"])
        XCTAssertEqual(nowhere.status, 0, nowhere.stderr)
        XCTAssertTrue(nowhere.stderr.contains("add this line at its top: backend = \"file\""), nowhere.stderr)
    }

    func testMigratingThereAndBackRestoresTheBackendSettingThatWas() throws {
        // No backend setting (auto, the Secret Service answering): to the file and back.
        let s = Sandbox()
        s.env.merge(Self.keyring.env) { $1 }
        s.env["TOKENVAULT_BACKEND"] = nil
        try s.writeConfig("min_valid = 30\n")
        let path = s.env["XDG_CONFIG_HOME"]! + "/tokenvault/config.toml"
        XCTAssertEqual(s.tv("set", "r.example", stdin: "round-trip").status, 0)
        XCTAssertEqual(s.tv("migrate", "--to", "file").status, 0)
        XCTAssertTrue(try String(contentsOfFile: path, encoding: .utf8).contains("backend = \"file\""))
        let back = s.tv("migrate", "--to", "secret-service")
        XCTAssertEqual(back.status, 0, back.stderr)
        XCTAssertTrue(back.stderr.contains("removed backend from \(path), as it was before"), back.stderr)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "min_valid = 30\n", "as it was")
        XCTAssertTrue(s.tv("backend").stdout.contains("auto"), s.tv("backend").stdout)
        XCTAssertEqual(s.tv("get", "r.example").out, "round-trip")
        // An explicit auto comes back as auto.
        try s.writeConfig("backend = \"auto\"\n")
        XCTAssertEqual(s.tv("migrate", "--to", "file").status, 0)
        XCTAssertEqual(s.tv("migrate", "--to", "secret-service").status, 0)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "backend = \"auto\"\n")
    }

    // MARK: Every error names the next step

    func testHintsNameTheNextCommand() throws {
        let s = try twoOwners()
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "one").status, 0)
        XCTAssertEqual(s.tv("set", "api.example.com", "--account", "work", stdin: "two").status, 0)
        let cases: [([String], String)] = [
            (["get", "local"], "hint: run: tokenvault login local (or: myidp)"),
            (["get", "github"], "hint: run: tokenvault login github"),
            (
                ["get", "https://api.github.com/user", "--account", "x y"],
                "hint: run: tokenvault login github --account 'x y'"
            ),
            (
                ["get", "api.example.com", "--account", "defualt"],
                "hint: did you mean --account default? accounts stored for api.example.com: default, work"
            ),
            (
                ["status", "api.example.com", "--account", "other"],
                "hint: accounts stored for api.example.com: default, work"
            ),
            (
                ["get", "api.exmaple.com"],
                "hint: did you mean api.example.com? or store one with: tokenvault set api.exmaple.com < token.json"
            ),
            (
                ["delete", "nothing.example"],
                "hint: nothing to delete: it is not stored (tokenvault list shows what is)"
            ),
            // A second logout: nothing to do, and no login offered.
            (["logout", "api.exmaple.com"], "hint: did you mean api.example.com? nothing to delete"),
        ]
        for (args, hint) in cases {
            let r = s.run(args)
            XCTAssertEqual(r.status, 3, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(hint), "\(args): \(r.stderr)")
        }
    }

    /// Did you mean, for each kind of name; the whole list when nothing is close.
    func testEveryMisspeltNameGetsTheClosestAndTheWholeList() throws {
        let s = try twoOwners()
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "one").status, 0)
        let commands =
            "commands: login, set, get, list, status, refresh, revoke, header, exec, delete, logout, init, export, import, backend, migrate, lock, unlock, providers, git-credential"
        let cases: [([String], Int32, String)] = [
            (["gte", "api.example.com"], 64, "error: unknown command 'gte'\nhint: did you mean get? \(commands)"),
            (["logut"], 64, "hint: did you mean logout? "),
            (["frobnicate"], 64, "hint: \(commands)"),
            (
                ["get", "x.example", "--format", "jsno"], 64,
                "did you mean json? one of: raw, json, header, env, kubectl, sasl"
            ),
            (
                ["get", "x.example", "--format", "yaml"], 64,
                "'--format <format>': one of: raw, json, header, env, kubectl, sasl\n"
            ),
            (
                ["get", "x.example", "--format", "sasl", "--sasl", "xoauth"], 64,
                "did you mean xoauth2? one of: xoauth2, oauthbearer"
            ),
            (["migrate", "--to", "fil"], 64, "did you mean file? one of: secret-service, file, etcd"),
            (
                ["login", "githb"], 78,
                "hint: did you mean github? providers: flickr, foursquare, github, gitlab, google, local, microsoft, myidp, twitter, weibo;"
            ),
            (["login", "mydip"], 78, "did you mean myidp?"),
            (["get", "api.exmaple.com"], 3, "did you mean api.example.com?"),
            (["get", "api.example.com", "--account", "defualt"], 3, "did you mean --account default?"),
        ]
        for (args, status, text) in cases {
            let r = s.run(args)
            XCTAssertEqual(r.status, status, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(text), "\(args): \(r.stderr)")
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 2, "one error line and one hint: \(r.stderr)")
        }
        // A URL is no misspelt provider: it is a resource to log in to, here one nobody serves.
        let closed = ClosedPort()
        let url = s.run(["login", "http://127.0.0.1:\(closed.port)/mcp"])
        XCTAssertEqual(url.status, 75, url.stderr)
        XCTAssertTrue(url.stderr.contains("cannot reach 127.0.0.1:\(closed.port)"), url.stderr)
    }

    // MARK: A config mistake stays local

    func testAMistakeInOneProviderTableBreaksOnlyThatProvider() throws {
        let s = Sandbox()
        try s.writeConfig(
            """
            # my settings
            timeout = 3

            [providers.local]
            service = "api.local.example"
            token_url = "\(base)/rotate"
            client_id = "cid"
            client_secert = "oops"

            [providers.other]
            token_url = "\(base)/rotate"
            scopes = "read"
            client_id = "cid"

            [providers.good]
            service = "api.good.example"
            token_url = "\(base)/rotate"
            grant = "client_credentials"
            client_id = "cid"
            """)
        let path = s.env["XDG_CONFIG_HOME"]! + "/tokenvault/config.toml"
        let localWarning =
            "warning: \(path):8: unknown setting providers.local.client_secert (did you mean client_secret?); provider local cannot be used until it is fixed"
        let otherWarning =
            "warning: \(path):12: providers.other.scopes must be an array of strings, e.g. scopes = [\"a\", \"b\"], not a string; provider other cannot be used until it is fixed"
        XCTAssertEqual(
            s.tv("set", "api.example.com", stdin: #"{"access_token":"unrelated","expires_in":3600}"#).status, 0)
        let get = s.tv("get", "api.example.com")
        XCTAssertEqual(get.status, 0, get.stderr)
        XCTAssertEqual(get.out, "unrelated")
        XCTAssertTrue(get.stderr.contains(localWarning) && get.stderr.contains(otherWarning), get.stderr)
        for args in [["providers"], ["backend"], ["list"], ["login", "good"], ["get", "good"]] {
            let r = s.run(args)
            XCTAssertEqual(r.status, 0, "\(args): \(r.stderr)")
        }
        XCTAssertTrue(s.tv("providers").stdout.contains("broken"), "providers says which")
        // What uses the broken table fails, once, with its line.
        let login = s.tv("login", "local")
        XCTAssertEqual(login.status, 78, login.stderr)
        XCTAssertTrue(
            login.stderr.contains(
                "error: \(path):8: unknown setting providers.local.client_secert (did you mean client_secret?)"),
            login.stderr)
        XCTAssertFalse(login.stderr.contains(localWarning), "not said twice: \(login.stderr)")
        XCTAssertEqual(s.tv("get", "local").status, 78)
        let other = s.tv("login", "other")
        XCTAssertEqual(other.status, 78)
        XCTAssertTrue(other.stderr.contains("must be an array of strings"), other.stderr)
    }

    func testAFileTOMLCannotReadNamesLineAndColumnAndShowsTheLine() throws {
        let s = Sandbox()
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: #"{"access_token":"t","expires_in":3600}"#).status, 0)
        try s.writeConfig("min_valid = 60\nbackend = \"file\ntimeout = 3\n")
        let path = s.env["XDG_CONFIG_HOME"]! + "/tokenvault/config.toml"
        let r = s.tv("get", "api.example.com")
        XCTAssertEqual(r.status, 78, r.stderr)
        let lines = r.stderr.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 4, r.stderr)
        XCTAssertTrue(
            lines[0].hasPrefix("tokenvault: error: \(path):2:16: a string is not closed on this line"), lines[0])
        XCTAssertEqual(lines[1], "    backend = \"file")
        XCTAssertEqual(lines[2], "                   ^")
        XCTAssertTrue(lines[3].hasPrefix("hint: fix line 2 of \(path)"), lines[3])
        // A top-level setting of the wrong type says which type, with an example.
        try s.writeConfig("timeout = \"30\"\n")
        let typed = s.tv("get", "api.example.com")
        XCTAssertEqual(typed.status, 78)
        XCTAssertTrue(
            typed.stderr.contains(
                "\(path):1: timeout must be a positive whole number of seconds, e.g. timeout = 30, not a string"),
            typed.stderr)
        try s.writeConfig("backend = \"fiel\"\n")
        let backend = s.tv("list", env: ["TOKENVAULT_BACKEND": ""])
        XCTAssertEqual(backend.status, 78)
        XCTAssertTrue(backend.stderr.contains("did you mean file?"), backend.stderr)
    }

    // MARK: Terminal manners

    /// `tokenvault ARGS` on a pseudo-terminal of `columns`; what it wrote (stdout and stderr together).
    func testStatesAreColouredOnATerminalOnly() throws {
        let s = Sandbox()
        XCTAssertEqual(s.tv("set", "valid.example", stdin: "static").status, 0)
        XCTAssertEqual(s.tv("set", "gone.example", stdin: #"{"access_token":"a","expires_at":1}"#).status, 0)
        let coloured = s.onTerminal(["list"])
        XCTAssertEqual(coloured.status, 0, coloured.stdout)
        XCTAssertTrue(coloured.stdout.contains("\u{1B}[32mvalid"), coloured.stdout.debugDescription)
        XCTAssertTrue(coloured.stdout.contains("\u{1B}[31mlogin required"), coloured.stdout.debugDescription)
        XCTAssertTrue(s.onTerminal(["status", "gone.example"]).stdout.contains("\u{1B}[31mlogin required"))
        for (what, run) in [
            ("a pipe", s.tv("list")), ("NO_COLOR", s.onTerminal(["list"], env: ["NO_COLOR": "1"])),
            ("TERM=dumb", s.onTerminal(["list"], env: ["TERM": "dumb"])),
            ("--color never", s.onTerminal(["list", "--color", "never"])),
        ] {
            XCTAssertFalse(run.stdout.contains("\u{1B}["), "\(what): \(run.stdout.debugDescription)")
            XCTAssertTrue(run.stdout.contains("login required"), what)
        }
        XCTAssertTrue(
            s.tv("list", "--color", "always").stdout.contains("\u{1B}[32mvalid"), "--color always, even in a pipe")
        let bad = s.tv("list", "--color", "blu")
        XCTAssertEqual(bad.status, 64)
        XCTAssertTrue(bad.stderr.contains("one of: auto, always, never"), bad.stderr)
        XCTAssertTrue(s.onTerminal(["doctor"]).stdout.contains("\u{1B}[32m✓"), "doctor's marks")
    }

    func testTablesFitTheTerminalAndJSONIsIndentedOnIt() throws {
        let s = Sandbox()
        XCTAssertEqual(
            s.tv("set", "api.example.com", stdin: #"{"access_token":"a","refresh_token":"r","expires_in":3600}"#)
                .status, 0)
        let wide = s.onTerminal(["list"])
        XCTAssertTrue(wide.stdout.contains("BACKEND") && wide.stdout.contains("RT EXPIRES"), wide.stdout)
        let narrow = s.onTerminal(["list", "--color", "never"], columns: 60)
        let lines = narrow.stdout.split(separator: "\n")
        XCTAssertFalse(narrow.stdout.contains("BACKEND"), narrow.stdout)
        XCTAssertTrue(narrow.stdout.contains("SERVICE") && narrow.stdout.contains("STATE"), narrow.stdout)
        for line in lines { XCTAssertLessThanOrEqual(line.count, 60, String(line)) }
        XCTAssertTrue(s.onTerminal(["list", "--json"]).stdout.contains("[\n  {\n    \""), "indented on a terminal")
        XCTAssertTrue(s.tv("list", "--json").stdout.hasPrefix("[{\""), "compact in a pipe")
    }

    func testCommandsThatDoSomethingSayItInJSON() throws {
        let s = try twoOwners()
        func object(_ r: Run) throws -> [String: Any] {
            XCTAssertEqual(r.status, 0, r.stderr)
            return try XCTUnwrap(
                try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], r.stdout)
        }
        let login = try object(s.tv("login", "local", "--json"))
        XCTAssertEqual(login["provider"] as? String, "local")
        XCTAssertEqual(login["service"] as? String, "api.quirk.example")
        XCTAssertNotNil(login["expires_at"] as? Int)
        let set = try object(s.tv("set", "j.example", "--json", stdin: "tok"))
        XCTAssertEqual(set["stored_in"] as? String, "file")
        XCTAssertTrue(set["expires_at"] is NSNull)
        XCTAssertEqual(try object(s.tv("refresh", "j.example", "--json"))["refreshed"] as? Bool, false)
        XCTAssertEqual(try object(s.tv("refresh", "local", "--json"))["refreshed"] as? Bool, true)
        XCTAssertEqual(try object(s.tv("delete", "j.example", "--json"))["deleted"] as? Bool, true)
        XCTAssertNotNil(try object(s.tv("lock", "--json"))["forgotten"] as? Int)
        let doctor = s.tv("doctor", "--json")
        XCTAssertNotNil(try JSONSerialization.jsonObject(with: Data(doctor.stdout.utf8)) as? [String: Any])
    }

    // MARK: Waiting is visible

    func testALockHeldByAnotherProcessIsNamedOnATerminalOnly() throws {
        let s = Sandbox()
        XCTAssertEqual(s.tv("set", "x.example", stdin: "t").status, 0)
        let holder =
            #"import fcntl,hashlib,os,sys,time; h=hashlib.blake2b(b"x.example\ndefault",digest_size=16).hexdigest(); f=open(os.environ["HOME"]+"/run/tokenvault/record-"+h+".lock","a+"); fcntl.flock(f,fcntl.LOCK_EX); f.truncate(0); f.write(str(os.getpid())+"\n"); f.flush(); open(os.environ["HOME"]+"/held","w").close(); time.sleep(2.5)"#
        // The command starts once the holder has the lock (it says so with $HOME/held), within 10 s.
        let held =
            #"for i in $(seq 200); do [ -e "$HOME/held" ] && break; sleep 0.05; done; rm "$HOME/held" || exit 9;"#
        let onPty = Paths.fixtures.appendingPathComponent("on_pty.py").path
        let seen = s.shell(
            "python3 -c '\(holder)' & holder=$!; \(held) python3 '\(onPty)' \"$TV\" delete x.example 2>&1; echo; echo holder=$holder; wait"
        )
        XCTAssertTrue(seen.stdout.contains("waiting for process "), seen.stdout)
        let pid =
            seen.stdout.split(separator: "\n").first { $0.hasPrefix("holder=") }?.dropFirst("holder=".count) ?? "?"
        XCTAssertTrue(seen.stdout.contains("waiting for process \(pid), which holds the record lock"), seen.stdout)
        XCTAssertEqual(s.tv("set", "x.example", stdin: "t").status, 0)
        let quiet = s.shell(#"python3 -c '\#(holder)' & \#(held) "$TV" delete x.example; wait"#)
        XCTAssertEqual(quiet.status, 0, quiet.stderr)
        XCTAssertFalse(quiet.stderr.contains("waiting for process"), "nothing of it in a pipe: \(quiet.stderr)")
    }

    func testABrowserThatCannotStartIsSaidAtOnceAndTheWaitCountsDown() throws {
        let s = try sandbox(extra: "authorize_url = \"\(base)/authorize\"")
        let onPty = s.onTerminal(["login", "q", "--timeout", "3"], env: ["BROWSER": "/nonexistent/browser"])
        XCTAssertNotEqual(onPty.status, 0)
        XCTAssertTrue(
            onPty.stdout.contains(
                "the browser (/nonexistent/browser) failed (exit 127: not found): open the URL above yourself"),
            onPty.stdout)
        XCTAssertTrue(
            onPty.stdout.contains("waiting for the browser login: 2 s left")
                || onPty.stdout.contains("waiting for the browser login: 1 s left"),
            onPty.stdout)
        let piped = s.tv("login", "q", "--timeout", "2", env: ["BROWSER": "/nonexistent/browser"])
        XCTAssertTrue(piped.stderr.contains("failed (exit 127: not found)"), piped.stderr)
        XCTAssertFalse(piped.stderr.contains("s left"), "no counting down in a pipe: \(piped.stderr)")
    }
}
