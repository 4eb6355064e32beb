import Crypto
import Foundation
import XCTest

@testable import TokenVaultKit

final class JWTUnitTests: XCTestCase {
    func testHS256IsTheHMACOfTheSigningInput() throws {
        let token = try JWT.sign(claims: ["sub": .string("x")], key: .secret(SecureBytes(Array("secret".utf8))))
        let parts = token.split(separator: ".").map(String.init)
        XCTAssertEqual(parts.count, 3)
        XCTAssertEqual(JWT.claims(of: token)?["sub"], .string("x"))
        // Independent check with swift-crypto's HMAC.
        let input = Data((parts[0] + "." + parts[1]).utf8)
        let mac = HMAC<SHA256>.authenticationCode(for: input, using: SymmetricKey(data: Data("secret".utf8)))
        XCTAssertEqual(parts[2], PKCE.base64url(Array(mac)))
        XCTAssertThrowsError(try JWT.sign(claims: [:], key: .secret(SecureBytes([UInt8]()))))
    }

    func testAssertionClaimsLiveFiveMinutesWithAFreshJTI() {
        let a = JWT.assertionClaims(issuer: "i", subject: "s", audience: "https://idp.example/token", now: 1000)
        let b = JWT.assertionClaims(issuer: "i", subject: "s", audience: "https://idp.example/token", now: 1000)
        XCTAssertEqual(a["exp"], .integer(1300))
        XCTAssertEqual(a["iat"], .integer(1000))
        XCTAssertEqual(a["aud"], .string("https://idp.example/token"))
        XCTAssertNotEqual(a["jti"], b["jti"])
    }

    func testClaimsOfSomethingThatIsNotAJWT() {
        XCTAssertNil(JWT.claims(of: "opaque-token"))
        XCTAssertNil(JWT.claims(of: "a.!!!.c"))
    }
}
