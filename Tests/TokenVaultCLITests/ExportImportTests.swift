import Foundation
import TokenVaultKit
import XCTest

/// `tokenvault export` and `import FILE` (docs/FORMAT.md, "An export"): a
/// vault moved to a fresh home on another backend gives the same `list`, and
/// every credential keeps working, its renewal included. Against the local
/// authlib provider and a private gnome-keyring.
final class ExportImportTests: XCTestCase {
    nonisolated(unsafe) static var provider: LocalProvider!
    nonisolated(unsafe) static var keyring: PrivateKeyring!

    override class func setUp() {
        provider = try! LocalProvider()
        keyring = try! PrivateKeyring()
    }

    override class func tearDown() {
        provider.stop()
        keyring.stop()
    }

    var provider: LocalProvider { Self.provider }

    /// A passphrase file for the export, only its owner's.
    func passphraseFile(_ s: Sandbox, _ text: String = "export passphrase") throws -> String {
        let path = s.home + "/export-pass-" + String(text.hashValue.magnitude)
        try (text + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }

    func testAnExportMovedToAnotherHomeAndBackendKeepsEveryCredentialWorking() throws {
        // The new machine holds an older token of one service already.
        let new = Sandbox(backend: "secret-service")
        new.env.merge(Self.keyring.env) { $1 }
        new.expect("set", "api.static.example", stdin: "older-static-token")
        // The old machine: the file vault, a renewable login and a static token.
        let old = Sandbox()
        try old.writeConfig(provider.config)
        _ = try provider.storeExpired(in: old)
        old.expect("set", "api.static.example", stdin: "static-token")
        let pass = try passphraseFile(old)
        let file = old.home + "/tokens.tvx"
        old.expect(
            "export", file, "--passphrase-file", pass, stderr: ["exported 2 credentials", "provider table local"])
        XCTAssertEqual(
            (try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions]) as? Int, 0o600)
        let sealed = try Data(contentsOf: URL(fileURLWithPath: file))
        XCTAssertNil(sealed.range(of: Data("static-token".utf8)), "nothing in the clear")
        XCTAssertNil(sealed.range(of: Data("api.static.example".utf8)))
        old.expect("export", file, "--passphrase-file", pass, status: 64, stderr: ["exists", "--force"])

        // The new machine: another home, the Secret Service, no config yet.
        let newPass = try passphraseFile(new)
        new.expect(
            "import", file, "--passphrase-file", newPass, "--dry-run",
            stderr: ["would import", "would add [providers.local]"])
        XCTAssertFalse(new.tv("list").stdout.contains("local"), "a dry run stores nothing")
        new.expect(
            "import", file, "--passphrase-file", newPass,
            stderr: [
                "imported", "kept api.static.example (default): one is stored (--force replaces it)",
                "added [providers.local]",
            ])
        XCTAssertEqual(new.tv("get", "api.static.example").out, "older-static-token")
        new.expect("import", file, "--passphrase-file", newPass, "--force", stderr: ["imported api.static.example"])
        // The same list, but for where each is stored.
        func rows(_ s: Sandbox) -> [String] {
            s.tv("list").stdout.split(separator: "\n").map { $0.split(separator: " ").prefix(2).joined(separator: " ") }
        }
        XCTAssertEqual(rows(new), rows(old))
        XCTAssertTrue(new.tv("list").stdout.contains("api.static.example"))
        XCTAssertEqual(new.tv("get", "api.static.example").out, "static-token")
        // The expired login renews at the provider from the imported refresh token.
        let before = try provider.stats()["refreshes"] ?? 0
        let renewed = new.tv("get", "local")
        XCTAssertEqual(renewed.status, 0, renewed.stderr)
        XCTAssertEqual(provider.resourceStatus(renewed.out), 200)
        XCTAssertGreaterThan(try provider.stats()["refreshes"] ?? 0, before)

        // Again: what is stored is kept, and the renewed record, newer than the export's, wins even over --force.
        new.expect(
            "import", file, "--passphrase-file", newPass, "--force",
            stderr: ["kept api.static.example (default): already stored", "a newer one is stored"])
        XCTAssertEqual(new.tv("get", "local").out, renewed.out, "the renewed record was kept")
    }

    func testBadExportsChangeNothing() throws {
        let s = Sandbox()
        s.expect("set", "api.x.example", stdin: "tok")
        let pass = try passphraseFile(s)
        let file = s.home + "/x.tvx"
        s.expect("export", file, "--passphrase-file", pass)
        let wrong = try passphraseFile(s, "another passphrase")
        let t = Sandbox()
        t.expect("import", file, "--passphrase-file", wrong, status: 77, stderr: ["wrong passphrase for the export"])
        let notOne = s.home + "/plain.txt"
        try "hello\n".write(toFile: notOne, atomically: true, encoding: .utf8)
        t.expect("import", notOne, "--passphrase-file", pass, status: 65, stderr: ["is not a tokenvault export"])
        var damaged = try Data(contentsOf: URL(fileURLWithPath: file))
        damaged[damaged.count - 1] ^= 0xFF
        let broken = s.home + "/broken.tvx"
        try damaged.write(to: URL(fileURLWithPath: broken))
        let r = t.tv("import", broken, "--passphrase-file", pass)
        XCTAssertEqual(r.status, 74, r.stderr)
        t.expect("import", s.home + "/none.tvx", "--passphrase-file", pass, status: 64, stderr: ["cannot read"])
        XCTAssertEqual(t.tv("list").stdout, "", "nothing was stored")
        XCTAssertFalse(FileManager.default.fileExists(atPath: t.vault))
    }
}
