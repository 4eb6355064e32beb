import XCTest

@testable import TokenVaultKit

/// A `~/` in a `*_file` setting stands for the home of the settings the
/// config is loaded with (the caller's, not the process's: the agent loads
/// it for its client).
final class ConfigHomeTests: XCTestCase {
    func testFileSettingsAreExpandedWithTheCallersHome() throws {
        var c = try Config.parse(
            """
            [providers.p]
            token_url = "https://p.example/token"
            client_id = "x"
            client_secret_file = "~/.config/p.secret"
            private_key_file = "/abs/key.pem"
            [etcd]
            endpoints = ["https://127.0.0.1:2379"]
            ca_file = "~/ca.pem"
            password_file = "~/pw"
            """)
        c.expandHome(Settings(environment: ["HOME": "/home/client"]))
        XCTAssertEqual(c.providers["p"]?.client_secret_file, "/home/client/.config/p.secret")
        XCTAssertEqual(c.providers["p"]?.private_key_file, "/abs/key.pem")
        XCTAssertEqual(c.etcd?.ca_file, "/home/client/ca.pem")
        XCTAssertEqual(c.etcd?.password_file, "/home/client/pw")
        XCTAssertEqual(Settings(environment: ["HOME": "/h"]).expandingHome("~/x"), "/h/x")
        XCTAssertEqual(Settings(environment: ["HOME": "/h"]).expandingHome("~x"), "~x")
    }
}
