import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// Numbers from outside and lengths the vault cannot encode.
final class HostileInputTests: XCTestCase {
    let id = CredentialID(service: try! ServiceKey(parsing: "api.example.com"))

    func testNumbersThatWouldTrapAreRefused() {
        for v in [
            #""nan""#, #""inf""#, #""-inf""#, "1e300", #""1e300""#, #""9.3e18""#, "9300000000000000000", "-1",
            #""12abc""#,
        ] {
            for key in ["expires_in", "expires_at"] {
                let json = #"{"access_token":"a","\#(key)":\#(v)}"#
                XCTAssertThrowsError(try TokenInput.parse(Data(json.utf8), id: id, now: 100), json) { e in
                    XCTAssertEqual((e as? TokenVaultError)?.exitCode, 65, json)
                }
            }
        }
        XCTAssertEqual(
            try TokenInput.parse(Data(#"{"access_token":"a","expires_in":"3600.0"}"#.utf8), id: id, now: 100).expiresAt,
            3_700)
        XCTAssertEqual(
            try TokenInput.parse(
                Data(#"{"access_token":"a","expires_at":"2030-01-01T00:00:00Z"}"#.utf8), id: id, now: 100
            ).expiresAt, 1_893_456_000)
    }

    func testTheVaultWriterRefusesWhatItCannotEncode() throws {
        var contents = VaultContents()
        var c = Credential(service: id.service, type: .token, accessToken: "t")
        c.account = "e" + String(repeating: "\u{301}", count: 33_000)
        contents.put(c)
        XCTAssertThrowsError(try contents.plaintext()) { XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 65) }
        XCTAssertThrowsError(try CredentialID.validateAccount(c.account), "limits count bytes")
        XCTAssertNoThrow(try CredentialID.validateAccount(String(repeating: "é", count: 128)))
    }
}
