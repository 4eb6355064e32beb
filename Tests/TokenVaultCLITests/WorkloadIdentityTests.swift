import Foundation
import TokenVaultKit
import XCTest

/// A workload's identity as the credential (docs/providers.md, "Credentials
/// from an identity"): a JWT another issuer made — a Kubernetes projected
/// service-account token, a CI job's OIDC token — sent as the jwt-bearer
/// assertion, read afresh at every use. Against the authlib provider, which
/// trusts the workload issuer's public key (authlib's JWTBearerGrant); the
/// tokens are minted by Tests/Fixtures/mint_jwt.py with that issuer's key.
final class WorkloadIdentityTests: XCTestCase {
    nonisolated(unsafe) static var provider: LocalProvider!
    nonisolated(unsafe) static var keys = ""
    static let issuer = "workload-issuer"

    override class func setUp() {
        keys = NSTemporaryDirectory() + "tv-wl-" + UUID().uuidString.prefix(8)
        try! FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        DiscoveryTests.makeKey(issuer, "rsa", in: keys)
        let pub = runProcess(
            "/usr/bin/openssl",
            ["pkey", "-in", "\(keys)/\(issuer).pem", "-pubout", "-out", "\(keys)/\(issuer).pub.pem"],
            env: [:])
        precondition(pub.status == 0, pub.stderr)
        provider = try! LocalProvider(extra: ["--keys", keys])
    }

    override class func tearDown() {
        provider.stop()
        try? FileManager.default.removeItem(atPath: keys)
    }

    var provider: LocalProvider { Self.provider }
    var tokenURL: String { provider.base + "/token" }

    /// A token of the workload issuer's, valid for `lifetime` seconds,
    /// written to `path` as the kubelet writes a projected token.
    func mint(_ path: String, lifetime: Int = 120) {
        let r = runProcess(
            "/usr/bin/python3",
            [
                Paths.fixtures.appendingPathComponent("mint_jwt.py").path, "\(Self.keys)/\(Self.issuer).pem",
                Self.issuer, tokenURL, String(lifetime), path,
            ], env: ["PATH": "/usr/bin:/bin"])
        XCTAssertEqual(r.status, 0, r.stderr)
    }

    func sandbox(_ source: String) throws -> Sandbox {
        let s = Sandbox()
        try s.writeConfig(
            """
            [providers.wl]
            service = "api.workload.example"
            token_url = "\(tokenURL)"
            grant = "jwt_bearer"
            \(source)
            scopes = ["read"]
            """)
        return s
    }

    func assertions() throws -> Int { try provider.stats()["assertions"] ?? 0 }

    func testAProjectedTokenIsTheAssertionReadAfreshAtEveryRenewal() throws {
        let token = Self.keys + "/token"
        mint(token)
        let s = try sandbox("assertion_file = \"\(token)\"")
        let before = try assertions()
        s.expect("login", "wl")
        XCTAssertEqual(try assertions(), before + 1, "authlib's JWTBearerGrant took the workload's JWT")
        let first = s.tv("get", "wl").out
        XCTAssertEqual(provider.resourceStatus(first), 200)
        XCTAssertTrue(s.tv("status", "wl").stdout.contains("can refresh: yes"))
        // The kubelet rotates the file; the next renewal sends the new token.
        mint(token)
        try s.expireStored("wl")
        let renewed = s.tv("get", "wl")
        XCTAssertEqual(renewed.status, 0, renewed.stderr)
        XCTAssertNotEqual(renewed.out, first)
        XCTAssertEqual(provider.resourceStatus(renewed.out), 200)
        XCTAssertEqual(try assertions(), before + 2)
        XCTAssertFalse(renewed.stderr.contains("eyJ"), "no assertion on stderr")
        // Rotated and expired again: one renewal for 20 readers at once (authlib refuses a jti twice).
        mint(token)
        try s.expireStored("wl")
        let runs = s.concurrently(20, "get", "wl")
        XCTAssertEqual(runs.filter { $0.status != 0 }.map(\.stderr), [])
        XCTAssertEqual(Swift.Set(runs.map(\.out)).count, 1, "all 20 print the same token")
        XCTAssertEqual(try assertions(), before + 3, "one jwt-bearer request for 20 readers")
    }

    /// `get` fetches the first token of a grant that needs no person: a CI
    /// job runs one command. Only where the result can be stored: with the
    /// vault's key not at hand, nothing is sent.
    func testGetFetchesTheFirstTokenOnlyWhereItCanBeStored() throws {
        let token = Self.keys + "/first-token"
        mint(token)
        let s = try sandbox("assertion_file = \"\(token)\"")
        let before = try provider.stats()["token_requests"] ?? 0
        let locked = s.tv("get", "wl", env: ["TOKENVAULT_PASSPHRASE": ""])
        XCTAssertEqual(locked.status, 77, locked.stderr)
        XCTAssertEqual(try provider.stats()["token_requests"] ?? 0, before, "nothing sent that could not be kept")
        let first = s.tv("get", "wl")
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertEqual(provider.resourceStatus(first.out), 200)
        XCTAssertEqual(s.tv("get", "wl").out, first.out, "stored: the second get asks nobody")
        XCTAssertEqual(try provider.stats()["token_requests"] ?? 0, before + 1)
    }

