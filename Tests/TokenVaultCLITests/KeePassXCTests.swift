import Foundation
import TokenVaultKit
import XCTest

/// Debian's KeePassXC as the Secret Service (docs/config.md, "KeePassXC"),
/// started by the tests as a user runs it: open, locked, asking to confirm
/// each access, restarted, and with a second database that takes the
/// `default` alias. Each state gives what gnome-keyring's gives
/// (LockedKeyringTests, KeyringCopiesTests): the same exit codes, the same
/// kind of message, never "not stored", never the file vault instead.
final class KeePassXCTests: XCTestCase {
    nonisolated(unsafe) static var keepass: PrivateKeePassXC!
    nonisolated(unsafe) static var server: Process!
    nonisolated(unsafe) static var port = 0

    override class func setUp() {
        (server, port) = try! startFixtureServer("quirk_provider.py")
        keepass = try! PrivateKeePassXC()
    }

    override class func tearDown() {
        keepass.shutdown()
        server.terminate()
        server.waitUntilExit()
    }

    var keepass: PrivateKeePassXC { Self.keepass }

    func sandbox() throws -> Sandbox {
        let s = Sandbox(backend: "auto", inProcess: false)
        s.env.merge(keepass.env) { $1 }
        // The default D-Bus timeout (3 s): one second was too short for a desktop provider's
        // answer while a release build shares the machine (a list came back without the item).
        try s.writeConfig(
            """
            [providers.q]
            service = "api.kx.example"
            token_url = "http://127.0.0.1:\(Self.port)/rotate"
            client_id = "cid"
            """)
        return s
    }

