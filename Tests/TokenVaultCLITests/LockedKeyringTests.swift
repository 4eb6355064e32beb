import Foundation
import XCTest

/// A real gnome-keyring whose login collection gets locked (docs/providers.md): the
/// keyring's own prompt, or a wait for someone to unlock it, and never the
/// file in its place.
final class LockedKeyringTests: XCTestCase {
    var keyring: PrivateKeyring!

    override func setUpWithError() throws { keyring = try PrivateKeyring() }
    override func tearDown() { keyring.stop() }

    func keyringTool(_ args: [String], stdin: String? = nil) -> Run {
        runProcess(
            "/usr/bin/python3", [Paths.fixtures.appendingPathComponent("unlock_keyring.py").path] + args,
            stdin: stdin, env: keyring.env.merging(["PATH": "/usr/bin:/bin"]) { $1 }, limit: 60)
    }

    func testALockedCollectionIsWaitedForOrRefusedAndNeverWorkedAround() throws {
        let s = Sandbox(backend: "auto")
        s.env.merge(keyring.env) { $1 }
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "kept-token").status, 0)
        XCTAssertEqual(keyringTool(["lock"]).out, "locked")

        // Without a desktop session nobody can answer a prompt: 77 at once, naming the collection.
        for args in [
            ["get", "api.example.com"], ["list"], ["delete", "api.example.com"], ["status", "api.example.com"],
        ] {
            let r = s.run(args)
            XCTAssertEqual(r.status, 77, "\(args): \(r.stderr)")
            XCTAssertTrue(
                r.stderr.hasPrefix("tokenvault: error: the Secret Service collection \u{201C}Login\u{201D} is locked"),
                r.stderr)
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 2, r.stderr)
        }
        // A new credential is not put in the file because the keyring is locked.
        let set = s.tv("set", "api.new.example", stdin: "new-token")
        XCTAssertEqual(set.status, 77, set.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.vault), "no file vault was created")
        // A short wait ends with the same refusal.
        let waited = s.tv("get", "api.example.com", env: ["TOKENVAULT_UNLOCK_TIMEOUT": "1"])
        XCTAssertEqual(waited.status, 77)
        XCTAssertTrue(waited.stderr.contains("it was not unlocked within 1 s"), waited.stderr)
        // Without a desktop the hint says how to unlock it from here.
        XCTAssertTrue(
            waited.stderr.contains("hint: unlock the keyring from this session: gnome-keyring-daemon --unlock"),
            waited.stderr)
        // On a terminal the wait is drawn, second by second, and cleared.
        let drawn = s.onTerminal(["get", "api.example.com"], env: ["TOKENVAULT_UNLOCK_TIMEOUT": "3"])
        XCTAssertTrue(
            drawn.stdout.contains("waiting for the keyring \u{201C}Login\u{201D} to be unlocked (2 s of at most 3 s)"),
            drawn.stdout)
        // On a desktop session the keyring's own prompt is asked for; here it cannot
        // be shown (no X server behind DISPLAY), so gnome-keyring reports it dismissed.
        let prompted = s.tv(
            "get", "api.example.com", env: ["DISPLAY": ":97", "TOKENVAULT_UNLOCK_TIMEOUT": "20"], limit: 60)
        XCTAssertEqual(prompted.status, 77, prompted.stderr)
        XCTAssertTrue(prompted.stderr.contains("its unlock prompt was dismissed"), prompted.stderr)

        // Unlocked while tokenvault waits: the command goes on.
        let unlocker = DispatchGroup()
        let env = keyring.env.merging(["PATH": "/usr/bin:/bin"]) { $1 }
        DispatchQueue.global().async(group: unlocker) {
            let r = runProcess(
                "/usr/bin/python3", [Paths.fixtures.appendingPathComponent("unlock_keyring.py").path, "unlock", "1"],
                stdin: "keyring-test-password", env: env, limit: 60)
            XCTAssertEqual(r.out, "unlocked", r.stderr)
        }
        let got = s.tv("get", "api.example.com", env: ["TOKENVAULT_UNLOCK_TIMEOUT": "30"], limit: 60)
        unlocker.wait()
        XCTAssertEqual(got.status, 0, got.stderr)
        XCTAssertEqual(got.out, "kept-token", "nothing was deleted")
        XCTAssertTrue(s.tv("status", "api.example.com").stdout.contains("stored in:   secret-service"))
        XCTAssertEqual(s.tv("get", "api.new.example").status, 3, "the refused set stored nothing anywhere")
    }

    /// A provider that is there but holds every call — as KeePassXC and
    /// KWallet do while their database waits to be unlocked or an access
    /// request waits for an answer; here gnome-keyring stopped (SIGSTOP) —
    /// is waited for up to the unlock timeout, then 77: never "not stored"
    /// (3), never a write to the file vault instead, on every command.
    func testAProviderThatHoldsTheCallIsNeitherNotStoredNorWorkedAround() throws {
        let s = Sandbox(backend: "auto")
        s.env.merge(keyring.env) { $1 }
        s.env["TOKENVAULT_DBUS_TIMEOUT"] = "1"
        s.env["TOKENVAULT_UNLOCK_TIMEOUT"] = "2"
        XCTAssertEqual(s.tv("set", "api.held.example", stdin: "kept-token").status, 0)
        let owner = runProcess(
            "/usr/bin/python3", [Paths.fixtures.appendingPathComponent("keyring_collections.py").path, "pid"],
            env: keyring.env.merging(["PATH": "/usr/bin:/bin"]) { $1 })
        let pid = try XCTUnwrap(Int32(owner.out), owner.stderr)
        XCTAssertEqual(kill(pid, SIGSTOP), 0)
        defer { kill(pid, SIGCONT) }
        for args in [["get", "api.held.example"], ["status", "api.held.example"], ["delete", "api.held.example"]] {
            let r = s.run(args)
            XCTAssertEqual(r.status, 77, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("the Secret Service holds the request"), "\(args): \(r.stderr)")
            XCTAssertFalse(r.stderr.contains("login"), "\(args): no login for what is stored: \(r.stderr)")
        }
        let set = s.tv("set", "api.new.example", stdin: "new-token")
        XCTAssertEqual(set.status, 77, set.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.vault), "nothing was written to the file vault")
        kill(pid, SIGCONT)
        XCTAssertEqual(s.tv("get", "api.held.example").out, "kept-token", "kept, once it answers")
    }
}
