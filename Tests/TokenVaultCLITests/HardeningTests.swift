import Foundation
import XCTest

/// What HardeningTests and WriteAndTrustTests share: the quirk provider and a
/// private gnome-keyring (QuirkProviderTestCase), a sandbox for provider q.
class HardeningTestCase: QuirkProviderTestCase {
    func sandbox(_ path: String = "/rotate", backend: String = "file", extra: String = "") throws -> Sandbox {
        let s = Sandbox(backend: backend)
        s.env.merge(Self.keyring.env) { $1 }
        try s.writeConfig(
            """
            [providers.q]
            service = "api.quirk.example"
            token_url = "http://127.0.0.1:\(Self.port)\(path)"
            client_id = "cid"
            client_secret = "csecret-1234"
            \(extra)
            """)
        return s
    }

    func storeExpired(_ s: Sandbox, refresh: String = "r-old") {
        let r = s.tv(
            "set", "q", "--provider", "q",
            stdin: #"{"access_token":"old","refresh_token":"\#(refresh)","expires_at":1}"#)
        XCTAssertEqual(r.status, 0, r.stderr)
    }
}

/// What a hostile provider, a hostile input, another local user or bad timing
/// sends: nothing corrupts the vault, crashes the tool or leaks a secret.
final class HardeningTests: HardeningTestCase {
    // MARK: 1. A set that destroys the vault

