import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// Grants that need no person (docs/reference.md, "Credential state";
/// docs/providers.md, "Credentials from an identity"): a refusal holds only
/// for what it was made from, the subject is blamed for its own failure, and
/// the subject is the same account's record, checked like its own refresh.
final class UnattendedGrantTests: XCTestCase {
    var lockDir: String!
    var assertion: String!

    override func setUp() {
        lockDir = NSTemporaryDirectory() + "tv-locks-" + UUID().uuidString.prefix(8)
        assertion = NSTemporaryDirectory() + "tv-assertion-" + UUID().uuidString.prefix(8)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: lockDir)
        try? FileManager.default.removeItem(atPath: assertion)
    }

    let ci = CredentialID(service: try! ServiceKey(parsing: "api.ci.example"))
    let sts = CredentialID(service: try! ServiceKey(parsing: "api.sts.example"))
    let src = CredentialID(service: try! ServiceKey(parsing: "src.example"))

    var config: String {
        """
        [providers.ci]
        service = "api.ci.example"
        token_url = "http://127.0.0.1:9000/token"
        grant = "jwt_bearer"
        assertion_file = "\(assertion!)"

        [providers.src]
        service = "src.example"
        token_url = "http://127.0.0.1:9001/token"
        client_id = "src-client"

        [providers.sts]
        service = "api.sts.example"
        token_url = "http://127.0.0.1:9002/token"
        grant = "token_exchange"
        subject_provider = "src"
        """
    }

    /// An unsigned JWT (the doubles do not verify) that expires at `exp`, told apart by `jti`.
    func jwt(_ jti: String, exp: Int64 = 5_000) -> String {
        func part(_ s: String) -> String {
            Data(s.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        }
        return part(#"{"alg":"RS256"}"#) + "." + part(#"{"jti":"\#(jti)","exp":\#(exp)}"#) + ".c2ln"
    }

    func refresher(_ store: MemoryStore, _ t: HTTPTransport) throws -> Refresher {
        Refresher(
            vault: CredentialVault(store: store, runtimeDirectory: lockDir), transport: t, clock: FixedClock(1_000),
            providers: ProviderTable(config: try Config.parse(config)), warn: { _ in })
    }

    func stored(_ id: CredentialID, provider: String, expiresAt: Int64, refreshToken: String? = nil) -> Credential {
        Credential(
            service: id.service, type: .oauth2, provider: provider, accessToken: "old-\(provider)",
            refreshToken: refreshToken, expiresAt: expiresAt, updatedAt: 1)
    }

    static let refused = ScriptedTransport.json(
        #"{"error":"invalid_grant","error_description":"audience"}"#, status: 400)
    static let issued = ScriptedTransport.json(#"{"access_token":"new","token_type":"Bearer","expires_in":3600}"#)

    func testARefusalHoldsOnlyForTheAssertionItWasMadeFrom() throws {
        try jwt("one").write(toFile: assertion, atomically: true, encoding: .utf8)
        let store = MemoryStore()
        try store.save(stored(ci, provider: "ci", expiresAt: 900))
        let t = ScriptedTransport([Self.refused, Self.issued])
        XCTAssertThrowsError(try refresher(store, t).usable(ci, minValid: 60)) { e in
            XCTAssertEqual((e as? TokenVaultError)?.exitCode, 4)
            XCTAssertTrue("\(e)".contains("the assertion in \(assertion!)"), "\(e)")
        }
        XCTAssertNotNil(try store.load(ci)?.refusal?.input, "remembered with what it was made from")
        // The same file: nothing is sent, and the error says why.
        XCTAssertThrowsError(try refresher(store, t).usable(ci, minValid: 60)) { e in
            XCTAssertTrue("\(e)".contains("has not changed since, so nothing was sent"), "\(e)")
        }
        XCTAssertEqual(t.requests.count, 1)
        // Rotated: asked again at the next use, and healed.
        try jwt("two").write(toFile: assertion, atomically: true, encoding: .utf8)
        XCTAssertEqual(try refresher(store, t).usable(ci, minValid: 60)?.accessToken, "new")
        XCTAssertEqual(t.requests.count, 2)
        XCTAssertNil(try store.load(ci)?.refusal)
    }

    func testAStillValidTokenIsServedAfterARefusal() throws {
        try jwt("one").write(toFile: assertion, atomically: true, encoding: .utf8)
        let store = MemoryStore()
        try store.save(stored(ci, provider: "ci", expiresAt: 4_600))
        let t = ScriptedTransport([Self.refused])
        XCTAssertThrowsError(try refresher(store, t).usable(ci, minValid: 60, force: true))
        let status = CredentialStatus(
            of: try XCTUnwrap(store.load(ci)), now: 1_000, minValid: 60, grant: { _ in .jwtBearer })
        XCTAssertEqual(status.state, .valid, "served while valid")
        XCTAssertEqual(try refresher(store, t).usable(ci, minValid: 60)?.accessToken, "old-ci")
        XCTAssertEqual(t.requests.count, 1)
    }

    /// The subject's login was refused: the subject is blamed (its own hint),
    /// the exchange is not marked, and it works once the subject does.
    func testTheSubjectIsBlamedForItsOwnFailure() throws {
        let store = MemoryStore()
        try store.save(stored(src, provider: "src", expiresAt: 900, refreshToken: "src-rt"))
        try store.save(stored(sts, provider: "sts", expiresAt: 900))
        let t = ScriptedTransport([Self.refused, Self.issued])
        XCTAssertThrowsError(try refresher(store, t).usable(sts, minValid: 60)) { e in
            XCTAssertEqual((e as? TokenVaultError)?.exitCode, 4)
            XCTAssertEqual((e as? TokenVaultError)?.hint, "run: tokenvault login src", "\(e)")
            XCTAssertFalse("\(e)".contains("cannot renew the token for api.sts.example"), "not nested: \(e)")
        }
        XCTAssertNil(try store.load(sts)?.refusal, "the exchange is not blamed")
        XCTAssertNotNil(try store.load(src)?.refusal)
        // The subject logs in again: the exchange works at its next use.
        try store.save(stored(src, provider: "src", expiresAt: 4_600, refreshToken: "src-rt2"))
        XCTAssertEqual(try refresher(store, t).usable(sts, minValid: 60)?.accessToken, "new")
        XCTAssertEqual(
            Dictionary(
                FormEncoding.decode(String(decoding: t.requests[1].body, as: UTF8.self)) ?? [],
                uniquingKeysWith: { a, _ in a })["subject_token"], "old-src")
    }

    /// The subject is the same account's record, checked like its own
    /// refresh: one of another issuer is never sent.
    func testTheSubjectIsTheSameAccountsRecordOfItsIssuer() throws {
        let store = MemoryStore()
        let work = CredentialID(service: sts.service, account: "work")
        var subject = stored(CredentialID(service: src.service, account: "work"), provider: "src", expiresAt: 4_600)
        subject.account = "work"
        subject.accessToken = "work-src"
        try store.save(subject)
        try store.save(stored(src, provider: "src", expiresAt: 4_600))
        var exchanged = stored(sts, provider: "sts", expiresAt: 900)
        exchanged.account = "work"
        try store.save(exchanged)
        let t = ScriptedTransport([Self.issued])
        XCTAssertEqual(try refresher(store, t).usable(work, minValid: 60)?.accessToken, "new")
        let form = Dictionary(
            FormEncoding.decode(String(decoding: t.requests[0].body, as: UTF8.self)) ?? [],
            uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(form["subject_token"], "work-src", "the account's own subject, not the default one's")
        // The subject provider now names another issuer: nothing is sent.
        subject.issuer = "https://old-idp.example"
        try store.save(subject)
        try store.save(exchanged)
        XCTAssertThrowsError(try refresher(store, t).usable(work, minValid: 60)) { e in
            XCTAssertTrue("\(e)".contains("now names another issuer"), "\(e)")
        }
        XCTAssertEqual(t.requests.count, 1)
        XCTAssertNil(try store.load(work)?.refusal)
    }
}
