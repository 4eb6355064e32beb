import Foundation
import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// What of a registration answer (RFC 7591) is believed.
final class ClientRegistrationTests: XCTestCase {
    let redirect = "http://127.0.0.1:53682/callback"

    func register(_ answer: String, status: Int = 201) throws -> ClientRegistration {
        let t = ScriptedTransport([ScriptedTransport.json(answer, status: status)])
        defer {
            let sent = String(decoding: t.requests.first?.body ?? Data(), as: UTF8.self)
            XCTAssertTrue(sent.contains(#""token_endpoint_auth_method":"none""#), sent)
            XCTAssertTrue(sent.contains(#""redirect_uris":["http://127.0.0.1:53682/callback"]"#), sent)
        }
        return try ClientRegistration.register(
            at: "https://auth.example.com/register", issuer: "https://auth.example.com", redirectURI: redirect,
            scopes: [],
            transport: t, now: 5)
    }

    func testTheSecretsOfARegistrationAreKeptAndTheRestChecked() throws {
        let r = try register(
            #"{"client_id":"c-1","client_secret":"s","registration_access_token":"rat","redirect_uris":["\#(redirect)"]}"#
        )
        XCTAssertEqual(
            r,
            ClientRegistration(
                issuer: "https://auth.example.com", clientID: "c-1", clientSecret: "s",
                registrationAccessToken: "rat", redirectURI: redirect, registeredAt: 5))
        for (answer, why) in [
            (#"{"client_secret":"s"}"#, "without a usable client_id"),
            (#"{"client_id":"a\u001b[31mb"}"#, "without a usable client_id"),
            (#"{"client_id":"c","redirect_uris":["http://evil.example/cb"]}"#, "registered other redirect URIs"),
            // What the backend would refuse to read back is refused before it is kept.
            (#"{"client_id":"bad id"}"#, "a client_id that has white space"),
            (#"{"client_id":"c","client_secret":"s\u007f"}"#, "a client_secret that has white space"),
            (#"{"client_id":"c","registration_access_token":"r\tt"}"#, "a registration_access_token that has"),
            (#"{"client_id":"c","client_secret":"\#(String(repeating: "s", count: 5000))"}"#, "longer than 4096"),
        ] {
            XCTAssertThrowsError(try register(answer)) { error in
                XCTAssertEqual((error as? TokenVaultError)?.exitCode, 65)
                XCTAssertTrue(error.errorText.contains(why), error.errorText)
            }
        }
        XCTAssertThrowsError(try register(#"{"error":"invalid_redirect_uri","error_description":"no"}"#, status: 400)) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 76)
        }
        XCTAssertThrowsError(try register("oops", status: 503)) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 75)
        }
    }
}
