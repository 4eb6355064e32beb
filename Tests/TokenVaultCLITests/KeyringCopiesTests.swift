import Foundation
import TokenVaultKit
import XCTest

/// One credential is one item, however the Secret Service's collections
/// move (docs/config.md, "Backends"): a renewal written where the `default`
/// alias now points removes the copy the old collection held, and a read that
/// meets copies in two collections takes the newest and says so, so that a
/// rotating provider is never sent a refresh token already used. Against
/// gnome-keyring with a second collection (Tests/Fixtures/keyring_collections.py).
final class KeyringCopiesTests: QuirkProviderTestCase {
    func sandbox() throws -> Sandbox {
        let s = Sandbox(backend: "secret-service")
        s.env.merge(Self.keyring.env) { $1 }
        try s.writeConfig(
            """
            [providers.q]
            service = "api.copies.example"
            token_url = "http://127.0.0.1:\(Self.port)/rotate"
            client_id = "cid"

            [providers.m]
            service = "imap.beside.example"
            token_url = "http://127.0.0.1:\(Self.port)/rotate"
            client_id = "cid"
            """)
        return s
    }

    func collections(_ args: [String], stdin: String? = nil) -> String {
        let r = runProcess(
            "/usr/bin/python3", [Paths.fixtures.appendingPathComponent("keyring_collections.py").path] + args,
            stdin: stdin, env: Self.keyring.env.merging(["PATH": "/usr/bin:/bin"]) { $1 })
        XCTAssertEqual(r.status, 0, r.stderr)
        return r.out
    }

    /// The items that hold the credential, by their D-Bus paths.
    func items(_ service: String = "api.copies.example") -> [String] {
        collections(["items", service]).split(separator: "\n").map(String.init)
    }

