import Foundation
import TokenVaultKit
import XCTest

/// KWallet's kwalletd5 as the Secret Service (docs/config.md, "KWallet"),
/// started by the tests as a Plasma login starts it: the wallet opened by
/// pam_kwallet5's pipe, closed, restarted, and with the `default` alias
/// moved to a second, closed wallet. Each state gives what gnome-keyring's
/// and KeePassXC's give (LockedKeyringTests, KeePassXCTests).
final class KWalletTests: XCTestCase {
    nonisolated(unsafe) static var wallet: PrivateKWallet!
    nonisolated(unsafe) static var server: Process!
    nonisolated(unsafe) static var port = 0

    override class func setUp() {
        (server, port) = try! startFixtureServer("quirk_provider.py")
        wallet = try! PrivateKWallet()
    }

    override class func tearDown() {
        wallet.shutdown()
        server.terminate()
        server.waitUntilExit()
    }

    var wallet: PrivateKWallet { Self.wallet }

    func sandbox() throws -> Sandbox {
        let s = Sandbox(backend: "auto", inProcess: false)
        s.env.merge(wallet.env) { $1 }
        // The default D-Bus timeout (3 s): one second was too short for a desktop provider's
        // answer while a release build shares the machine (a list came back without the item).
        try s.writeConfig(
            """
            [providers.q]
            service = "api.kw.example"
            token_url = "http://127.0.0.1:\(Self.port)/rotate"
            client_id = "cid"
            """)
        return s
    }

