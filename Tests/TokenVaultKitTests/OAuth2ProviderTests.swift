import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

final class OAuth2ProviderTests: XCTestCase {
    func resolve(_ name: String, _ toml: String) throws -> OAuth2Provider {
        try OAuth2Provider.resolve(name, config: try Config.parse(toml), configPath: "config.toml")
    }

    func exit(_ name: String, _ toml: String) -> Int32? {
        do {
            _ = try resolve(name, toml)
            return 0
        } catch { return (error as? TokenVaultError)?.exitCode }
    }

    func testPresetsAreExtendedByConfig() throws {
        let p = try resolve(
            "google", "[providers.google]\nclient_id = \"cid\"\nclient_secret = \"s\"\nscopes = [\"email\"]\n")
        XCTAssertEqual(p.tokenURL, "https://oauth2.googleapis.com/token")
        XCTAssertEqual(p.service.description, "www.googleapis.com")
        XCTAssertEqual(p.authParams["access_type"], "offline")
        XCTAssertEqual(p.scopes, ["email"])
        let local = try resolve(
            "local",
            """
            [providers.local]
            token_url = "http://127.0.0.1:9000/o/token/"
            client_id = "x"
            client_auth = "basic"
            client_secret_command = "printf 'se cret'"
            """)
        XCTAssertEqual(local.service.description, "127.0.0.1:9000", "service defaults to the token_url's host")
        XCTAssertEqual(
            try local.clientCredentials().headers,
            ["Authorization: Basic " + Data("x:se%20cret".utf8).base64EncodedString()])
    }

    func testConfigurationErrorsAre78() {
        XCTAssertEqual(exit("weibo", ""), 78, "no client id")
        do { _ = try resolve("weibo", "") } catch {
            XCTAssertTrue((error as? TokenVaultError)?.hint?.contains("open.weibo.com") ?? false)
            XCTAssertTrue((error as? TokenVaultError)?.hint?.contains("client_id") ?? false)
        }
        XCTAssertEqual(exit("nosuch", ""), 78)
        XCTAssertEqual(
            exit("x", "[providers.x]\ntoken_url = \"http://example.com/token\"\nclient_id = \"a\"\n"), 78,
            "plain http off loopback")
        XCTAssertEqual(exit("x", "[providers.x]\ntoken_url = \"http://localhost:1/t\"\nclient_id = \"a\"\n"), 0)
        XCTAssertEqual(
            exit(
                "x",
                "[providers.x]\ntoken_url = \"https://a.example/t\"\nclient_id = \"a\"\nclient_secret = \"1\"\nclient_secret_file = \"/f\"\n"
            ), 78)
        XCTAssertEqual(
            exit(
                "x",
                "[providers.x]\ntoken_url = \"https://a.example/t\"\nclient_id = \"a\"\nheader = \"no token here\"\n"),
            78)
        XCTAssertEqual(exit("twitter", "[providers.twitter]\nclient_id = \"a\"\n"), 78, "OAuth 1.0a is not OAuth 2.0")
    }
}
