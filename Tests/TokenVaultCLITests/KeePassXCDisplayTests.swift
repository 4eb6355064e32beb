import Foundation
import TokenVaultKit
import XCTest

/// KeePassXC as desktops run it (docs/config.md, "KeePassXC"): on an X
/// display (Xvfb) with Qt's xcb platform, where a search in a locked
/// database shows its Unlock dialog and holds the D-Bus call until the user
/// answers. Every wait ends in the provider's answer or in 77 naming the
/// database, bounded by the unlock timeout (not by D-Bus's own 25 s):
/// never "not stored", never the file vault, never a GLib critical.
final class KeePassXCDisplayTests: XCTestCase {
    nonisolated(unsafe) static var keepass: PrivateKeePassXC!

    override class func setUp() { keepass = try! PrivateKeePassXC(onDisplay: true) }
    override class func tearDown() { keepass.shutdown() }

    var keepass: PrivateKeePassXC { Self.keepass }
    var display: VirtualDisplay { keepass.display! }

    /// A desktop user's shell: the provider's bus and display.
    func sandbox() throws -> Sandbox {
        let s = Sandbox(backend: "auto", inProcess: false)
        s.env.merge(keepass.env) { $1 }
        s.env["DISPLAY"] = display.name
        return s
    }

    /// Started with the database open, a credential stored, then locked.
    func lockedWithACredential() throws -> Sandbox {
        try keepass.start(["Passwords"])
        let s = try sandbox()
        s.expect("set", "api.kx.example", stdin: "kept-token")
        try keepass.lock()
        return s
    }

    func assertClean(_ r: Run, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(r.stderr.contains("CRITICAL"), "\(what): \(r.stderr)", file: file, line: line)
        XCTAssertFalse(r.stderr.contains("no credential stored"), "\(what): \(r.stderr)", file: file, line: line)
        XCTAssertFalse(r.stderr.contains("not checked"), "\(what): \(r.stderr)", file: file, line: line)
    }

    /// The dialog answered after D-Bus itself stopped waiting for the call
    /// (25 s, GDBus's own default, which nothing can shorten: the reason this
    /// test takes half a minute): the credential, as if unlocked at once.
    func testTheUnlockDialogAnsweredLateGivesTheCredential() throws {
        let s = try lockedWithACredential()
        let started = Date()
        let result = Locked<Run?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            result.withLock { $0 = s.tv("get", "api.kx.example", env: ["TOKENVAULT_UNLOCK_TIMEOUT": "45"]) }
            done.signal()
        }
        let dialog = try XCTUnwrap(display.window("Unlock Database"), "KeePassXC showed its Unlock dialog")
        XCTAssertTrue(eventually(40) { Date().timeIntervalSince(started) > 27 })
        display.type(PrivateKeePassXC.passwords["Passwords"]!, into: dialog)
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        let r = try XCTUnwrap(result.withLock { $0 })
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.out, "kept-token")
        XCTAssertEqual(r.stderr.components(separatedBy: "waiting for the Secret Service collection").count, 2, r.stderr)
        assertClean(r, "get")
    }

    /// Nobody answers: 77 on every command, directly and through the agent,
    /// within the unlock timeout; a write goes nowhere; the dialog
    /// cancelled (Escape) is 77 too; unlocked, everything is as it was.
    func testAnUnansweredDialogIs77OnEveryCommandAndNothingGoesElsewhere() throws {
        let s = try lockedWithACredential()
        let wait = PrivateProvider.held.merging(["TOKENVAULT_UNLOCK_TIMEOUT": "2"]) { $1 }
        for args in [
            ["get", "api.kx.example"], ["status", "api.kx.example"], ["delete", "api.kx.example"], ["list"],
        ] {
            let r = s.run(args, env: wait)
            XCTAssertEqual(r.status, 77, "\(args): \(r.stderr)")
            XCTAssertTrue(
                r.stderr.contains("the Secret Service collection \u{201C}Passwords\u{201D} is locked"),
                "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("hint: unlock the database in KeePassXC"), "\(args): \(r.stderr)")
            assertClean(r, args.joined(separator: " "))
        }
        let set = s.tv("set", "api.new.example", stdin: "new-token", env: wait)
        XCTAssertEqual(set.status, 77, set.stderr)
        assertClean(set, "set")
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.vault), "nothing went to the file vault")
        // doctor on a pipe: a line before the wait, and the failure named.
        let doctor = s.tv("doctor", "--color", "never", env: wait)
        XCTAssertEqual(doctor.status, 2, doctor.stdout)
        XCTAssertTrue(doctor.stderr.hasPrefix("tokenvault: waiting for "), doctor.stderr)
        XCTAssertTrue(doctor.stdout.contains("default collection locked"), doctor.stdout)
        // Through the agent: the same answer.
        s.expect("agent")
        defer { s.expect("agent", "stop") }
        let agent = s.tv("get", "api.kx.example", env: wait)
        XCTAssertEqual(agent.status, 77, agent.stderr)
        XCTAssertTrue(agent.stderr.contains("hint: unlock the database in KeePassXC"), agent.stderr)
        assertClean(agent, "get through the agent")
        // The dialog cancelled: still locked, still 77.
        if let dialog = display.window("Unlock Database", within: 5) { display.escape(dialog) }
        let cancelled = s.tv("get", "api.kx.example", env: wait)
        XCTAssertEqual(cancelled.status, 77, cancelled.stderr)
        assertClean(cancelled, "get after Escape")
        try keepass.start(["Passwords"])
        XCTAssertEqual(s.tv("get", "api.kx.example").out, "kept-token")
        XCTAssertEqual(s.tv("get", "api.new.example").status, 3, "the refused set stored nothing anywhere")
    }
}
