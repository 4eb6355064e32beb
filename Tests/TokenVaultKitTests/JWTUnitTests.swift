import Foundation
import XCTest

@testable import TokenVaultKit

final class JWTUnitTests: XCTestCase {
    func testHS256IsTheHMACOfTheSigningInput() throws {
        let token = try JWT.sign(claims: ["sub": .string("x")], key: .secret(SecureBytes(Array("secret".utf8))))
        XCTAssertEqual(JWT.claims(of: token)?["sub"], .string("x"))
        // A known answer, computed independently (Python's hmac and json, sorted keys, no spaces):
        //   h = b64url('{"alg":"HS256","typ":"JWT"}'); p = b64url('{"sub":"x"}')
        //   h + "." + p + "." + b64url(hmac.new(b"secret", (h + "." + p).encode(), sha256).digest())
        XCTAssertEqual(
            token,
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ4In0.TKECX_pF_bzlcgrzGibhwL3tklDD4LdEEzXVQCw00qY")
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
