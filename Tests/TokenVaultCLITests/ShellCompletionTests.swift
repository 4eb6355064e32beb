import Foundation
import XCTest

/// The committed bash completion script, run in real bash: providers, stored
/// services and accounts come back; a locked vault offers nothing.
final class ShellCompletionTests: XCTestCase {
    var s: Sandbox!

    override func setUpWithError() throws {
        s = Sandbox()
        // A vault of its own with the key cached, as after any use within TOKENVAULT_KEY_TTL.
        s.env["TOKENVAULT_VAULT"] = s.home + "/cached/vault"
        s.env["TOKENVAULT_KEY_TTL"] = "120"
        XCTAssertEqual(s.tv("set", "api.weibo.com", stdin: "t\n").status, 0)
        XCTAssertEqual(s.tv("set", "api.weibo.com", "--account", "work", stdin: "t\n").status, 0)
        XCTAssertEqual(s.tv("set", "127.0.0.1:9000", stdin: "t\n").status, 0)
        // From here on, only the cached key: no passphrase source.
        s.env["TOKENVAULT_PASSPHRASE"] = nil
        s.env["PATH"] = (Paths.binary as NSString).deletingLastPathComponent + ":/usr/bin:/bin"
    }

    override func tearDown() { s.tv("lock") }

    func bash(_ words: String...) -> [String] {
        let script = Paths.root.appendingPathComponent("completions/tokenvault.bash").path
        let r = runProcess("/bin/bash", [Paths.fixtures.appendingPathComponent("complete.bash").path, script] + words, env: s.env, limit: 30)
        XCTAssertEqual(r.stderr, "", "completion never prints errors or prompts")
        return r.stdout.split(separator: "\n").map(String.init)
    }

    func testBash() {
        XCTAssertEqual(bash("tokenvault", "login", ""), ["flickr", "foursquare", "github", "google", "twitter", "weibo"])
        XCTAssertEqual(bash("tokenvault", "get", ""), ["127.0.0.1:9000", "api.weibo.com"])
        XCTAssertEqual(bash("tokenvault", "delete", "api"), ["api.weibo.com"])
        XCTAssertEqual(bash("tokenvault", "get", "api.weibo.com", "--account", ""), ["default", "work"])
        XCTAssertEqual(bash("tokenvault", "status", "127.0.0.1:9000", "--account", ""), ["default"])
        XCTAssertTrue(bash("tokenvault", "get", "api.weibo.com", "--field", "").contains("refresh_token"))
    }

    func testLockedVaultOffersNothingAndNeverPrompts() {
        s.tv("lock")
        XCTAssertEqual(bash("tokenvault", "get", ""), [])
        XCTAssertEqual(bash("tokenvault", "login", "w"), ["weibo"], "providers need no vault")
    }
}
