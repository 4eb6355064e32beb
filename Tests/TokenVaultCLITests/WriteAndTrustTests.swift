import Foundation
import XCTest

/// More of docs/security.md, hostile cases each: a newer write always wins
/// over a spool, outside text is cleaned where it enters, the discovery cache
/// trusts only the user's own files, git's URL rules, a refresh that did not
/// happen is not reported as one, and hints are shell words. Against the quirk
/// provider that `HardeningTestCase` starts once per class.
final class WriteAndTrustTests: HardeningTestCase {
    var base: String { "http://127.0.0.1:\(Self.port)" }

    /// A second session on the same vault: its own runtime directory (locks, spool).
    func otherSession(_ s: Sandbox) throws -> [String: String] {
        let run = s.home + "/run-b"
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
        chmod(run, 0o700)
        return ["XDG_RUNTIME_DIR": run]
    }

    func noTerminalControl(_ text: String, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        for c in ["\u{1B}", "\u{07}", "\u{9B}", "\u{202E}", "\u{2028}"] {
            XCTAssertFalse(
                text.contains(c),
                "\(what) carries U+\(String(c.unicodeScalars.first!.value, radix: 16)): \(text.debugDescription)",
                file: file, line: line)
        }
    }

    // MARK: 1. A spool never undoes a newer login