    /// A refused assertion holds only for that assertion: the same file is
    /// not sent again, a still-valid token keeps being served, and once the
    /// file is rotated the next use asks again, with no one running `login`.
    func testAnUnattendedGrantHealsOnceItsAssertionChanges() throws {
        let token = Self.keys + "/healing-token"
        func refusedAssertion() {
            let r = runProcess(
                "/usr/bin/python3",
                [
                    Paths.fixtures.appendingPathComponent("mint_jwt.py").path, "\(Self.keys)/\(Self.issuer).pem",
                    Self.issuer, "https://elsewhere.example/token", "120", token,
                ], env: ["PATH": "/usr/bin:/bin"])
            XCTAssertEqual(r.status, 0, r.stderr)
        }
        func requests() throws -> Int { try provider.stats()["token_requests"] ?? 0 }
        refusedAssertion()
        let s = try sandbox("assertion_file = \"\(token)\"")
        var before = try requests()
        let refused = s.tv("get", "wl")
        XCTAssertEqual(refused.status, 4, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("invalid_grant"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("the assertion in \(token)"), refused.stderr)
        XCTAssertFalse(
            refused.stderr.contains("run: tokenvault login"), "a login sends the same file: \(refused.stderr)")
        let again = s.tv("get", "wl")
        XCTAssertEqual(again.status, 4, again.stderr)
        XCTAssertTrue(again.stderr.contains("has not changed since, so nothing was sent"), again.stderr)
        XCTAssertEqual(try requests(), before + 1, "the same assertion is not sent twice")
        // Rotated: the next get asks again, and heals.
        mint(token)
        let healed = s.tv("get", "wl")
        XCTAssertEqual(healed.status, 0, healed.stderr)
        XCTAssertEqual(provider.resourceStatus(healed.out), 200)
        // A refused renewal while the token is valid: it is still served.
        refusedAssertion()
        let forced = s.tv("refresh", "wl")
        XCTAssertEqual(forced.status, 4, forced.stderr)
        XCTAssertTrue(forced.stderr.contains("the stored token is kept, valid"), forced.stderr)
        before = try requests()
        let served = s.tv("get", "wl")
        XCTAssertEqual(served.status, 0, served.stderr)
        XCTAssertEqual(served.out, healed.out)
        XCTAssertEqual(try requests(), before, "a valid token is served without asking")
        // Rotated: renewed.
        mint(token)
        let renewed = s.tv("refresh", "wl")
        XCTAssertEqual(renewed.status, 0, renewed.stderr)
        let fresh = s.tv("get", "wl").out
        XCTAssertNotEqual(fresh, healed.out)
        XCTAssertEqual(provider.resourceStatus(fresh), 200)
    }

    func testAnAssertionCommandIsRunAtEveryUse() throws {
        let mint = [
            "/usr/bin/python3", Paths.fixtures.appendingPathComponent("mint_jwt.py").path,
            "\(Self.keys)/\(Self.issuer).pem", Self.issuer, tokenURL, "120",
        ].map(ShellWord.word).joined(separator: " ")
        let s = try sandbox("assertion_command = \"\(mint)\"")
        let before = try assertions()
        s.expect("login", "wl")
        try s.expireStored("wl")
        XCTAssertEqual(provider.resourceStatus(s.tv("get", "wl").out), 200)
        XCTAssertEqual(try assertions(), before + 2, "a new JWT (a new jti) each time")
    }

    /// Missing, not a JWT, expired: one error naming where it was read, and
    /// nothing sent.
    func testABadAssertionIsOneClearErrorAndNothingIsSent() throws {
        let token = Self.keys + "/bad-token"
        let s = try sandbox("assertion_file = \"\(token)\"")
        let before = try assertions()
        let missing = s.tv("login", "wl")
        XCTAssertEqual(missing.status, 78, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("cannot read the assertion from \(token)"), missing.stderr)
        try "not a token\n".write(toFile: token, atomically: true, encoding: .utf8)
        let garbage = s.tv("login", "wl")
        XCTAssertEqual(garbage.status, 78, garbage.stderr)
        XCTAssertTrue(garbage.stderr.contains("what was read from \(token) is not a JWT"), garbage.stderr)
        mint(token, lifetime: -30)
        let expired = s.tv("login", "wl")
        XCTAssertEqual(expired.status, 75, expired.stderr)
        XCTAssertTrue(expired.stderr.contains("the assertion read from \(token) expired"), expired.stderr)
        XCTAssertTrue(expired.stderr.contains("hint: its issuer replaces it"), expired.stderr)
        XCTAssertEqual(try assertions(), before, "nothing was sent")
        // A table that would both send one and sign one is refused.
        let both = try sandbox("assertion_file = \"\(token)\"\nprivate_key_file = \"\(Self.keys)/\(Self.issuer).pem\"")
        both.expect("login", "wl", status: 78, stderr: ["set one kind, not both"])
    }
}
