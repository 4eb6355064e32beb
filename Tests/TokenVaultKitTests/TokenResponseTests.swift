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