    func testLimitsCountBytesAndTheLargestValuesRoundTrip() throws {
        let s = Sandbox()
        XCTAssertEqual(s.tv("set", "keep.example", stdin: "kept").status, 0)
        let accents = "e" + String(repeating: "\u{301}", count: 33_000)
        let r = s.tv("set", "evil.test", "--account", accents, stdin: "x")
        XCTAssertEqual(r.status, 64, r.stderr)
        XCTAssertEqual(s.tv("get", "keep.example").out, "kept", "the vault is as it was")
        // The largest accepted service, account and values.
        let host = [62, 62, 62, 56].map { String(repeating: "a", count: $0) }.joined(separator: ".") + ".example"
        XCTAssertEqual(host.utf8.count, 253)
        let service = host + ":65535"
        let account = String(repeating: "é", count: 128)
        let token = String(repeating: "t", count: 900_000)
        let big = s.tv(
            "set", service, "--account", account,
            stdin: #"{"access_token":"\#(token)","note":"\#(String(repeating: "n", count: 60_000))"}"#)
        XCTAssertEqual(big.status, 0, String(big.stderr.prefix(300)))
        let back = s.tv("get", service, "--account", account)
        XCTAssertTrue(back.out == token, "the 900 kB token comes back whole (\(back.out.count) bytes)")
        XCTAssertEqual(s.tv("get", service, "--account", account, "--field", "note").out.count, 60_000)
        XCTAssertEqual(s.tv("list").status, 0)
        XCTAssertEqual(s.tv("get", "keep.example").out, "kept")
    }

    // MARK: 2. Numbers that trap

    func testNumbersFromOutsideNeverCrash() throws {
        let s = try sandbox("/nan-rotate")
        for v in [#""nan""#, #""inf""#, "1e300", #""9.3e18""#] {
            let r = s.tv("set", "n.example", stdin: #"{"access_token":"a","expires_in":\#(v)}"#)
            XCTAssertEqual(r.status, 65, "\(v): \(r.stderr)")
            XCTAssertTrue(r.stderr.hasPrefix("tokenvault: error: "), r.stderr)
        }
        // A refresh whose answer is malformed keeps the rotated refresh token.
        storeExpired(s)
        let get = s.tv("get", "q")
        XCTAssertEqual(get.status, 65, get.stderr)
        XCTAssertTrue(s.tv("get", "q", "--no-refresh", "--field", "refresh_token").out.hasPrefix("nan-rt-"))
        // A device flow with an absurd interval.
        for path in ["/device-5000", "/device-neg"] {
            let d = try sandbox(extra: "device_authorization_url = \"http://127.0.0.1:\(Self.port)\(path)\"")
            let r = d.tv("login", "q", "--device", "--timeout", "5")
            XCTAssertEqual(r.status, 65, "\(path): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("interval"), r.stderr)
        }
    }

    // MARK: 3. A rotated refresh token and a full disk

    func testARotatedTokenTheVaultCannotTakeIsSpooledThenStored() throws {
        let s = try sandbox("/rotate")
        for i in 0..<4 {
            XCTAssertEqual(
                s.tv("set", "pad\(i).example", stdin: "padding-\(i)-" + String(repeating: "p", count: 120)).status, 0)
        }
        storeExpired(s)
        // dash's ulimit -f counts 512-byte blocks: the vault (over 1 KiB) cannot be written, the spool can.
        let r = s.shell(#"ulimit -f 1; exec "$TV" get q"#)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.out.hasPrefix("rot-at-"), r.stdout)
        XCTAssertTrue(r.stderr.contains("spool"), r.stderr)
        XCTAssertFalse(r.stderr.contains("rot-rt-"), "no secret on stderr")
        let next = s.tv("get", "q", "--no-refresh", "--field", "refresh_token")
        XCTAssertTrue(next.out.hasPrefix("rot-rt-"), next.stdout + next.stderr)
        XCTAssertTrue(next.stderr.contains("spool"), "says it wrote the spooled record: \(next.stderr)")
        XCTAssertEqual(s.tv("get", "q").out, r.out, "the spooled token is the stored one now")
    }

    // MARK: 4. Writes that go back in time

    func testSetsDuringAMigrationAreKept() throws {
        let s = try sandbox(backend: "file")
        s.env["TOKENVAULT_KEY_TTL"] = "600"
        let lines = (0..<80).map { #"printf '%s' 'old-\#($0)' | "$TV" set m\#($0).example || exit 1"# }.joined(
            separator: "\n")
        XCTAssertEqual(s.shell(lines).status, 0)
        let sets = (0..<6).map { i in
            #"printf '%s' 'new-\#(i)' | TOKENVAULT_BACKEND=auto "$TV" set m\#(i * 13).example"#
        }
        let script = #"""
            "$TV" migrate --to secret-service & pid=$!
            sleep 0.2
            \#(sets.joined(separator: "; sleep 0.1\n"))
            wait $pid
            """#
        let r = s.shell(script)
        XCTAssertEqual(r.status, 0, r.stderr)
        for i in 0..<6 {
            let got = s.tv("get", "m\(i * 13).example", env: ["TOKENVAULT_BACKEND": "auto"])
            XCTAssertEqual(got.out, "new-\(i)", "set \(i) kept: \(got.stderr)")
        }
        XCTAssertEqual(s.tv("get", "m1.example", env: ["TOKENVAULT_BACKEND": "secret-service"]).out, "old-1")
        let left = s.tv("list", "--json", env: ["TOKENVAULT_BACKEND": "file"])
        XCTAssertEqual(left.out, "[]", "the source is empty: \(left.stdout)")
        _ = s.tv("lock")
    }

    // MARK: 5-7. Secrets where they do not belong

    func testChildrenNeverSeeThePassphrase() throws {
        let s = try sandbox(
            extra: """
                authorize_url = "http://127.0.0.1:\(Self.port)/authorize"
                """)
        XCTAssertEqual(s.tv("set", "e.example", stdin: "tok-e").status, 0)
        let env = ["TOKENVAULT_PASSPHRASE_COMMAND": "echo 'correct horse'", "TOKENVAULT_PASSPHRASE_FILE": ""]
        let r = s.tv("exec", "e.example", "--", "env", env: env)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("TOKENVAULT_ACCESS_TOKEN=tok-e"))
        XCTAssertFalse(r.stdout.contains("TOKENVAULT_PASSPHRASE"), r.stdout)
        XCTAssertFalse(r.stdout.contains("correct horse"))
        // The browser login starts.
        let dump = s.home + "/browser-env"
        let browser = s.home + "/browser"
        try "#!/bin/sh\nenv > \(dump)\n".write(toFile: browser, atomically: true, encoding: .utf8)
        chmod(browser, 0o755)
        let login = s.tv("login", "q", "--timeout", "2", env: ["BROWSER": browser])
        XCTAssertEqual(login.status, 75, login.stderr)
        let seen = try String(contentsOfFile: dump, encoding: .utf8)
        XCTAssertTrue(seen.contains("HOME="), seen)
        XCTAssertFalse(seen.contains("TOKENVAULT_PASSPHRASE"), seen)
    }

    func testProviderTextIsCleanedAndNeverEchoesASecret() throws {
        let s = try sandbox("/echo-secret")
        storeExpired(s, refresh: "rt-very-secret")
        let r = s.tv("get", "q")
        XCTAssertEqual(r.status, 76, r.stderr)
        XCTAssertFalse(r.stderr.contains("rt-very-secret"), r.stderr)
        XCTAssertFalse(r.stderr.contains("csecret-1234"), r.stderr)
        XCTAssertTrue(r.stderr.contains("[redacted]"), r.stderr)
        let d = try sandbox(extra: "device_authorization_url = \"http://127.0.0.1:\(Self.port)/device-escape\"")
        let login = d.tv("login", "q", "--device", "--timeout", "3")
        XCTAssertFalse(login.stderr.contains("\u{1B}"), "no escape sequence reaches the terminal")
        XCTAssertEqual(login.status, 65, login.stderr)
    }

    func testEnvOutputIsSafeToEvalInEveryShell() throws {
        let s = Sandbox()
        let hostile = #"a\'b'$(touch${IFS}pwned)`touch${IFS}pwned2`\\;\"x"#
        XCTAssertEqual(
            s.tv(
                "set", "h.example",
                stdin:
                    #"{"access_token":"\#(hostile.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\""))","note":"it's a \\ $HOME"}"#
            ).status, 0)
        XCTAssertEqual(s.tv("get", "h.example").out, hostile)
        let shells: [(String, [String])] = [
            (
                "/bin/sh",
                ["-c", #"eval "$("$TV" get h.example --format env)"; printf '%s' "$TOKENVAULT_ACCESS_TOKEN""#]
            ),
            (
                "/bin/bash",
                ["-c", #"eval "$("$TV" get h.example --format env)"; printf '%s' "$TOKENVAULT_ACCESS_TOKEN""#]
            ),
            (
                "/usr/bin/zsh",
                ["-c", #"eval "$("$TV" get h.example --format env)"; printf '%s' "$TOKENVAULT_ACCESS_TOKEN""#]
            ),
            (
                "/usr/bin/fish",
                [
                    "-c",
                    #"eval ($TV get h.example --format env | string collect); printf '%s' "$TOKENVAULT_ACCESS_TOKEN""#,
                ]
            ),
            (
                "/usr/bin/fish",
                ["-c", #"$TV get h.example --format env | source; printf '%s' "$TOKENVAULT_ACCESS_TOKEN""#]
            ),
            (
                "/bin/bash",
                ["-c", #"eval "$("$TV" get h.example --format env --field note)"; printf '%s' "$TOKENVAULT_NOTE""#]
            ),
            (
                "/usr/bin/fish",
                ["-c", #"$TV get h.example --format env --field note | source; printf '%s' "$TOKENVAULT_NOTE""#]
            ),
        ]
        for (shell, args) in shells {
            var env = s.env
            env["TV"] = Paths.binary
            let r = runProcess(shell, args, env: env, in: s.home)
            let expected = args[1].contains("NOTE") ? #"it's a \ $HOME"# : hostile
            XCTAssertEqual(r.stdout, expected, "\(shell) \(args[1]): \(r.stderr)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: s.home + "/pwned"), shell)
            XCTAssertFalse(FileManager.default.fileExists(atPath: s.home + "/pwned2"), shell)
        }
    }

    // MARK: 8-14. Boundaries

    func testHTTPOnlyForLoopbackLiterals() throws {
        for (url, ok) in [
            ("http://127.evil-example.com:18080/token", false), ("http://localhost.evil.example/token", false),
            ("http://127.0.0.1:\(Self.port)/rotate", true), ("http://[::1]:9/token", true),
            ("http://localhost:9/token", true),
        ] {
            let s = Sandbox()
            try s.writeConfig("[providers.q]\nservice = \"q.example\"\ntoken_url = \"\(url)\"\nclient_id = \"c\"\n")
            XCTAssertEqual(
                s.tv("set", "q", "--provider", "q", stdin: #"{"access_token":"o","refresh_token":"r","expires_at":1}"#)
                    .status, 0)
            let r = s.tv("refresh", "q")
            if ok {
                XCTAssertNotEqual(r.status, 78, "\(url): \(r.stderr)")
            } else {
                XCTAssertEqual(r.status, 78, "\(url): \(r.stderr)")
                XCTAssertTrue(r.stderr.contains("http:// only for loopback"), r.stderr)
            }
        }
    }

    func testMissingParentsAreCreatedPrivateUnderAnyUmask() throws {
        let s = Sandbox()
        s.env["XDG_DATA_HOME"] = ""
        s.env["XDG_CACHE_HOME"] = ""
        s.env["XDG_RUNTIME_DIR"] = ""
        let r = s.shell(#"umask 000; printf tok | "$TV" set u.example"#)
        XCTAssertEqual(r.status, 0, r.stderr)
        for dir in [
            ".local", ".local/share", ".local/share/tokenvault", ".cache", ".cache/tokenvault", ".cache/tokenvault/run",
        ] {
            let mode = try FileManager.default.attributesOfItem(atPath: s.home + "/" + dir)[.posixPermissions] as? Int
            XCTAssertEqual(mode, 0o700, dir)
        }
    }

    func testWithoutARuntimeDirectoryLocksStayInTheUsersOwnDirectory() throws {
        let s = try sandbox("/rotate")
        s.env["XDG_RUNTIME_DIR"] = ""
        s.env["XDG_CACHE_HOME"] = s.home + "/cache"
        // Another user's directory at the old predictable name changes nothing.
        let squatted = "/tmp/tokenvault-\(geteuid())"
        let made = mkdir(squatted, 0o777) == 0
        if made { chown(squatted, 65534, 65534) }
        defer { if made { rmdir(squatted) } }
        storeExpired(s)
        let r = s.tv("get", "q")
        XCTAssertEqual(r.status, 0, r.stderr)
        var st = stat()
        XCTAssertEqual(stat(s.home + "/cache/tokenvault/run", &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o700)
    }

    func testACraftedHeaderCannotAskForAbsurdWork() throws {
        let s = Sandbox()
        XCTAssertEqual(s.tv("set", "k.example", stdin: "tok").status, 0)
        // The largest parameters the old bound accepted (ops 16, 2 GiB), with the unkeyed checksum redone.
        let craft = """
            import struct, sys
            from nacl import encoding, hash as h
            p = sys.argv[1]; b = bytearray(open(p, "rb").read())
            b[12:16] = struct.pack("<I", 16); b[16:24] = struct.pack("<Q", 2 << 30)
            b[80:96] = h.blake2b(bytes(b[:80]), digest_size=16, encoder=encoding.RawEncoder)
            open(p, "wb").write(b)
            """
        XCTAssertEqual(
            runProcess("/usr/bin/python3", ["-c", craft, s.vault], env: ["PATH": "/usr/bin:/bin"]).status, 0)
        let r = s.tv("get", "k.example")
        XCTAssertEqual(r.status, 74, r.stderr)
        XCTAssertTrue(r.stderr.contains("absurd key-derivation parameters"), r.stderr)
    }

    func testRecordsWrittenByOtherToolsAreValidated() throws {
        let s = Sandbox(backend: "secret-service")
        s.env.merge(Self.keyring.env) { $1 }
        let store = runProcess(
            "/usr/bin/secret-tool",
            ["store", "--label=x", "service", "crlf.example", "account", "default", "type", "token"],
            stdin: "tok\r\nX-Injected: yes", env: s.env)
        XCTAssertEqual(store.status, 0, store.stderr)
        for args in [["get", "crlf.example"], ["header", "crlf.example"]] {
            let r = s.run(args)
            XCTAssertEqual(r.status, 65, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("crlf.example"), r.stderr)
            XCTAssertFalse(r.stdout.contains("X-Injected"), r.stdout)
        }
    }

    func testFilesOthersCanChangeAreRefused() throws {
        let s = try sandbox()
        let config = s.env["XDG_CONFIG_HOME"]! + "/tokenvault/config.toml"
        chmod(config, 0o666)
        XCTAssertEqual(s.tv("providers").status, 77)
        chmod(config, 0o600)
        chown(config, 65534, 65534)
        XCTAssertEqual(s.tv("providers").status, 77)
        chown(config, geteuid(), getegid())
        XCTAssertEqual(s.tv("providers").status, 0)
        // A client secret file and a passphrase file others can write.
        let secret = s.home + "/client.secret"
        try "csecret".write(toFile: secret, atomically: true, encoding: .utf8)
        chmod(secret, 0o666)
        try s.writeConfig(
            "[providers.q]\nservice = \"q.example\"\ntoken_url = \"http://127.0.0.1:\(Self.port)/rotate\"\nclient_id = \"c\"\nclient_secret_file = \"\(secret)\"\n"
        )
        storeExpired(s)
        XCTAssertEqual(s.tv("get", "q").status, 77)
        chmod(secret, 0o600)
        XCTAssertEqual(s.tv("get", "q").status, 0)
        let pass = s.home + "/pass"
        try "correct horse".write(toFile: pass, atomically: true, encoding: .utf8)
        chmod(pass, 0o646)
        XCTAssertEqual(s.tv("get", "q", env: ["TOKENVAULT_PASSPHRASE_FILE": pass]).status, 77)
    }

    // MARK: Seams

    /// A system library missing at run time is a clear error of its own (69),
    /// not a "temporary failure" (75). The library is hidden in a private mount
    /// namespace (root only; CI runs as root).
    func testAMissingSystemLibraryIsAClearError() throws {
        let s = try sandbox("/rotate")
        storeExpired(s)
        // libsecret, GLib and libcurl are opened on first use (HotPathTests: none of them is NEEDED).
        s.env["TV"] = Paths.binary
        func hidden(_ soname: String, _ command: String) -> Run {
            runProcess(
                "/bin/sh",
                [
                    "-c",
                    """
                    lib=$(ldconfig -p | awk '/\(soname) /{print $NF; exit}')
                    exec unshare -m sh -c "mount --bind /dev/null $(readlink -f "$lib") && exec \(command)"
                    """,
                ], env: s.env)
        }
        let curl = hidden("libcurl.so.4", #""$TV" get q"#)
        XCTAssertEqual(curl.status, 69, curl.stderr)
        XCTAssertTrue(curl.stderr.contains("libcurl cannot be loaded"), curl.stderr)
        XCTAssertTrue(curl.stderr.contains("hint: install libcurl"), curl.stderr)
        s.env.merge(Self.keyring.env) { $1 }
        let secret = hidden("libsecret-1.so.0", #"env TOKENVAULT_BACKEND=secret-service "$TV" list"#)
        XCTAssertEqual(secret.status, 69, secret.stderr)
        XCTAssertTrue(secret.stderr.contains("libsecret cannot be loaded"), secret.stderr)
        // auto falls back to the file vault, and says why.
        let auto = hidden(
            "libsecret-1.so.0", #"env TOKENVAULT_BACKEND=auto "$TV" get q --no-refresh --field refresh_token"#)
        XCTAssertEqual(auto.status, 0, auto.stderr)
        XCTAssertEqual(auto.out, "r-old")
    }
}