    /// A wallet opened at login reads as a locked collection until a client
    /// unlocks it, which asks nobody: every step works, and `doctor` says
    /// unlocked (it said "locked — fix: seahorse").
    func testAWalletOpenedAtLoginServesEveryStep() throws {
        try wallet.start()
        let s = try sandbox()
        let doctor = s.tv("doctor", "--color", "never")
        XCTAssertTrue(
            doctor.stdout.contains("secret service: kwalletd5, default collection unlocked (\u{201C}kdewallet\u{201D}"),
            doctor.stdout + doctor.stderr)
        try wallet.start()
        s.expect("set", "q", "--provider", "q", stdin: #"{"access_token":"a","refresh_token":"r-kw","expires_at":1}"#)
        let read = s.tv("get", "q", "--field", "refresh_token", "--no-refresh")
        XCTAssertEqual(read.out, "r-kw", read.stderr)
        let status = s.tv("status", "q")
        XCTAssertTrue(status.stdout.contains("stored in:   secret-service"), status.stdout + status.stderr)
        let list = s.tv("list")
        XCTAssertTrue(list.stdout.contains("api.kw.example"), list.stdout + list.stderr)
        // Refreshed on read, the rotated refresh token kept, in one item.
        let renewed = s.tv("get", "q")
        XCTAssertTrue(renewed.out.hasPrefix("rot-at-"), renewed.stderr)
        XCTAssertEqual(items("api.kw.example", on: wallet).count, 1)
        // secret-tool has no second try when its session with kwalletd5 fails (docs/config.md,
        // "KWallet": about one in 128): it prints nothing then, and is asked again.
        var tool = Run(status: 1, stdout: "", stderr: "")
        for _ in 0..<3 where tool.out.isEmpty {
            tool = runProcess(
                "/usr/bin/secret-tool", ["lookup", "service", "api.kw.example", "account", "default"],
                env: wallet.env.merging(["PATH": "/usr/bin:/bin"]) { $1 })
        }
        XCTAssertTrue(tool.out.contains("\"rot-rt-"), "the same record for other clients: \(tool.out) \(tool.stderr)")
        s.expect("delete", "q")
        XCTAssertEqual(s.tv("get", "q").status, 3)
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.vault), "the file vault was never used")
    }

    /// About one session in 128 with kwalletd5 fails: it refuses libsecret's
    /// public key, or sends secrets under a key it derived otherwise, which
    /// libsecret takes for no secret. Each `get`, `list` and `set` here opens
    /// a session of its own, so among 256 of them some meet it (in all but
    /// about one run in seven): every one reads or writes the credential,
    /// none says "not stored" or lists nothing (docs/config.md, "KWallet").
    func testEveryFreshSessionReadsTheCredential() throws {
        try wallet.start()
        let s = try sandbox()
        s.expect("set", "api.kw.example", stdin: "kept-token")
        let wrong = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { lane in
            for n in 0..<64 {
                let (what, r): (String, Run) =
                    switch n % 8 {
                    case 3, 7: ("list", s.tv("list"))
                    case 5: ("set", s.tv("set", "api.kw.example", stdin: "kept-token"))
                    default: ("get", s.tv("get", "api.kw.example"))
                    }
                let good =
                    what == "list"
                    ? r.stdout.contains("api.kw.example") : r.status == 0 && (what == "set" || r.out == "kept-token")
                if !good { wrong.withLock { $0.append("\(what): \(r.status) \(r.stderr)") } }
            }
        }
        XCTAssertEqual(wrong.withLock { $0 }, [])
    }

    /// A renewal is in kwalletd5 before its token is printed, through the
    /// agent as directly: another client reading right after the answer
    /// gets the renewed record (docs/design.md, "The write path").
    func testARenewalIsInTheWalletBeforeItsTokenIsPrinted() throws {
        try wallet.start()
        let s = try sandbox()
        s.expect("set", "q", "--provider", "q", stdin: #"{"access_token":"a","refresh_token":"r-kw","expires_at":1}"#)
        s.expect("agent")
        defer { s.expect("agent", "stop") }
        for round in 1...5 {
            if round > 1 { _ = try s.expireStored("api.kw.example") }
            let renewed = s.tv("get", "q")
            XCTAssertTrue(renewed.out.hasPrefix("rot-at-"), "round \(round): \(renewed.stderr)")
            let other = s.tv("get", "q", "--no-refresh", env: ["TOKENVAULT_AGENT": "off"])
            XCTAssertEqual(other.out, renewed.out, "round \(round): another client reads \(other.stderr)")
        }
        XCTAssertEqual(items("api.kw.example", on: wallet).count, 1)
    }

    /// kwalletd5 stopped: 69 on every command and through the agent, as
    /// KeePassXC quit gives; never "not stored", never the file vault.
    func testKwalletdStoppedIs69OnEveryCommand() throws {
        try wallet.start()
        let s = try sandbox()
        s.expect("set", "api.kw.example", stdin: "kept-token")
        wallet.stop()
        defer { try? wallet.start() }
        func check(_ r: Run, _ what: String) {
            XCTAssertEqual(r.status, 69, "\(what): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("hint: start the program that keeps your credentials"), r.stderr)
            XCTAssertFalse(r.stderr.contains("no credential stored"), r.stderr)
        }
        for args in [["get", "api.kw.example"], ["status", "api.kw.example"], ["list"]] {
            check(s.run(args), args.joined(separator: " "))
        }
        check(s.tv("set", "api.new.example", stdin: "new-token"), "set")
        s.expect("agent")
        defer { s.expect("agent", "stop") }
        check(s.tv("get", "api.kw.example"), "get through the agent")
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.vault), "nothing went to the file vault")
    }

    /// The very first login creates the wallet, and kwalletd5 names no
    /// `default` collection until it starts again: `doctor` says so, and a
    /// write is refused, never sent to the file vault.
    func testTheFirstLoginsWalletIsNamedByDoctor() throws {
        let first = try PrivateKWallet()
        defer { first.shutdown() }
        try first.start(firstLogin: true)
        let s = try sandbox()
        s.env.merge(first.env) { $1 }
        let doctor = s.tv("doctor", "--color", "never")
        XCTAssertNotEqual(doctor.status, 0)
        XCTAssertTrue(
            doctor.stdout.contains("secret service: kwalletd5 answers, but no collection is its default one"),
            doctor.stdout)
        XCTAssertTrue(doctor.stdout.contains("fix: start kwalletd5 again"), doctor.stdout)
        let set = s.tv("set", "api.kw.example", stdin: "new-token", env: PrivateProvider.held)
        XCTAssertEqual(set.status, 77, set.stderr)
        XCTAssertTrue(
            set.stderr.hasPrefix("tokenvault: error: the Secret Service (kwalletd5) has no default collection"),
            set.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.vault), "nothing went to the file vault")
        try first.start()
        let named = s.tv("doctor", "--color", "never")
        XCTAssertTrue(named.stdout.contains("default collection unlocked"), named.stdout)
    }

    /// A closed wallet asks for its password before any access: 77 naming
    /// it, never "not stored", never the file vault.
    func testAClosedWalletIsRefusedNamingItAndNeverWorkedAround() throws {
        try wallet.start()
        let s = try sandbox()
        s.expect("set", "api.kw.example", stdin: "kept-token")
        try wallet.close()
        for args in [
            ["get", "api.kw.example"], ["status", "api.kw.example"], ["delete", "api.kw.example"], ["list"],
        ] {
            let r = s.run(args, env: PrivateProvider.held)
            XCTAssertEqual(r.status, 77, "\(args): \(r.stderr)")
            XCTAssertTrue(
                r.stderr.hasPrefix(
                    "tokenvault: error: the Secret Service collection \u{201C}kdewallet\u{201D} is locked"),
                "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("hint: open the wallet in KWallet"), "\(args): \(r.stderr)")
        }
        XCTAssertEqual(s.tv("set", "api.new.example", stdin: "new-token", env: PrivateProvider.held).status, 77)
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.vault), "nothing went to the file vault")
        let doctor = s.tv("doctor", "--color", "never")
        XCTAssertTrue(doctor.stdout.contains("default collection locked (\u{201C}kdewallet\u{201D}"), doctor.stdout)
        XCTAssertTrue(doctor.stdout.contains("fix: open the wallet in KWallet"), doctor.stdout)
        try wallet.start()
        XCTAssertEqual(s.tv("get", "api.kw.example").out, "kept-token", "kept")
    }

    /// The agent follows kwalletd5 started again; the `default` alias moved
    /// to a closed wallet makes a write wait for it (77 naming it), while
    /// what the open wallet holds is still read.
    func testTheAgentFollowsARestartAndAMovedAliasIsNamed() throws {
        try wallet.start()
        let s = try sandbox()
        s.expect("set", "api.kw.example", stdin: "kept-token")
        s.expect("agent")
        defer { s.expect("agent", "stop") }
        let listed = s.tv("list")
        XCTAssertTrue(listed.stdout.contains("api.kw.example"), listed.stdout + listed.stderr)
        let before = try agentRequests(s)
        try wallet.addWallet("work")
        try wallet.start()
        let got = s.tv("get", "api.kw.example")
        XCTAssertEqual(got.status, 0, got.stderr)
        XCTAssertEqual(got.out, "kept-token")
        XCTAssertEqual(try agentRequests(s), before + 2, "the agent answered it (and the status asked after it)")

        let moved = runProcess(
            "/usr/bin/python3",
            [
                Paths.fixtures.appendingPathComponent("keyring_collections.py").path, "alias",
                "/org/freedesktop/secrets/collection/work",
            ], env: wallet.env.merging(["PATH": "/usr/bin:/bin"]) { $1 })
        XCTAssertEqual(moved.out, "/org/freedesktop/secrets/collection/work", moved.stderr)
        XCTAssertEqual(s.tv("get", "api.kw.example").out, "kept-token")
        let set = s.tv(
            "set", "api.kw.example", stdin: "new-token",
            env: PrivateProvider.held.merging(["TOKENVAULT_AGENT": "off"]) { $1 })
        XCTAssertEqual(set.status, 77, set.stderr)
        XCTAssertTrue(set.stderr.contains("collection \u{201C}work\u{201D} is locked"), set.stderr)
        XCTAssertEqual(s.tv("get", "api.kw.example").out, "kept-token", "nothing was changed")
    }
}