    func testASpooledRenewalNeverOverwritesANewerRecord() throws {
        let s = try sandbox("/rotate")
        for i in 0..<4 {
            XCTAssertEqual(
                s.tv("set", "pad\(i).example", stdin: "padding-\(i)-" + String(repeating: "p", count: 120)).status, 0)
        }
        XCTAssertEqual(
            s.tv(
                "set", "q", "--provider", "q", stdin: #"{"access_token":"old","refresh_token":"r-old","expires_at":1}"#
            ).status, 0)
        // Session A renews, but the vault cannot take the result (dash counts ulimit -f in 512-byte blocks): spooled.
        let a = s.shell(#"ulimit -f 1; exec "$TV" get q"#)
        XCTAssertEqual(a.status, 0, a.stderr)
        XCTAssertTrue(a.out.hasPrefix("rot-at-") && a.stderr.contains("spool"), a.stdout + a.stderr)
        // Session B, with its own runtime directory, replaces the identity: a delete, then a set.
        let b = try otherSession(s)
        XCTAssertEqual(s.tv("delete", "q", env: b).status, 0)
        let newer = #"{"access_token":"new-at","refresh_token":"new-rt","expires_in":3600}"#
        XCTAssertEqual(s.tv("set", "q", "--provider", "q", stdin: newer, env: b).status, 0)
        // Session A's next run finds its spool computed from a record that is gone: dropped, said, never printed.
        let next = s.tv("get", "q")
        XCTAssertEqual(next.status, 0, next.stderr)
        XCTAssertEqual(next.out, "new-at", "the newer record wins: \(next.stderr)")
        XCTAssertTrue(next.stderr.contains("dropped") && next.stderr.contains("may still be valid"), next.stderr)
        XCTAssertFalse(next.stderr.contains("rot-rt-"), "the dropped refresh token is never printed")
        XCTAssertEqual(s.tv("get", "q", env: b).out, "new-at")
        XCTAssertEqual(s.tv("get", "q", "--field", "refresh_token").out, "new-rt")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: s.home + "/run/tokenvault/spool"), [])
    }

    func testGenerationsNeverRepeatAfterADelete() throws {
        let s = Sandbox()
        func generation() throws -> Int64 {
            let json = s.tv("get", "g.example", "--format", "json").stdout
            let o = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], json)
            return (o["generation"] as? NSNumber)?.int64Value ?? 0
        }
        XCTAssertEqual(s.tv("set", "g.example", stdin: "one").status, 0)
        let first = try generation()
        XCTAssertEqual(s.tv("set", "g.example", stdin: "two").status, 0)
        XCTAssertEqual(try generation(), first + 1)
        XCTAssertEqual(s.tv("delete", "g.example").status, 0)
        XCTAssertEqual(s.tv("set", "g.example", stdin: "three").status, 0)
        XCTAssertGreaterThan(try generation(), first + 1, "a record made after a delete takes no earlier number")
    }

    // MARK: 3. The discovery cache

    func testADiscoveryCacheFileOfAnotherUserOrOpenToOthersIsNotBelieved() throws {
        let s = Sandbox()
        try s.writeConfig(
            """
            [providers.iss]
            service = "iss.quirk.example"
            issuer = "\(base)/iss"
            client_id = "cid"
            client_secret = "csecret-1234"
            """)
        func storeExpired() {
            XCTAssertEqual(
                s.tv(
                    "set", "iss", "--provider", "iss",
                    stdin: #"{"access_token":"old","refresh_token":"r-old","expires_at":1}"#
                ).status, 0)
        }
        storeExpired()
        XCTAssertEqual(s.tv("get", "iss").status, 0, "discovered, cached and renewed")
        let dir = s.home + "/.cache/tokenvault/discovery"
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".json") }
        XCTAssertEqual(files.count, 1)
        let cache = dir + "/" + files[0]
        /// The cached document with its token endpoint pointed at /planted.
        func plant(_ after: String) throws {
            var o = try XCTUnwrap(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: cache))) as? [String: Any])
            var doc = try XCTUnwrap(o["document"] as? [String: Any])
            doc["token_endpoint"] = "\(base)/planted"
            o["document"] = doc
            unlink(cache)
            try JSONSerialization.data(withJSONObject: o).write(to: URL(fileURLWithPath: cache))
            XCTAssertEqual(s.shell(after.replacingOccurrences(of: "FILE", with: "'\(cache)'")).status, 0)
        }
        for (how, why) in [
            ("chown nobody FILE && chmod 600 FILE", "belongs to another user"),
            ("chmod 666 FILE", "writable by others"),
        ] {
            try plant(how)
            storeExpired()
            let r = s.tv("get", "iss")
            XCTAssertEqual(r.status, 0, "\(how): \(r.stderr)")
            XCTAssertTrue(r.out.hasPrefix("rot-at-"), r.stdout)
            XCTAssertTrue(
                r.stderr.contains("ignored the cached discovery document") && r.stderr.contains(why), r.stderr)
            XCTAssertNil(try stats()["/planted"], "\(how): the planted endpoint got nothing")
        }
        // The same planted document, the user's own and private, is believed: the checks above are what stopped it.
        try plant("chmod 600 FILE")
        storeExpired()
        XCTAssertNotEqual(s.tv("get", "iss").status, 0)
        XCTAssertEqual(try stats()["/planted"], 1)
    }

    // MARK: 4, 11. Text and URLs from outside

    func testTextFromOutsideIsCleanedWhereItEnters() throws {
        // A login with a user (a pasted code): a client's own grant asks no userinfo.
        let s = try sandbox(
            "/escape-token",
            extra: """
                authorize_url = "\(base)/authorize"
                userinfo_url = "\(base)/escape-userinfo"
                """)
        let login = s.tv("login", "q", "--no-browser", stdin: "code-1\n")
        XCTAssertEqual(login.status, 0, login.stderr)
        XCTAssertTrue(login.stderr.contains("as Mallory"), login.stderr)
        noTerminalControl(login.stderr, "the login notice")
        let status = s.tv("status", "q")
        XCTAssertTrue(status.stdout.contains("Mallory") && status.stdout.contains("scope:"), status.stdout)
        noTerminalControl(status.stdout, "status")
        noTerminalControl(s.tv("list").stdout, "list")
        // A discovered authorization endpoint: an escape sequence is refused, a bidi override shown encoded.
        for (name, code) in [("esc", Int32(65)), ("bidi", Int32(3))] {
            let d = Sandbox()
            try d.writeConfig(
                """
                [providers.\(name)]
                service = "\(name).quirk.example"
                issuer = "\(base)/\(name)"
                client_id = "cid"
                """)
            let r = d.tv("login", name, "--no-browser", stdin: "")
            noTerminalControl(r.stderr, "the \(name) login")
            if name == "bidi" {
                XCTAssertTrue(r.stderr.contains("\(base)/authorize/%E2%80%AEevil?"), r.stderr)
                XCTAssertNotEqual(r.status, 0)
            } else {
                XCTAssertEqual(r.status, code, r.stderr)
                XCTAssertTrue(r.stderr.contains("not a plain http(s) URL"), r.stderr)
            }
        }
        // The device flow's URLs.
        let device = try sandbox("/rotate", extra: "device_authorization_url = \"\(base)/device-bidi\"")
        let r = device.tv("login", "q", "--device", "--timeout", "5")
        XCTAssertEqual(r.status, 0, r.stderr)
        noTerminalControl(r.stderr, "the device flow")
        XCTAssertTrue(r.stderr.contains("https://example.com/device%E2%80%AE/lave"), r.stderr)
    }

    // MARK: 6. git's URL rules

    func testGitCredentialReadsTheHostAsGitDoes() throws {
        let s = Sandbox()
        XCTAssertEqual(s.tv("set", "api.github.com", "--provider", "github", stdin: "gho_github_token_1234").status, 0)
        let direct = s.tv("git-credential", "get", stdin: "protocol=https\nhost=github.com\n\n")
        XCTAssertTrue(direct.stdout.contains("password=gho_github_token_1234"), direct.stdout + direct.stderr)
        for url in [
            "https://evil.example?@github.com/x", "https://evil.example#@github.com/x",
            "https://evil.example/@github.com/x",
        ] {
            let r = s.tv("git-credential", "get", stdin: "protocol=https\nurl=\(url)\n\n")
            XCTAssertFalse(r.stdout.contains("gho_github_token_1234"), "\(url): \(r.stdout)")
        }
        // git's own host= line wins over a url= line.
        let both = s.tv(
            "git-credential", "get", stdin: "protocol=https\nhost=evil.example\nurl=https://github.com/x\n\n")
        XCTAssertFalse(both.stdout.contains("gho_github_token_1234"), both.stdout)
        let user = s.tv("git-credential", "get", stdin: "url=https://someone@github.com/x\n\n")
        XCTAssertTrue(user.stdout.contains("password=gho_github_token_1234"), user.stdout + user.stderr)
    }

    // MARK: 8. A refresh that did not happen

    func testARefreshThatDidNotHappenIsAnError() throws {
        let s = try sandbox("/html502")
        XCTAssertEqual(
            s.tv(
                "set", "q", "--provider", "q",
                stdin: #"{"access_token":"still-good","refresh_token":"r-1","expires_in":3600}"#
            ).status, 0)
        let r = s.tv("refresh", "q")
        XCTAssertEqual(r.status, 75, r.stderr)
        XCTAssertFalse(r.stderr.contains("refreshed"), r.stderr)
        XCTAssertEqual(s.tv("get", "q").out, "still-good", "nothing was lost")
        let gone = try sandbox("/invalid-grant")
        XCTAssertEqual(
            gone.tv(
                "set", "q", "--provider", "q",
                stdin: #"{"access_token":"still-good","refresh_token":"r-1","expires_in":3600}"#
            ).status, 0)
        XCTAssertEqual(gone.tv("refresh", "q").status, 4)
    }

    // MARK: 10. Hints are shell words

    func testHintsQuoteEveryValueAsAShellWord() throws {
        let s = try sandbox("/invalid-grant")
        let hostile = "x;touch pwned|sh;#"
        let missing = s.tv("get", "api.example.com", env: ["TOKENVAULT_ACCOUNT": hostile])
        XCTAssertEqual(missing.status, 3)
        XCTAssertTrue(
            missing.stderr.contains(
                "hint: store one with: tokenvault set api.example.com --account 'x;touch pwned|sh;#' < token.json"),
            missing.stderr)
        XCTAssertEqual(
            s.tv(
                "set", "q", "--provider", "q", stdin: #"{"access_token":"a","expires_at":1}"#,
                env: ["TOKENVAULT_ACCOUNT": hostile]
            ).status, 0)
        let expired = s.tv("get", "q", env: ["TOKENVAULT_ACCOUNT": hostile])
        XCTAssertEqual(expired.status, 4)
        XCTAssertTrue(
            expired.stderr.contains("hint: run: tokenvault login q --account 'x;touch pwned|sh;#'"), expired.stderr)
        // Pasted as shown, the hint's account is one word: nothing runs.
        let line = try XCTUnwrap(expired.stderr.split(separator: "\n").first { $0.hasPrefix("hint: run: ") })
        let pasted = s.shell(
            "cd \"$HOME\"; set -- " + line.dropFirst("hint: run: tokenvault login q --account ".count)
                + "; printf '%s' \"$1\"")
        XCTAssertEqual(pasted.stdout, hostile)
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.home + "/pwned"))
    }
}
