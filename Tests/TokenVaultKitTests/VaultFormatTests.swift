import XCTest

@testable import TokenVaultKit

/// The vault format with libsodium's minimum Argon2id cost, so that every
/// byte can be flipped in reasonable time; the format is the same.
final class VaultFormatTests: XCTestCase {
    let salt = [UInt8](repeating: 7, count: 16)
    let passphrase = SecureBytes(Array("pass".utf8))

    func key(_ p: KDFParams = .minimum, pass: SecureBytes? = nil) throws -> SecureBytes {
        try Sodium.deriveKey(passphrase: pass ?? passphrase, salt: salt, ops: p.opsLimit, mem: p.memLimit)
    }

    func sample() throws -> VaultContents {
        var v = VaultContents()
        v.put(
            Credential(
                service: try ServiceKey(parsing: "api.weibo.com"), type: .oauth2, accessToken: "tok", refreshToken: "r",
                expiresAt: 5))
        v.put(
            Credential(
                service: try ServiceKey(parsing: "127.0.0.1:9000"), account: "bot", type: .token, accessToken: "t2"))
        return v
    }

    func open(_ file: [UInt8], key: SecureBytes) throws -> VaultContents {
        try VaultFormat.open(file, header: try VaultFormat.parseHeader(file), key: key).contents()
    }

    func testRoundTrip() throws {
        let k = try key()
        let file = try VaultFormat.seal(try sample(), key: k, salt: salt, params: .minimum)
        let back = try open(file, key: k)
        XCTAssertEqual(try back.credentials(), try sample().credentials())
        XCTAssertEqual(
            try back.credential(CredentialID(service: try ServiceKey(parsing: "127.0.0.1:9000"), account: "bot"))?
                .accessToken, "t2")
        XCTAssertNil(try back.credential(CredentialID(service: try ServiceKey(parsing: "127.0.0.1:9000"))))
        // The lookup that walks the raw bytes agrees with the decoded entries.
        let raw = try VaultFormat.open(file, header: try VaultFormat.parseHeader(file), key: k)
        XCTAssertEqual(
            try raw.credential(CredentialID(service: try ServiceKey(parsing: "127.0.0.1:9000"), account: "bot"))?
                .accessToken, "t2")
        XCTAssertEqual(
            try raw.credential(CredentialID(service: try ServiceKey(parsing: "api.weibo.com")))?.refreshToken, "r")
        XCTAssertNil(
            try raw.credential(CredentialID(service: try ServiceKey(parsing: "api.weibo.com"), account: "bot")))
        XCTAssertEqual((file.count - 96 - 16) % 512, 0, "padded to 512-byte blocks")
    }

    func testEveryByteFlipIsDetected() throws {
        let k = try key()
        let file = try VaultFormat.seal(try sample(), key: k, salt: salt, params: .minimum)
        for i in file.indices {
            for bit in [0x01, 0x80] as [UInt8] {
                var bad = file
                bad[i] ^= bit
                XCTAssertThrowsError(try open(bad, key: k), "byte \(i)") { e in
                    XCTAssertEqual((e as? TokenVaultError)?.exitCode, 74, "byte \(i): \(e)")
                }
            }
        }
    }

    func testEveryTruncationIsDetected() throws {
        let k = try key()
        let file = try VaultFormat.seal(try sample(), key: k, salt: salt, params: .minimum)
        for n in 0..<file.count {
            XCTAssertThrowsError(try open(Array(file[0..<n]), key: k), "length \(n)") { e in
                XCTAssertEqual((e as? TokenVaultError)?.exitCode, 74, "length \(n)")
            }
        }
        XCTAssertThrowsError(try open(file + [0], key: k))
    }

    func testWrongKeyIsPermissionNotCorruption() throws {
        let file = try VaultFormat.seal(try sample(), key: try key(), salt: salt, params: .minimum)
        XCTAssertThrowsError(try open(file, key: try key(pass: SecureBytes(Array("other".utf8))))) { e in
            XCTAssertEqual((e as? TokenVaultError)?.exitCode, 77)
        }
    }

    func testAbsurdParametersAreRefusedBeforeDeriving() throws {
        let k = try key()
        for (ops, mem) in [(UInt64(1), UInt64(1) << 40), (1_000_000, 8192), (0, 8192), (1, 1024)] {
            var header = VaultFormat.Header(
                params: KDFParams(opsLimit: ops, memLimit: mem), salt: salt,
                nonce: [UInt8](repeating: 0, count: 24), keyCheck: VaultFormat.keyCheck(k))
            header.salt = salt
            let file = header.bytes() + [UInt8](repeating: 0, count: 528)
            XCTAssertThrowsError(try VaultFormat.parseHeader(file), "\(ops)/\(mem)") { e in
                XCTAssertEqual((e as? TokenVaultError)?.exitCode, 74)
                XCTAssertTrue("\(e.localizedDescription)".contains("absurd"), e.localizedDescription)
            }
        }
    }

    func testFreshNonceEveryWrite() throws {
        let k = try key()
        let a = try VaultFormat.seal(try sample(), key: k, salt: salt, params: .minimum)
        let b = try VaultFormat.seal(try sample(), key: k, salt: salt, params: .minimum)
        XCTAssertNotEqual(Array(a[40..<64]), Array(b[40..<64]))
        XCTAssertNotEqual(Array(a[96...]), Array(b[96...]))
    }

    func testProfiles() throws {
        XCTAssertEqual(KDFParams.named("moderate"), .moderate)
        XCTAssertEqual(KDFParams.named("interactive"), .interactive)
        XCTAssertEqual(KDFParams.named("SENSITIVE"), .sensitive)
        XCTAssertNil(KDFParams.named("fast"))
        XCTAssertGreaterThanOrEqual(KDFParams.moderate.memLimit, 256 << 20)
        XCTAssertTrue(KDFParams.sensitive.isSane, "every profile must be readable again")
    }
}
