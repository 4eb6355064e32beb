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
    func items() -> [String] {
        collections(["items", "api.copies.example"]).split(separator: "\n").map(String.init)
    }

    func testOneCredentialIsOneItemWhereverTheDefaultAliasPoints() throws {
        let s = try sandbox()
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
        // A stale copy comes back beside it (restored by another tool): the newest is read, and said.
        let stale = runProcess(
            "/usr/bin/secret-tool",
            [
                "store", "--label=stale", "--collection=\(login)", "service", "api.copies.example", "account",
                "default", "type", "oauth2",
            ], stdin: #"{"type":"oauth2","access_token":"stale","refresh_token":"r-old","provider":"q"}"#,
            env: Self.keyring.env.merging(["PATH": "/usr/bin:/bin"]) { $1 })
        XCTAssertEqual(stale.status, 0, stale.stderr)
        XCTAssertEqual(items().count, 2)
        let read = s.tv("get", "q", "--field", "refresh_token", "--no-refresh")
        XCTAssertEqual(read.out, fresh, "the newest copy, never the used refresh token")
        XCTAssertTrue(read.stderr.contains("2 copies of api.copies.example"), read.stderr)
        // The next write keeps only one.
        try s.expireStored("api.copies.example")
        XCTAssertTrue(s.tv("get", "q").out.hasPrefix("rot-at-"))
        XCTAssertEqual(items().map(Posix.dirname), [second])
        XCTAssertEqual(try stats()["/rotate"], 2, "r-old was never sent again")
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
