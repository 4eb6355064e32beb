import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

final class RevocationTests: XCTestCase {
    func testWeiboAndRFC7009Requests() throws {
        let config = try Config.parse(
            """
            [providers.weibo]
            client_id = "wid"
            client_secret = "ws"
            [providers.std]
            token_url = "https://auth.example/token"
            revoke_url = "https://auth.example/revoke"
            client_id = "cid"
            client_secret = "cs"
            client_auth = "basic"
            """)
        let weibo = try OAuth2Provider.resolve("weibo", config: config, configPath: "c")
        let c = Credential(
            service: weibo.service, type: .oauth2, provider: "weibo", accessToken: "2.00at", refreshToken: nil)
        let w = try Revocation.request(for: c, provider: weibo)
        XCTAssertEqual(w.url, "https://api.weibo.com/oauth2/revokeoauth2")
        XCTAssertEqual(String(decoding: w.body, as: UTF8.self), "access_token=2.00at")
        let std = try OAuth2Provider.resolve("std", config: config, configPath: "c")
        var d = c
        d.refreshToken = "rt"
        let r = try Revocation.request(for: d, provider: std)
        XCTAssertEqual(String(decoding: r.body, as: UTF8.self), "token=rt&token_type_hint=refresh_token")
        XCTAssertTrue(r.headers.contains("Authorization: Basic " + Data("cid:cs".utf8).base64EncodedString()))
        XCTAssertThrowsError(
            try Revocation.request(
                for: c,
                provider: try OAuth2Provider.resolve(
                    "github", config: try Config.parse("[providers.github]\nclient_id = \"g\"\n"), configPath: "c"))
        ) { e in
            XCTAssertEqual((e as? TokenVaultError)?.exitCode, 78, "no revoke_url")
        }
    }
}