    func testTheEverydayStepsWorkAndAnOverwriteAfterARestartAsksNobody() throws {
        try keepass.start(["Passwords"])
        let s = try sandbox()
        s.expect("set", "api.kx.example", stdin: "first-token")
        XCTAssertEqual(s.tv("get", "api.kx.example").out, "first-token")
        XCTAssertTrue(s.tv("status", "api.kx.example").stdout.contains("stored in:   secret-service"))
        XCTAssertTrue(s.tv("list").stdout.contains("api.kx.example"))
        // The same record as other Secret Service clients see it.
        let tool = runProcess(
            "/usr/bin/secret-tool", ["lookup", "service", "api.kx.example", "account", "default"],
            env: keepass.env.merging(["PATH": "/usr/bin:/bin"]) { $1 })
        XCTAssertTrue(tool.out.contains("\"first-token\""), tool.stderr)
        let doctor = s.tv("doctor", "--color", "never")
        XCTAssertTrue(
            doctor.stdout.contains("secret service: keepassxc, default collection unlocked (\u{201C}Passwords\u{201D}"),
            doctor.stdout)
        // KeePassXC 2.7 asks its user before CreateItem may replace an item a
        // client of an earlier run stored; the new secret is set on the item instead.
        try keepass.start(["Passwords"])
        let second = s.tv("set", "api.kx.example", stdin: "second-token")
        XCTAssertEqual(second.status, 0, second.stderr)
        XCTAssertEqual(s.tv("get", "api.kx.example").out, "second-token")
        XCTAssertEqual(items("api.kx.example", on: keepass).count, 1, "one item")
        XCTAssertEqual(s.tv("delete", "api.kx.example").status, 0)
        XCTAssertEqual(s.tv("get", "api.kx.example").status, 3)
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.vault), "the file vault was never used")
    }

    /// A locked database holds every search until its user unlocks it: 77
    /// naming the collection, as a locked gnome-keyring gives.
    func testALockedDatabaseIsRefusedNamingItAndNeverWorkedAround() throws {
        try keepass.start(["Passwords"])
        let s = try sandbox()
        s.expect("set", "api.kx.example", stdin: "kept-token")
        try keepass.lock()
        for args in [
            ["get", "api.kx.example"], ["status", "api.kx.example"], ["delete", "api.kx.example"], ["list"],
        ] {
            let r = s.run(args, env: PrivateProvider.held)
            XCTAssertEqual(r.status, 77, "\(args): \(r.stderr)")
            XCTAssertTrue(
                r.stderr.hasPrefix(
                    "tokenvault: error: the Secret Service collection \u{201C}Passwords\u{201D} is locked"),
                "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("hint: unlock the database in KeePassXC"), "\(args): \(r.stderr)")
            XCTAssertFalse(r.stderr.contains("login"), "\(args): \(r.stderr)")
        }
        let set = s.tv("set", "api.new.example", stdin: "new-token", env: PrivateProvider.held)
        XCTAssertEqual(set.status, 77, set.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.vault), "nothing went to the file vault")
        // Waited for up to the unlock timeout, saying so.
        let waited = s.tv(
            "get", "api.kx.example", env: PrivateProvider.held.merging(["TOKENVAULT_UNLOCK_TIMEOUT": "2"]) { $1 })
        XCTAssertEqual(waited.status, 77, waited.stderr)
        XCTAssertTrue(
            waited.stderr.contains(
                "waiting for the Secret Service collection \u{201C}Passwords\u{201D} to be unlocked in its application"),
            waited.stderr)
        XCTAssertTrue(waited.stderr.contains("it was not unlocked within 2 s"), waited.stderr)
        let doctor = s.tv("doctor", "--color", "never")
        XCTAssertTrue(
            doctor.stdout.contains("keepassxc, default collection locked (\u{201C}Passwords\u{201D}"), doctor.stdout)
        XCTAssertTrue(doctor.stdout.contains("fix: unlock the database in KeePassXC"), doctor.stdout)
        // Opened again, everything is as it was.
        try keepass.start(["Passwords"])
        XCTAssertEqual(s.tv("get", "api.kx.example").out, "kept-token")
        XCTAssertEqual(s.tv("get", "api.new.example").status, 3, "the refused set stored nothing anywhere")
    }

    /// KeePassXC quit (the name has no owner on the bus): its own error, 69,
    /// on every command and through the agent; never "not stored", never the
    /// file vault. Started again, everything is as it was.
    func testAProviderThatQuitIs69OnEveryCommandAndNeverTheFileVault() throws {
        try keepass.start(["Passwords"])
        let s = try sandbox()
        s.expect("set", "api.kx.example", stdin: "kept-token")
        keepass.stop()
        func check(_ r: Run, _ what: String) {
            XCTAssertEqual(r.status, 69, "\(what): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("no Secret Service (org.freedesktop.secrets) on the session bus"), r.stderr)
            XCTAssertTrue(r.stderr.contains("hint: start the program that keeps your credentials"), r.stderr)
            XCTAssertTrue(r.stderr.contains("KeePassXC"), "the providers installed here are named: \(r.stderr)")
            XCTAssertFalse(r.stderr.contains("no credential stored"), r.stderr)
        }
        for args in [
            ["get", "api.kx.example"], ["status", "api.kx.example"], ["delete", "api.kx.example"], ["list"],
        ] {
            check(s.run(args), args.joined(separator: " "))
        }
        check(s.tv("set", "api.new.example", stdin: "new-token"), "set")
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.vault), "nothing went to the file vault")
        // A login says so before any browser opens.
        try s.writeConfig(
            """
            [providers.web]
            service = "api.web.example"
            authorize_url = "http://127.0.0.1:\(Self.port)/authorize"
            token_url = "http://127.0.0.1:\(Self.port)/rotate"
            client_id = "cid"
            """)
        let opened = s.home + "/browser-opened"
        let login = s.tv("login", "web", env: ["BROWSER": "/usr/bin/touch \(opened)", "DISPLAY": ":0"], limit: 30)
        check(login, "login")
        XCTAssertFalse(FileManager.default.fileExists(atPath: opened), "no browser was opened")
        // doctor: nothing can store a credential here, and it says why.
        let doctor = s.tv("doctor", "--color", "never")
        XCTAssertEqual(doctor.status, 2, doctor.stdout)
        XCTAssertTrue(doctor.stdout.contains("✗ secret service: no Secret Service"), doctor.stdout)
        XCTAssertTrue(doctor.stdout.contains("the keyring quit, or was never started"), doctor.stdout)
        s.expect("agent")
        defer { s.expect("agent", "stop") }
        check(s.tv("get", "api.kx.example"), "get through the agent")
        try keepass.start(["Passwords"])
        XCTAssertEqual(s.tv("get", "api.kx.example").out, "kept-token")
    }

    /// A database that exposes no group is no collection: KeePassXC holds
    /// every call while it asks its user to create one. 77 naming its own
    /// fix, on a write and a read alike; never the file vault, never "not stored".
    func testNoExposedGroupIs77NamingTheFixNeverTheFileVault() throws {
        try keepass.start(["Bare"])
        let s = try sandbox()
        for args in [["set", "api.kx.example"], ["get", "api.kx.example"]] {
            let r = s.run(args, stdin: "tok", env: PrivateProvider.held)
            XCTAssertEqual(r.status, 77, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("has no default collection"), r.stderr)
            XCTAssertTrue(r.stderr.contains("Database Settings: Secret Service Integration"), r.stderr)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.vault), "nothing went to the file vault")
    }

    /// With "confirm when passwords are retrieved by clients" on, a read waits
    /// for its user's answer: 77 saying so, never "not stored".
    func testAnUnansweredAccessRequestIsRefusedAndNeverReadsAsNotStored() throws {
        try keepass.start(["Passwords"])
        let s = try sandbox()
        s.expect("set", "api.kx.example", stdin: "kept-token")
        try keepass.start(["Passwords"], confirm: true)
        for args in [["get", "api.kx.example"], ["status", "api.kx.example"]] {
            let r = s.run(args, env: PrivateProvider.held)
            XCTAssertEqual(r.status, 77, "\(args): \(r.stderr)")
            XCTAssertTrue(
                r.stderr.contains("its access request for collection \u{201C}Passwords\u{201D} was not answered"),
                "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("allow tokenvault in KeePassXC's access request"), r.stderr)
        }
        try keepass.start(["Passwords"])
        XCTAssertEqual(s.tv("get", "api.kx.example").out, "kept-token")
    }

    /// The agent keeps libsecret's connection; KeePassXC started again is a
    /// new owner of the name, followed at the next request.
    func testTheAgentFollowsKeePassXCStartedAgain() throws {
        try keepass.start(["Passwords"])
        let s = try sandbox()
        s.expect("set", "api.kx.example", stdin: "kept-token")
        s.expect("agent")
        defer { s.expect("agent", "stop") }
        XCTAssertTrue(s.tv("list").stdout.contains("api.kx.example"))
        let before = try agentRequests(s)
        try keepass.start(["Passwords"])
        let got = s.tv("get", "api.kx.example")
        XCTAssertEqual(got.status, 0, got.stderr)
        XCTAssertEqual(got.out, "kept-token")
        XCTAssertEqual(try agentRequests(s), before + 2, "the agent answered it (and the status asked after it)")
    }

    /// A second database opened after the first takes the `default` alias:
    /// the renewal is written there, the first database's copy goes, and the
    /// used refresh token is never sent again.
    func testASecondDatabaseLeavesOneItemAfterARenewal() throws {
        try keepass.start(["Passwords"])
        let s = try sandbox()
        s.expect("set", "q", "--provider", "q", stdin: #"{"access_token":"a","refresh_token":"r-kx","expires_at":1}"#)
        XCTAssertEqual(
            items("api.kx.example", on: keepass).map(Posix.dirname), ["/org/freedesktop/secrets/collection/Passwords"])
        try keepass.start(["Passwords", "Work"])
        let renewed = s.tv("get", "q")
        XCTAssertTrue(renewed.out.hasPrefix("rot-at-"), renewed.stderr)
        XCTAssertEqual(
            items("api.kx.example", on: keepass).map(Posix.dirname), ["/org/freedesktop/secrets/collection/Work"],
            "one item, in the database the default alias names")
        try s.expireStored("api.kx.example")
        let again = s.tv("get", "q")
        XCTAssertTrue(again.out.hasPrefix("rot-at-"), again.stderr)
        XCTAssertEqual(items("api.kx.example", on: keepass).count, 1)
    }
}
