import Foundation
import XCTest

/// The commands end to end on the file backend: output, exit codes, hostile input.
final class CommandTests: XCTestCase {
    let weibo = #"{"access_token":"abc","refresh_token":"r1","expires_in":3600,"uid":"42"}"#

    func testIssueExampleRoundTrip() {
        let s = Sandbox(inProcess: true)
        XCTAssertEqual(s.tv("set", "https://api.weibo.com/2/", stdin: weibo).status, 0)
        XCTAssertEqual(s.tv("get", "api.weibo.com").stdout, "abc\n")
        XCTAssertEqual(s.tv("get", "weibo", "--field", "uid").stdout, "42\n")
        XCTAssertEqual(s.tv("get", "API.Weibo.COM:443", "--field", "refresh_token").stdout, "r1\n")
        let json = s.tv("get", "api.weibo.com", "--format", "json")
        let record = try! JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as! [String: Any]
        XCTAssertEqual(record["access_token"] as? String, "abc")
        XCTAssertEqual((record["extra"] as? [String: Any])?["uid"] as? String, "42")
        XCTAssertEqual(s.tv("get", "api.weibo.com", "--format", "env").stdout, "export TOKENVAULT_ACCESS_TOKEN='abc'\n")
        XCTAssertEqual(s.tv("get", "api.weibo.com", "--format", "header").stdout, "Authorization: Bearer abc\n")
        let list = s.tv("list")
        XCTAssertTrue(list.stdout.contains("api.weibo.com"), list.stdout)
        XCTAssertFalse(list.stdout.contains("abc"), "list must never print a secret")
        XCTAssertFalse(list.stdout.contains("r1"))
        XCTAssertEqual(s.tv("status", "api.weibo.com").status, 0)
        XCTAssertEqual(s.tv("delete", "api.weibo.com").status, 0)
        XCTAssertEqual(s.tv("status", "api.weibo.com").status, 3)
        XCTAssertEqual(s.tv("get", "api.weibo.com").status, 3)
        XCTAssertEqual(s.tv("logout", "api.weibo.com").status, 3)
    }

