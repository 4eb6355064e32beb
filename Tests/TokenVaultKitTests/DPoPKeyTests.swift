import Foundation
import XCTest

@testable import TokenVaultKit

/// A credential's DPoP key and its proofs (docs/security.md,
/// "Sender-constrained tokens"): the public JWK and thumbprint of a known
/// key (computed apart, with Python's cryptography), and what a proof
/// carries. That a proof verifies is checked by the test servers (authlib).
final class DPoPKeyTests: XCTestCase {
    /// A P-256 key made for this test with `openssl genpkey`; it guards nothing.
    static let pem = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg3UjAhdXrR4tY6Ro7
        ncxcCOzy4Z6RPF/Wq5hJ+DuRSGChRANCAATKu9m6e98sXgHwwOU4tvRUACWrBtVn
        Cd+LlbZU41iyfGRaTZUEYSsHfVSEyxH2r5Kv2YBJdfegZbAfE1Vr4QgE
        -----END PRIVATE KEY-----
        """

    func testAKnownKeysJWKAndThumbprint() throws {
        let key = try DPoPKey(pem: SecureBytes(Array(Self.pem.utf8)))
        XCTAssertEqual(key.jwk["x"]?.string, "yrvZunvfLF4B8MDlOLb0VAAlqwbVZwnfi5W2VONYsnw")
        XCTAssertEqual(key.jwk["y"]?.string, "ZFpNlQRhKwd9VITLEfavkq_ZgEl196BlsB8TVWvhCAQ")
        XCTAssertEqual(key.thumbprint, "nBV52tHOuXpb4_97rslwgUOF08Tf18VHAjum4BOafzw")
    }

    func testAProofCarriesWhatRFC9449Asks() throws {
        let key = try DPoPKey(pem: SecureBytes(Array(Self.pem.utf8)))
        let proof = try key.proof(
            method: "POST", url: "https://rs.example/mcp?x=1#f", accessToken: "tok", nonce: "n-1", now: 1_700_000_000)
        let parts = proof.split(separator: ".")
        XCTAssertEqual(parts.count, 3)
        let header = try XCTUnwrap(JSONValue.parsed(try XCTUnwrap(JWT.base64urlDecode(parts[0]))))
        XCTAssertEqual(header["typ"]?.string, "dpop+jwt")
        XCTAssertEqual(header["alg"]?.string, "ES256")
        XCTAssertEqual(header["jwk"]?["x"]?.string, key.jwk["x"]?.string)
        XCTAssertNil(header["jwk"]?["d"], "no private part in the header")
        let claims = try XCTUnwrap(JWT.claims(of: proof))
        XCTAssertEqual(claims["htm"]?.string, "POST")
        XCTAssertEqual(claims["htu"]?.string, "https://rs.example/mcp", "no query, no fragment")
        for (url, htu) in [
            ("https://user:pw@rs.example/mcp", "https://rs.example/mcp"),
            ("https://u%40x:p@w@rs.example:8443/a/b?q=1", "https://rs.example:8443/a/b"),
            ("https://rs.example/a@b", "https://rs.example/a@b"),
        ] {
            XCTAssertEqual(DPoPKey.htu(url), htu, "no userinfo in htu: \(url)")
        }
        XCTAssertEqual(claims["iat"]?.int64, 1_700_000_000)
        XCTAssertEqual(claims["nonce"]?.string, "n-1")
        // ath: base64url(SHA-256("tok")), computed apart.
        XCTAssertEqual(claims["ath"]?.string, "GnZ0607njffhrEOak8P6jjyUV4TU3sn9jjARc4svHWI")
        XCTAssertEqual(try XCTUnwrap(JWT.base64urlDecode(parts[2])).count, 64, "ES256: r||s")
        let again = try key.proof(method: "POST", url: "https://rs.example/mcp")
        XCTAssertNotEqual(JWT.claims(of: again)?["jti"], claims["jti"], "a fresh jti each time")
        XCTAssertNil(JWT.claims(of: again)?["ath"], "no token, no ath (a token request)")
    }

    func testANewKeyIsP256AndItsOwn() throws {
        let a = try DPoPKey.generate(), b = try DPoPKey.generate()
        XCTAssertNotEqual(a.thumbprint, b.thumbprint)
        XCTAssertEqual(a.jwk["crv"]?.string, "P-256")
        let text = String(decoding: a.pem.bytes, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("-----BEGIN PRIVATE KEY-----"), "PKCS#8 PEM")
        XCTAssertEqual(try DPoPKey(pem: a.pem).thumbprint, a.thumbprint, "read back, the same key")
    }

    /// An Ed25519 key (RFC 8410 PKCS#8, written by Python's cryptography):
    /// read by libsodium, its OKP JWK and thumbprint, EdDSA proofs.
    func testAnEd25519KeyAndItsProofs() throws {
        let pem = """
            -----BEGIN PRIVATE KEY-----
            MC4CAQAwBQYDK2VwBCIEIAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g
            -----END PRIVATE KEY-----
            """
        let key = try DPoPKey(pem: SecureBytes(Array(pem.utf8)))
        XCTAssertEqual(key.algorithm, "EdDSA")
        XCTAssertEqual(key.jwk["x"]?.string, "ebVWLo_mVPlAeLES6KmLp5AfhTrmlb7X4OORC60ElmQ")
        XCTAssertEqual(key.thumbprint, "WWpn_pfHui9YKR4CZtQsDGMu7_Gch2zYChfSvnxgtPk")
        let proof = try key.proof(method: "GET", url: "https://rs.example/x")
        let header = try XCTUnwrap(
            JSONValue.parsed(try XCTUnwrap(JWT.base64urlDecode(proof.split(separator: ".")[0]))))
        XCTAssertEqual(header["alg"]?.string, "EdDSA")
        XCTAssertEqual(header["jwk"]?["kty"]?.string, "OKP")
        XCTAssertEqual(try XCTUnwrap(JWT.base64urlDecode(proof.split(separator: ".")[2])).count, 64)
        let made = try DPoPKey.generate(algorithm: "EdDSA")
        XCTAssertEqual(try DPoPKey(pem: made.pem).thumbprint, made.thumbprint, "written and read back")
    }

    /// ES256 wherever the server lists it (or lists nothing); EdDSA where it lists only that.
    func testTheAlgorithmFollowsWhatTheServerLists() {
        XCTAssertEqual(DPoPKey.algorithm(for: []), "ES256")
        XCTAssertEqual(DPoPKey.algorithm(for: ["EdDSA", "ES256"]), "ES256")
        XCTAssertEqual(DPoPKey.algorithm(for: ["EdDSA"]), "EdDSA")
        XCTAssertEqual(DPoPKey.algorithm(for: ["PS256", "EdDSA"]), "EdDSA")
        XCTAssertEqual(DPoPKey.algorithm(for: ["RS256"]), "ES256", "none made here: ES256, which the server may refuse")
    }
}