    func testOneCredentialIsOneItemWhereverTheDefaultAliasPoints() throws {
        let s = try sandbox()
        let rotations = try stats()["/rotate"] ?? 0  // the class's provider serves other tests too
        s.expect("set", "q", "--provider", "q", stdin: #"{"access_token":"a","refresh_token":"r-old","expires_at":1}"#)
        let login = "/org/freedesktop/secrets/collection/login"
        XCTAssertEqual(items().map(Posix.dirname), [login])
        // A second collection becomes the default (a second KeePassXC database, a new keyring).
        let second = collections(["create", "Second \(UUID().uuidString.prefix(6))"], stdin: "second-pw")
        XCTAssertTrue(second.hasPrefix("/org/freedesktop/secrets/collection/"), second)
        addTeardownBlock { _ = self.collections(["alias", login]) }
        XCTAssertEqual(collections(["alias", second]), second)
        // The renewal is written where the alias points, and the old copy goes.
        let renewed = s.tv("get", "q")
        XCTAssertTrue(renewed.out.hasPrefix("rot-at-"), renewed.stderr)
        XCTAssertEqual(items().map(Posix.dirname), [second], "one item, in the default collection")
        let fresh = s.tv("get", "q", "--field", "refresh_token", "--no-refresh").out
        XCTAssertTrue(fresh.hasPrefix("rot-rt-"), fresh)
        // A stale copy of tokenvault's comes back beside it (restored from a backup): the newest is
        // read, and said.
        let stale = collections(
            [
                "add", login, "xdg:schema=io.tokenvault.Credential", "service=api.copies.example", "account=default",
                "type=oauth2",
            ], stdin: #"{"type":"oauth2","access_token":"stale","refresh_token":"r-old","provider":"q"}"#)
        XCTAssertTrue(stale.hasPrefix(login + "/"), stale)
        XCTAssertEqual(items().count, 2)
        let read = s.tv("get", "q", "--field", "refresh_token", "--no-refresh")
        XCTAssertEqual(read.out, fresh, "the newest copy, never the used refresh token")
        XCTAssertTrue(read.stderr.contains("2 copies of api.copies.example"), read.stderr)
        // The next write keeps only one.
        try s.expireStored("api.copies.example")
        XCTAssertTrue(s.tv("get", "q").out.hasPrefix("rot-at-"))
        XCTAssertEqual(items().map(Posix.dirname), [second])
        XCTAssertEqual(try stats()["/rotate"], rotations + 2, "r-old was never sent again")
    }

    /// Another application's items for the same service and account, in the
    /// default collection and in a second one, are read where tokenvault has
    /// none, and never changed or deleted by a write, a renewal or a delete
    /// (docs/security.md, "Other applications' secrets").
    func testAnotherApplicationsItemsAreNeverChangedOrDeleted() throws {
        let s = try sandbox()
        let login = "/org/freedesktop/secrets/collection/login"
        let second = collections(["create", "Mail \(UUID().uuidString.prefix(6))"], stdin: "mail-pw")
        let host = "imap.beside.example"
        // A mail client's password in each collection, and an item with tokenvault's attribute
        // names (type too) under another schema in the default one.
        let mine = [
            collections(
                ["add", login, "xdg:schema=org.example.MailClient", "service=\(host)", "account=default"],
                stdin: "mail-pw-login"),
            collections(
                ["add", second, "xdg:schema=org.example.MailClient", "service=\(host)", "account=default"],
                stdin: "mail-pw-second"),
            collections(
                ["add", login, "xdg:schema=org.example.Other", "service=\(host)", "account=default", "type=token"],
                stdin: "other-secret"),
        ]
        let secrets = ["mail-pw-login", "mail-pw-second", "other-secret"]
        func untouched(_ line: UInt = #line) {
            XCTAssertEqual(mine.map { collections(["secret", $0]) }, secrets, "changed", line: line)
        }
        // Read where tokenvault has none of its own.
        let before = s.tv("get", host)
        XCTAssertEqual(before.status, 0, before.stderr)
        XCTAssertTrue(secrets.contains(before.out), before.out)
        // A write creates tokenvault's own item beside them, and says so once.
        let set = s.tv("set", host, stdin: "tv-token-1\n")
        XCTAssertEqual(set.status, 0, set.stderr)
        XCTAssertEqual(
            set.stderr.components(separatedBy: "of another application for \(host)").count - 1, 1, set.stderr)
        untouched()
        XCTAssertEqual(items(host).count, 4)
        XCTAssertEqual(s.tv("get", host).out, "tv-token-1", "tokenvault's own item is read first")
        // Replaced, and renewed: its own item alone changes.
        s.expect("set", host, "--provider", "m", stdin: #"{"access_token":"a","refresh_token":"r1","expires_at":1}"#)
        XCTAssertTrue(s.tv("get", host).out.hasPrefix("rot-at-"))
        untouched()
        XCTAssertEqual(items(host).count, 4)
        // Deleted: its own item goes; theirs stay, and are read again.
        XCTAssertEqual(s.tv("delete", host).status, 0)
        untouched()
        XCTAssertEqual(Set(items(host)), Set(mine))
        let again = s.tv("delete", host)
        XCTAssertEqual(again.status, 3, again.stderr)
        XCTAssertTrue(again.stderr.contains("never deletes"), again.stderr)
        XCTAssertTrue(again.stderr.contains("secret-tool clear service \(host) account default"), again.stderr)
        untouched()
        XCTAssertTrue(secrets.contains(s.tv("get", host).out))
    }

    /// `doctor` names the provider, the collection a write would go to and
    /// its state.
    func testDoctorNamesTheCollectionItWouldUse() throws {
        let s = try sandbox()
        let ok = s.tv("doctor", "--color", "never")
        XCTAssertTrue(
            ok.stdout.contains("gnome-keyring-daemon, default collection unlocked (\u{201C}Login\u{201D}, "), ok.stdout)
        let second = collections(["create", "Work \(UUID().uuidString.prefix(6))"], stdin: "work-pw")
        addTeardownBlock { _ = self.collections(["alias", "/org/freedesktop/secrets/collection/login"]) }
        XCTAssertEqual(collections(["alias", second]), second)
        let moved = s.tv("doctor", "--color", "never")
        XCTAssertTrue(moved.stdout.contains("default collection unlocked (\u{201C}Work "), moved.stdout)
    }
}
