import Foundation
import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// The bridge's token on a test clock (docs/adapters.md, "MCP servers"):
/// kept in memory while `CredentialStatus` says it is valid (the renewal
/// margin every command uses), the vault read again once it is within the
/// margin, and the token always sent with the scheme of the credential it
/// came from.
final class BridgeCredentialTests: XCTestCase {
    var dir = ""
    let url = "https://mcp.example.com/mcp"

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "tv-bridge-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(
            atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    var settings: Settings {
        Settings(environment: [
            "HOME": dir, "XDG_RUNTIME_DIR": dir, "TOKENVAULT_BACKEND": "file", "TOKENVAULT_VAULT": dir + "/vault",
            "TOKENVAULT_PASSPHRASE": "p", "TOKENVAULT_KEY_TTL": "0", "TOKENVAULT_AGENT": "off",
            "TOKENVAULT_CONFIG": dir + "/config.toml",
        ])
    }

    /// Stores `token` for the server, expiring at `expiresAt` (a vault of the cheapest key derivation).
    func store(_ token: String, expiresAt: Int64) throws {
        let vault = FileStore(
            path: dir + "/vault", passphrase: PassphraseSource(settings: settings, terminalPath: nil),
            keyCache: NoKeyCache(), keyTTL: 0, newVaultParams: .minimum)
        try vault.save(
            Credential(
                service: try ServiceKey(resource: url), type: .oauth2, accessToken: token, refreshToken: "r",
                expiresAt: expiresAt, updatedAt: 1))
    }

    func testTheTokenIsKeptWhileValidAndReadAgainWithinTheMargin() throws {
        let clock = TestClock(10_000)
        var s = settings
        s.clock = clock
        try store("first", expiresAt: 13_600)
        let said = NoticeBuffer()
        let bridge = BridgeCredential(
            session: Session(settings: s, notices: said.notices), account: "default", url: url, say: { _ in })
        XCTAssertEqual(try bridge.token().value, "first")
        XCTAssertEqual(try bridge.token().header, "Authorization: Bearer first")
        // Another process stored a newer one meanwhile: the kept token is still valid, and sent.
        try store("second", expiresAt: 17_200)
        clock.now = 13_539
        XCTAssertEqual(try bridge.token().value, "first", "61 s left: beyond the 60 s margin, kept")
        clock.now = 13_541
        XCTAssertEqual(try bridge.token().value, "second", "59 s left: within the margin, the vault is read again")
        XCTAssertEqual(said.text, "")
    }
}
