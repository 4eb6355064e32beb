import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

final class LoginUnitTests: XCTestCase {
    func testWeiboDisplayNameFromUsersShow() throws {
        let config = try Config.parse(
            "[providers.weibo]\nclient_id = \"wid\"\nredirect_uri = \"http://127.0.0.1:8085/callback\"\n")
        let weibo = try OAuth2Provider.resolve("weibo", config: config, configPath: "c")
        let t = ScriptedTransport([
            .success(
                HTTPResponse(
                    status: 200, contentType: "text/plain",
                    body: Data(
                        #"{"id":1404376560,"screen_name":"zaku","avatar_large":"https://tva.example/1.jpg"}"#.utf8)))
        ])
        let login = OAuth2Login(provider: weibo, transport: t, clock: FixedClock(0), notify: { _ in })
        var c = Credential(service: weibo.service, type: .oauth2, provider: "weibo", accessToken: "2.00at")
        c.extra["uid"] = .string("1404376560")
        let named = login.withUserInfo(c)
        XCTAssertEqual(named.extra["screen_name"], .string("zaku"))
        XCTAssertEqual(named.extra["uid"], .string("1404376560"))
        XCTAssertEqual(t.requests[0].method, "GET")
        XCTAssertEqual(t.requests[0].url, "https://api.weibo.com/2/users/show.json?access_token=2.00at&uid=1404376560")
        // The authorize URL carries the fixed redirect and no secret.
        let url = try login.authorizationURL(redirectURI: weibo.redirectURI!, state: "s", pkce: PKCE(), scopes: [])
        XCTAssertTrue(
            url.hasPrefix(
                "https://api.weibo.com/oauth2/authorize?response_type=code&client_id=wid&redirect_uri=http%3A%2F%2F127.0.0.1%3A8085%2Fcallback"
            ), url)
    }

    func testPKCEMatchesRFC7636AppendixB() {
        let p = PKCE(verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        XCTAssertEqual(p.challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
    }
}
