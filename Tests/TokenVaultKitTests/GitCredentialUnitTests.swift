import Foundation
import XCTest

@testable import TokenVaultKit

final class GitCredentialUnitTests: XCTestCase {
    func parse(_ s: String) throws -> GitCredentialRequest { try GitCredentialRequest.parse(Array(s.utf8)) }

    func testRequestsAreParsedAsGitWritesThem() throws {
        let r = try parse(
            "protocol=HTTPS\nhost=GitHub.com\nusername=\npassword=a=b\nwwwauth[]=Basic realm=\"x\"\nwwwauth[]=Bearer\n\nhost=ignored\n"
        )
        XCTAssertEqual(r.proto, "https")
        XCTAssertEqual(r.host, "github.com")
        XCTAssertNil(r.username, "an empty username is none")
        XCTAssertEqual(r.password, "a=b", "split at the first =")
        XCTAssertEqual(r.lists["wwwauth[]"], ["Basic realm=\"x\"", "Bearer"])
        let u = try parse("url=https://bob%40corp@git.example.com:8443/group/repo.git\r\n")
        XCTAssertEqual(
            [u.proto, u.host, u.username, u.fields["path"]],
            ["https", "git.example.com:8443", "bob@corp", "group/repo.git"])
        for bad in ["novalue\n", "=x\n", "url=no-scheme\n"] {
            XCTAssertThrowsError(try parse(bad)) { XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 65, bad) }
        }
        XCTAssertThrowsError(try GitCredentialRequest.parse([0x61, 0x3D, 0xFF, 0x0A])) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 65)
        }
    }

    func testHostRules() throws {
        func rule(_ s: String) throws -> GitHostRule { try GitHostRule(parsing: s, provider: "p", configPath: "c") }
        XCTAssertTrue(try rule("github.com").matches(protocol: "https", host: "github.com:443"))
        XCTAssertFalse(try rule("github.com").matches(protocol: "http", host: "github.com"))
        XCTAssertTrue(
            try rule("https://Git.Example.com:8443/").matches(protocol: "https", host: "git.example.com:8443"))
        XCTAssertFalse(try rule("git.example.com:8443").matches(protocol: "https", host: "git.example.com"))
        XCTAssertTrue(try rule("http://127.0.0.1:8080").matches(protocol: "http", host: "127.0.0.1:8080"))
        XCTAssertTrue(try rule("http://[::1]:8080").matches(protocol: "http", host: "[::1]:8080"))
        for bad in [
            "http://git.example.com", "ssh://github.com", "github.com/org", "user@github.com", "", "git hub.com",
        ] {
            XCTAssertThrowsError(try rule(bad)) { XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 78, bad) }
        }
    }

    func testConfiguredProvidersComeBeforePresetsForAHost() throws {
        let config = try Config.parse(
            """
            [providers.ghapp]
            token_url = "https://github.com/login/oauth/access_token"
            service = "api.github.com"
            git_hosts = ["github.com"]
            git_username = "x-access-token"
            [providers.corp]
            token_url = "https://sso.corp.example/token"
            git_hosts = ["git.corp.example"]
            """)
        let d = ProviderDirectory(config: config)
        XCTAssertEqual(
            try d.gitProviders(protocol: "https", host: "github.com", configPath: "c").map(\.provider),
            ["ghapp", "github"])
        XCTAssertEqual(
            try d.gitProviders(protocol: "https", host: "gitlab.com", configPath: "c").map(\.username), ["oauth2"])
        let corp = try d.gitProviders(protocol: "https", host: "git.corp.example", configPath: "c")
        XCTAssertEqual(corp.map(\.service.description), ["sso.corp.example"])
        XCTAssertEqual(corp.map(\.username), ["oauth2"], "the default username")
        XCTAssertEqual(try d.gitProviders(protocol: "https", host: "example.org", configPath: "c"), [])
    }
}
