import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

final class TokenResponseTests: XCTestCase {
    let id = CredentialID(service: try! ServiceKey(parsing: "api.weibo.com"))

    func cred(_ body: String, status: Int = 200, type: String? = nil) throws -> Credential {
        try TokenResponse.credential(
            from: HTTPResponse(status: status, contentType: type, body: Data(body.utf8)),
            id: id, provider: "weibo", host: "api.weibo.com", now: 100)
    }

    func code(_ body: String, status: Int = 400, type: String? = nil) -> Int32? {
        do {
            _ = try cred(body, status: status, type: type)
            return 0
        } catch { return (error as? TokenVaultError)?.exitCode }
    }

    func testTolerantParsing() throws {
        // Weibo: JSON as text/plain, numbers as strings.
        let w = try cred(
            #"{"access_token":"2.00x","remind_in":"157679999","expires_in":157679999,"uid":"1404376560"}"#,
            type: "text/plain;charset=UTF-8")
        XCTAssertEqual(w.expiresAt, 100 + 157_679_999)
        XCTAssertEqual(w.extra["uid"], .string("1404376560"))
        XCTAssertEqual(w.provider, "weibo")
        // GitHub: form-encoded.
        let g = try cred(
            "access_token=gho_16C7e42F292c6912E7710c838347Ae178B4a&scope=repo%2Cgist&token_type=bearer",
            type: "application/x-www-form-urlencoded")
        XCTAssertEqual(g.accessToken, "gho_16C7e42F292c6912E7710c838347Ae178B4a")
        XCTAssertEqual(g.scope, "repo,gist")
        XCTAssertNil(g.expiresAt, "no expires_in: no expiry")
        XCTAssertEqual(try cred(#"{"access_token":"a","expires_in":"3600"}"#).expiresAt, 3_700)
    }

    func testErrorsMapToExitCodes() {
        XCTAssertEqual(code(#"{"error":"invalid_grant","error_description":"Token has been expired or revoked."}"#), 4)
        XCTAssertEqual(code(#"{"error":"access_denied"}"#), 4)
        XCTAssertEqual(code(#"{"error":"expired_token"}"#), 4)
        for c in [
            "invalid_client", "unauthorized_client", "invalid_scope", "invalid_request", "unsupported_grant_type",
        ] {
            XCTAssertEqual(code(#"{"error":"\#(c)"}"#, status: 401), 76, c)
        }
        XCTAssertEqual(code("error=invalid_client&error_description=bad+secret"), 76, "form-encoded errors too")
        XCTAssertEqual(code(#"{"error":"temporarily_unavailable"}"#, status: 503), 75)
        XCTAssertEqual(code("<html><body>Bad Gateway</body></html>", status: 502, type: "text/html"), 75)
        XCTAssertEqual(code("<html>Not found</html>", status: 404, type: "text/html"), 65)
        XCTAssertEqual(code("<html>oops</html>", status: 200, type: "text/html"), 65)
        XCTAssertEqual(code(#"{"token_type":"bearer"}"#, status: 200), 65)
        XCTAssertEqual(code("", status: 200), 65)
    }

    func testProviderTextIsCleanedForTheOneLineMessage() {
        do {
            _ = try cred(#"{"error":"invalid_client","error_description":"line one\nline two\u001b[31m"}"#, status: 401)
            XCTFail("should throw")
        } catch {
            let m = error.localizedDescription
            XCTAssertTrue(m.contains("invalid_client") && m.contains("line one line two"), m)
            XCTAssertFalse(m.contains("\n") || m.contains("\u{1b}"), m)
        }
    }

    func testFormEncoding() {
        XCTAssertEqual(FormEncoding.encode([("a b", "c&d=e/é")]), "a%20b=c%26d%3De%2F%C3%A9")
        XCTAssertEqual(FormEncoding.decode("a+b=c%26d&x=")?.map { "\($0.0)=\($0.1)" }, ["a b=c&d", "x="])
        XCTAssertNil(FormEncoding.decode("just text"))
        XCTAssertNil(FormEncoding.decode("a=%zz"))
    }
}

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

/// A token endpoint double: answers from a script and records what it was asked.
final class RefresherTests: XCTestCase {
    let id = CredentialID(service: try! ServiceKey(parsing: "127.0.0.1:9000"))
    var lockDir: String!

    override func setUp() {
        lockDir = NSTemporaryDirectory() + "tv-locks-" + UUID().uuidString.prefix(8)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: lockDir) }

    func provider(grant: String = "authorization_code") -> (String) throws -> OAuth2Provider {
        let config = try! Config.parse(
            """
            [providers.local]
            token_url = "http://127.0.0.1:9000/token"
            client_id = "cid"
            client_secret = "csecret"
            grant = "\(grant)"
            """)
        return { try OAuth2Provider.resolve($0, config: config, configPath: "c") }
    }

    func setUp(_ store: MemoryStore, expiresAt: Int64?, refresh: String? = "r1") throws {
        try store.save(
            Credential(
                service: id.service, type: .oauth2, provider: "local", accessToken: "old",
                refreshToken: refresh, expiresAt: expiresAt, updatedAt: 1))
    }

    func refresher(
        _ store: MemoryStore, _ t: HTTPTransport, now: Int64 = 1_000, warnings: Locked? = nil,
        grant: String = "authorization_code"
    ) -> Refresher {
        Refresher(
            vault: CredentialVault(store: store, runtimeDirectory: lockDir), transport: t, clock: FixedClock(now),
            provider: provider(grant: grant), warn: { warnings?.append($0) })
    }

    final class Locked: @unchecked Sendable {
        var items: [String] = []
        func append(_ s: String) { items.append(s) }
    }

    func testValidTokenMakesNoRequest() throws {
        let store = MemoryStore()
        try setUp(store, expiresAt: 2_000)
        let t = ScriptedTransport([])
        XCTAssertEqual(try refresher(store, t).usable(id, minValid: 60)?.accessToken, "old")
        XCTAssertTrue(t.requests.isEmpty)
    }

    func testRefreshStoresTheRotatedTokenFirst() throws {
        let store = MemoryStore()
        try setUp(store, expiresAt: 1_030)  // 30 s left, min_valid 60
        let t = ScriptedTransport([
            ScriptedTransport.json(#"{"access_token":"new","refresh_token":"r2","expires_in":3600}"#)
        ])
        let c = try refresher(store, t).usable(id, minValid: 60)
        XCTAssertEqual(c?.accessToken, "new")
        XCTAssertEqual(try store.load(id)?.refreshToken, "r2")
        XCTAssertEqual(try store.load(id)?.expiresAt, 4_600)
        let body = String(decoding: t.requests[0].body, as: UTF8.self)
        XCTAssertEqual(body, "grant_type=refresh_token&refresh_token=r1&client_id=cid&client_secret=csecret")
        XCTAssertEqual(t.requests[0].url, "http://127.0.0.1:9000/token")
    }

    func testNoNewRefreshTokenKeepsTheOld() throws {
        let store = MemoryStore()
        try setUp(store, expiresAt: 900)
        let t = ScriptedTransport([ScriptedTransport.json(#"{"access_token":"new","expires_in":3600}"#)])
        _ = try refresher(store, t).usable(id, minValid: 60)
        XCTAssertEqual(try store.load(id)?.refreshToken, "r1")
    }

    func testInvalidGrantIsLoginRequiredAndKeepsTheRecord() throws {
        let store = MemoryStore()
        try setUp(store, expiresAt: 900)
        let t = ScriptedTransport([ScriptedTransport.json(#"{"error":"invalid_grant"}"#, status: 400)])
        XCTAssertThrowsError(try refresher(store, t).usable(id, minValid: 60)) { e in
            XCTAssertEqual((e as? TokenVaultError)?.exitCode, 4)
            XCTAssertEqual((e as? TokenVaultError)?.hint, "run: tokenvault login local")
        }
        XCTAssertEqual(try store.load(id)?.refreshToken, "r1")
    }

    func testNetworkFailureWhileStillValidPrintsTheOldOneWithAWarning() throws {
        let store = MemoryStore()
        try setUp(store, expiresAt: 1_030)
        let warnings = Locked()
        let t = ScriptedTransport([.failure(.temporary("cannot reach 127.0.0.1:9000"))])
        XCTAssertEqual(try refresher(store, t, warnings: warnings).usable(id, minValid: 60)?.accessToken, "old")
        XCTAssertEqual(warnings.items.count, 1)
        XCTAssertFalse(warnings.items[0].contains("r1"), "no secret in the warning")
        try setUp(store, expiresAt: 999)
        let t2 = ScriptedTransport([.failure(.temporary("cannot reach 127.0.0.1:9000"))])
        XCTAssertThrowsError(try refresher(store, t2).usable(id, minValid: 60)) { e in
            XCTAssertEqual((e as? TokenVaultError)?.exitCode, 75)
        }
    }

    func testWithoutRefreshTokenExpiredIsLoginRequired() throws {
        let store = MemoryStore()
        try setUp(store, expiresAt: 999, refresh: nil)
        XCTAssertThrowsError(try refresher(store, ScriptedTransport([])).usable(id, minValid: 60)) { e in
            XCTAssertEqual((e as? TokenVaultError)?.exitCode, 4)
        }
        try setUp(store, expiresAt: 1_030, refresh: nil)
        XCTAssertEqual(
            try refresher(store, ScriptedTransport([])).usable(id, minValid: 60)?.accessToken, "old",
            "still valid, cannot refresh: printed as it is")
    }

    func testClientCredentialsFetchesANewToken() throws {
        let store = MemoryStore()
        try setUp(store, expiresAt: 999, refresh: nil)
        let t = ScriptedTransport([ScriptedTransport.json(#"{"access_token":"cc","expires_in":60}"#)])
        XCTAssertEqual(try refresher(store, t, grant: "client_credentials").usable(id, minValid: 30)?.accessToken, "cc")
        XCTAssertTrue(String(decoding: t.requests[0].body, as: UTF8.self).hasPrefix("grant_type=client_credentials"))
    }

    func testForceRefreshesAValidToken() throws {
        let store = MemoryStore()
        try setUp(store, expiresAt: 5_000)
        let t = ScriptedTransport([ScriptedTransport.json(#"{"access_token":"forced","expires_in":60}"#)])
        XCTAssertEqual(try refresher(store, t).usable(id, minValid: 60, force: true)?.accessToken, "forced")
    }
}

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