    func testEnvFormatIsSafeToEval() {
        let s = Sandbox(inProcess: true)
        s.expect("set", "api.example.com", stdin: #"{"access_token":"t0k","who":"it's $(touch pwned) `x`"}"#)
        let r = s.shell(
            #"cd "$HOME" && eval "$("$TV" get api.example.com --format env --field who)" && printf %s "$TOKENVAULT_WHO"; ls pwned 2>/dev/null"#
        )
        XCTAssertEqual(r.stdout, "it's $(touch pwned) `x`")
    }

    func testAccountsAreSeparate() {
        let s = Sandbox(inProcess: true)
        s.expect("set", "api.github.com", stdin: "work-token\n")
        s.expect("set", "api.github.com", "--account", "home", stdin: "home-token\n")
        XCTAssertEqual(s.tv("get", "api.github.com").out, "work-token")
        XCTAssertEqual(s.tv("get", "github", "--account", "home").out, "home-token")
        XCTAssertEqual(s.tv("get", "github", "--account", "none").status, 3)
        XCTAssertEqual(s.tv("get", "github", "--account", "").status, 64)
    }

    func testExpiredWithoutRefreshTokenExits4WithHint() {
        let s = Sandbox(inProcess: true)
        s.expect(
            "set", "api.weibo.com", "--provider", "weibo",
            stdin: #"{"access_token":"old","expires_at":"2001-01-01T00:00:00Z"}"#)
        let r = s.tv("get", "api.weibo.com")
        XCTAssertEqual(r.status, 4)
        XCTAssertEqual(r.stdout, "")
        XCTAssertTrue(r.stderr.contains("hint: run: tokenvault login weibo"), r.stderr)
        XCTAssertEqual(s.tv("status", "weibo").status, 4)
        // Fields that are not the token are still there for scripts.
        XCTAssertEqual(s.tv("get", "weibo", "--field", "expires_at").out, "978307200")
    }

    func testHostileServiceNamesExit64AndTouchNothing() {
        let s = Sandbox(inProcess: true)
        s.expect("set", "api.weibo.com", stdin: "keep\n")
        let before = FileManager.default.contents(atPath: s.vault)
        for bad in [
            "../../etc", "", "a b", "api.x.com/../y", String(repeating: "a", count: 300), "a\u{01}b", "..", "x..y",
            "ftp://x.com", "https://u:p@x.com/", "x.com:99999", "x.com:0",
        ] {
            for cmd in ["get", "set", "delete", "status"] {
                let r = s.run([cmd, bad], stdin: "tok\n")
                XCTAssertEqual(r.status, 64, "\(cmd) \(bad.debugDescription): \(r.stderr)")
                XCTAssertTrue(r.stderr.hasPrefix("tokenvault: error: "), r.stderr)
                XCTAssertEqual(r.stdout, "")
            }
        }
        XCTAssertEqual(FileManager.default.contents(atPath: s.vault), before)
        XCTAssertEqual(s.tv("get", "api.weibo.com").out, "keep")
    }

    func testMalformedStdinExits65AndKeepsWhatWasStored() {
        let s = Sandbox(inProcess: true)
        s.expect("set", "api.weibo.com", stdin: "keep\n")
        for bad in [
            "", "{", "[1]", #"{"refresh_token":"x"}"#, #"{"access_token":""}"#,
            #"{"access_token":"a","expires_in":"soon"}"#,
            "two\nlines", "with space", #"{"error":"invalid_grant"}"#, String(repeating: "x", count: 1 << 21),
        ] {
            let r = s.tv("set", "api.weibo.com", stdin: bad)
            XCTAssertEqual(r.status, 65, "\(bad.prefix(40).debugDescription): \(r.stderr)")
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
        }
        XCTAssertEqual(s.tv("get", "api.weibo.com").out, "keep")
    }

    func testNumbersAsStringsAndExtraFields() {
        let s = Sandbox(inProcess: true)
        s.expect(
            "set", "weibo",
            stdin: #"{"access_token":"a","expires_in":"157679999","remind_in":"157679999","uid":"1404376560"}"#)
        XCTAssertEqual(s.tv("get", "weibo", "--field", "remind_in").out, "157679999")
        let exp = Int64(s.tv("get", "weibo", "--field", "expires_at").out) ?? 0
        XCTAssertGreaterThan(exp, Int64(Date().timeIntervalSince1970) + 157_000_000)
    }

    func testUnknownFieldAndUsageErrors() {
        let s = Sandbox(inProcess: true)
        s.expect("set", "api.x.com", stdin: "tok\n")
        let r = s.tv("get", "api.x.com", "--field", "nope")
        XCTAssertEqual(r.status, 64)
        XCTAssertTrue(r.stderr.contains("hint: fields:"), r.stderr)
        XCTAssertEqual(s.tv("get").status, 64)
        XCTAssertEqual(s.tv("get", "api.x.com", "--format", "xml").status, 64)
        XCTAssertEqual(s.tv("frobnicate").status, 64)
        XCTAssertEqual(s.tv("set", "api.x.com", "--provider", "nosuch", stdin: "t\n").status, 78)
    }

    func testExecPassesTokenAndExitStatus() {
        let s = Sandbox(inProcess: true)
        s.expect("set", "api.x.com", stdin: "tok123\n")
        let r = s.tv("exec", "api.x.com", "--", "/bin/sh", "-c", #"printf %s "$TOKENVAULT_ACCESS_TOKEN"; exit 7"#)
        XCTAssertEqual(r.status, 7)
        XCTAssertEqual(r.stdout, "tok123")
        XCTAssertEqual(s.tv("exec", "api.x.com", "--", "/no/such/program").status, 127)
    }

    func testListAndStatusJSONCarryNoSecrets() {
        let s = Sandbox(inProcess: true)
        s.expect("set", "api.weibo.com", stdin: weibo)
        for args in [["list", "--json"], ["status", "--json"], ["status", "weibo", "--json"]] {
            let r = s.run(args)
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)), r.stdout)
            XCTAssertFalse(r.stdout.contains("abc") || r.stdout.contains("\"r1\""), r.stdout)
        }
    }

    func testConfigBackendAndBadConfig() {
        let s = Sandbox(inProcess: true)
        try! s.writeConfig("backend = \"file\"\nmin_valid = 30\n")
        XCTAssertEqual(s.tv("set", "api.x.com", stdin: "t\n", env: ["TOKENVAULT_BACKEND": ""]).status, 0)
        try! s.writeConfig("backend = \"floppy\"\n")
        let r = s.tv("get", "api.x.com", env: ["TOKENVAULT_BACKEND": ""])
        XCTAssertEqual(r.status, 78, r.stderr)
        XCTAssertEqual(s.tv("get", "api.x.com", env: ["TOKENVAULT_BACKEND": "floppy"]).status, 78)
        try! s.writeConfig("bakend = \"file\"\n")
        let misspelt = s.tv("list", env: ["TOKENVAULT_BACKEND": ""])
        XCTAssertEqual(misspelt.status, 78)
        XCTAssertTrue(
            misspelt.stderr.contains("config.toml:1: unknown setting bakend (did you mean backend?)"), misspelt.stderr)
    }

    func testHeaderFollowsTheProvidersTemplate() throws {
        let s = Sandbox(inProcess: true)
        try s.writeConfig(
            """
            [providers.custom]
            service = "api.custom.example"
            token_url = "https://auth.custom.example/token"
            header = "x-auth-token: {token}"
            [providers.broken]
            token_url = "https://auth.broken.example/token"
            header = "no placeholder"
            """)
        s.expect("set", "custom", "--provider", "custom", stdin: "tok123\n")
        XCTAssertEqual(s.tv("header", "custom").out, "x-auth-token: tok123")
        XCTAssertEqual(s.tv("get", "custom", "--format", "header").out, "x-auth-token: tok123")
        s.expect("set", "api.plain.example", stdin: "plain\n")
        XCTAssertEqual(s.tv("header", "api.plain.example").out, "Authorization: Bearer plain")
        s.expect("set", "auth.broken.example", "--provider", "broken", stdin: "t\n")
        XCTAssertEqual(s.tv("header", "auth.broken.example").status, 78)
    }

    func testCommittedCompletionsMatchTheParser() throws {
        for (shell, file) in [("bash", "tokenvault.bash"), ("zsh", "_tokenvault"), ("fish", "tokenvault.fish")] {
            let generated = runProcess(Paths.binary, ["--generate-completion-script", shell], env: [:])
            let committed = try String(
                contentsOf: Paths.root.appendingPathComponent("completions/" + file), encoding: .utf8)
            XCTAssertEqual(generated.stdout, committed, "completions/\(file) is stale: run make docs")
        }
    }

    func testProvidersListsPresets() {
        let s = Sandbox(inProcess: true)
        let r = s.tv("providers", "--json")
        XCTAssertEqual(r.status, 0)
        for name in ["weibo", "google", "github", "foursquare", "twitter", "flickr"] {
            XCTAssertTrue(r.stdout.contains("\"\(name)\""), name)
        }
        XCTAssertTrue(r.stdout.contains("api.twitter.com"))
    }
}
