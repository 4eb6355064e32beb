import XCTest

@testable import TokenVaultKit

final class TokenInputTests: XCTestCase {
    let id = CredentialID(service: try! ServiceKey(parsing: "api.weibo.com"))

    func parse(_ s: String, now: Int64 = 1_000) throws -> Credential {
        try TokenInput.parse(Data(s.utf8), id: id, now: now)
    }

    func testTokenEndpointJSON() throws {
        let c = try parse(
            #"{"access_token":"a","refresh_token":"r","expires_in":3600,"token_type":"bearer","scope":"read write","uid":"42"}"#
        )
        XCTAssertEqual(c.type, .oauth2)
        XCTAssertEqual(c.accessToken, "a")
        XCTAssertEqual(c.refreshToken, "r")
        XCTAssertEqual(c.expiresAt, 4_600)
        XCTAssertEqual(c.tokenType, "bearer")
        XCTAssertEqual(c.scope, "read write")
        XCTAssertEqual(c.extra, ["uid": .string("42")])
        XCTAssertEqual(c.updatedAt, 1_000)
    }

    func testNumbersAsStringsAndExpiresAtForms() throws {
        XCTAssertEqual(try parse(#"{"access_token":"a","expires_in":"60"}"#).expiresAt, 1_060)
        XCTAssertEqual(try parse(#"{"access_token":"a","expires_in":60.0}"#).expiresAt, 1_060)
        XCTAssertEqual(try parse(#"{"access_token":"a","expires_at":1700000000}"#).expiresAt, 1_700_000_000)
        XCTAssertEqual(try parse(#"{"access_token":"a","expires_at":"1700000000"}"#).expiresAt, 1_700_000_000)
        XCTAssertEqual(try parse(#"{"access_token":"a","expires_at":"2023-11-14T22:13:20Z"}"#).expiresAt, 1_700_000_000)
        XCTAssertEqual(
            try parse(#"{"access_token":"a","expires_at":"2023-11-14T23:13:20.5+01:00"}"#).expiresAt, 1_700_000_000)
        XCTAssertNil(try parse(#"{"access_token":"a"}"#).expiresAt, "no expires_in: no expiry")
        XCTAssertEqual(try parse(#"{"access_token":"a","scope":["x","y"]}"#).scope, "x y")
    }

    func testOAuth1AndBareTokens() throws {
        let o = try parse(#"{"oauth_token":"t","oauth_token_secret":"s","screen_name":"me","user_id":"7"}"#)
        XCTAssertEqual(o.type, .oauth1)
        XCTAssertEqual(o.tokenSecret, "s")
        XCTAssertEqual(o.extra["screen_name"], .string("me"))
        let bare = try parse("  gho_abc123\n")
        XCTAssertEqual(bare.type, .token)
        XCTAssertEqual(bare.accessToken, "gho_abc123")
    }

    func testMalformedInputIsBadInput() {
        for bad in [
            "", "\n", "{", "[]", "null", #"{"access_token":5}"#, #"{"access_token":""}"#, #"{"oauth_token":"t"}"#,
            #"{"access_token":"a","expires_in":-1}"#, #"{"access_token":"a","expires_in":"x"}"#,
            #"{"access_token":"a","expires_at":"yesterday"}"#, #"{"access_token":"a b"}"#,
            #"{"access_token":"a\nb"}"#, "a\nb", "a b", #"{"error":"invalid_grant"}"#,
            #"{"access_token":"a","refresh_token":7}"#,
        ] {
            XCTAssertThrowsError(try parse(bad), bad.debugDescription) { e in
                XCTAssertEqual((e as? TokenVaultError)?.exitCode, 65, bad.debugDescription)
            }
        }
        XCTAssertThrowsError(try TokenInput.parse(Data(repeating: 0x61, count: (1 << 20) + 1), id: id, now: 0))
        XCTAssertThrowsError(try TokenInput.parse(Data([0xff, 0xfe]), id: id, now: 0))
    }

    func testRecordRoundTripKeepsEverything() throws {
        var c = try parse(
            #"{"access_token":"a","refresh_token":"r","expires_in":5,"scope":"s","n":1.5,"o":{"k":[1,true,null]}}"#)
        c.provider = "weibo"
        let back = try Credential.fromRecord(c.recordJSON(), id: c.id)
        XCTAssertEqual(back, c)
    }

    func testSecretToolItemsReadAsBareTokens() throws {
        let c = try Credential.fromRecord(Data("handmade\n".utf8), id: id)
        XCTAssertEqual(c.type, .token)
        XCTAssertEqual(c.accessToken, "handmade")
        XCTAssertThrowsError(try Credential.fromRecord(Data(#"{"nothing":1}"#.utf8), id: id))
    }

    func testFieldsAndUsability() throws {
        let c = try parse(#"{"access_token":"a","expires_in":10,"uid":"42"}"#, now: 100)
        XCTAssertEqual(c.field("uid"), "42")
        XCTAssertEqual(c.field("expires_at"), "110")
        XCTAssertNil(c.field("refresh_token"))
        XCTAssertFalse(c.isExpired(at: 109))
        XCTAssertTrue(c.isExpired(at: 110))
        XCTAssertEqual(CredentialStatus(of: c, now: 110, minValid: 0, grant: { _ in nil }).state, .loginRequired)
    }
}
