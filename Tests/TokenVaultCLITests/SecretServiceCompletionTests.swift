import Foundation
import XCTest

/// Completion from the Secret Service (a real gnome-keyring on a private
/// bus): services and accounts from item attributes, without a secret.
final class SecretServiceCompletionTests: XCTestCase {
    override class func tearDown() { try? FileManager.default.removeItem(atPath: ShellCompletionTests.zcompdump) }

    func testServicesAndAccountsFromTheKeyring() throws {
        let keyring = try PrivateKeyring()
        defer { keyring.stop() }
        let s = Sandbox(backend: "secret-service")
        s.env.merge(keyring.env) { $1 }
        XCTAssertEqual(s.tv("set", "api.github.com", stdin: "t\n").status, 0)
        XCTAssertEqual(s.tv("set", "api.github.com", "--account", "bot", stdin: "t\n").status, 0)
        s.env["PATH"] = (Paths.binary as NSString).deletingLastPathComponent + ":/usr/bin:/bin"
        s.env["TOKENVAULT_BACKEND"] = "auto"
        for shell in ShellCompletionTests.Shell.allCases {
            let services = ShellCompletionTests.complete(shell, ["tokenvault", "get", ""], env: s.env)
            XCTAssertEqual(services.stderr, "", "\(shell)")
            XCTAssertEqual(services.stdout.split(separator: "\n"), ["api.github.com"], "\(shell)")
            let accounts = ShellCompletionTests.complete(
                shell, ["tokenvault", "revoke", "api.github.com", "--account", ""], env: s.env)
            XCTAssertEqual(accounts.stdout.split(separator: "\n").sorted(), ["bot", "default"], "\(shell)")
        }
    }
}
