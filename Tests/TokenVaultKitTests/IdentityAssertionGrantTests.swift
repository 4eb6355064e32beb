import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// `grant = "id_jag"` against token-endpoint doubles: what goes to the IdP
/// and then to the resource's authorization server, and an IdP answer that
/// is not a grant for this audience, resource and client going nowhere.
final class IdentityAssertionGrantTests: XCTestCase {
    let idpID = CredentialID(service: try! ServiceKey(parsing: "idp.example"))
    let resourceID = CredentialID(service: try! ServiceKey(parsing: "notes.example"))
    var lockDir: String!

    override func setUp() { lockDir = NSTemporaryDirectory() + "tv-locks-" + UUID().uuidString.prefix(8) }
    override func tearDown() { try? FileManager.default.removeItem(atPath: lockDir) }

    static let config = """
        [providers.corp]
        service = "idp.example"
        token_url = "http://127.0.0.1:9000/idp/token"
        client_id = "idp-client"

        [providers.notes]
        service = "notes.example"
        issuer = "http://127.0.0.1:9001"
        token_url = "http://127.0.0.1:9001/token"
        grant = "id_jag"
        idp = "corp"
        client_id = "notes-client"
        client_secret = "notes-secret"
        client_auth = "basic"
        resource = "http://127.0.0.1:9002/mcp"
        scopes = ["read"]
        """

    /// A JWT (unsigned: the doubles do not verify) with `claims`.
    static func jwt(_ claims: String, typ: String = "oauth-id-jag+jwt") -> String {
        func part(_ s: String) -> String {
            Data(s.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        }
        return part(#"{"alg":"ES256","typ":"\#(typ)"}"#) + "." + part(claims) + ".c2ln"
    }

    /// The claims of a grant the IdP may issue for notes, with `changes` over them (nil: left out).
    static func grantClaims(_ changes: [String: String?] = [:]) -> String {
        var claims: [String: String?] = [
            "iss": #""http://127.0.0.1:9000""#, "aud": #""http://127.0.0.1:9001""#,
            "resource": #""http://127.0.0.1:9002/mcp""#, "client_id": #""notes-client""#, "exp": "1300",
        ]
        for (k, v) in changes { claims[k] = v }
        return "{" + claims.compactMap { k, v in v.map { "\"\(k)\":\($0)" } }.sorted().joined(separator: ",") + "}"
    }

    func refresher(_ store: MemoryStore, _ t: HTTPTransport, config: String = config) throws -> Refresher {
        let parsed = try Config.parse(config)
        return Refresher(
            vault: CredentialVault(store: store, runtimeDirectory: lockDir), transport: t, clock: FixedClock(1_000),
            providers: ProviderTable(config: parsed), warn: { _ in })
    }

    func storeIdPLogin(_ store: MemoryStore, idTokenExp: Int64 = 5_000) throws {
        var c = Credential(
            service: idpID.service, type: .oauth2, provider: "corp", accessToken: "idp-at", refreshToken: "idp-rt",
            expiresAt: 5_000, updatedAt: 1)
        c.extra["id_token"] = .string(Self.jwt(#"{"sub":"u","exp":\#(idTokenExp)}"#))
        try store.save(c)
    }

    func storeExpiredResource(_ store: MemoryStore) throws {
        try store.save(
            Credential(
                service: resourceID.service, type: .oauth2, provider: "notes", accessToken: "old", expiresAt: 900,
                updatedAt: 1))
    }

    func form(_ r: HTTPRequest) -> [String: String] {
        Dictionary(FormEncoding.decode(String(decoding: r.body, as: UTF8.self)) ?? [], uniquingKeysWith: { a, _ in a })
    }

    func testTheIdTokenIsTradedAtTheIdPThenTheGrantAtTheResourcesServer() throws {
        let store = MemoryStore()
        try storeIdPLogin(store)
        try storeExpiredResource(store)
        let jag = Self.jwt(Self.grantClaims())
        let t = ScriptedTransport([
            ScriptedTransport.json(
                #"{"access_token":"\#(jag)","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}"#
            ),
            ScriptedTransport.json(#"{"access_token":"new","token_type":"Bearer","expires_in":3600}"#),
        ])
        let c = try refresher(store, t).usable(resourceID, minValid: 60)
        XCTAssertEqual(c?.accessToken, "new")
        XCTAssertEqual(t.requests.count, 2)
        XCTAssertEqual(t.requests[0].url, "http://127.0.0.1:9000/idp/token")
        let exchange = form(t.requests[0])
        XCTAssertEqual(exchange["grant_type"], "urn:ietf:params:oauth:grant-type:token-exchange")
        XCTAssertEqual(exchange["requested_token_type"], "urn:ietf:params:oauth:token-type:id-jag")
        XCTAssertEqual(exchange["subject_token_type"], "urn:ietf:params:oauth:token-type:id_token")
        XCTAssertEqual(exchange["audience"], "http://127.0.0.1:9001")
        XCTAssertEqual(exchange["resource"], "http://127.0.0.1:9002/mcp")
        XCTAssertEqual(exchange["scope"], "read")
        XCTAssertEqual(exchange["client_id"], "idp-client", "the IdP's own client")
        XCTAssertEqual(t.requests[1].url, "http://127.0.0.1:9001/token")
        let bearer = form(t.requests[1])
        XCTAssertEqual(bearer["grant_type"], "urn:ietf:params:oauth:grant-type:jwt-bearer")
        XCTAssertEqual(bearer["assertion"], jag)
        XCTAssertNil(bearer["client_secret"], "basic: the secret goes in the header")
        XCTAssertTrue(t.requests[1].headers.contains { $0.hasPrefix("Authorization: Basic ") })
    }

    /// An answer that is not an ID-JAG, or one not checked as the profile
    /// has it — another type, issuer, audience (or a second one), resource or
    /// client, or one of them missing: refused before anything goes to the
    /// resource's server.
    func testAGrantForAnotherPlaceGoesNowhere() throws {
        func answer(_ jag: String) -> String {
            #"{"access_token":"\#(jag)","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag"}"#
        }
        var answers = [
            (#"{"access_token":"opaque","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}"#, 65),
            (answer(Self.jwt(Self.grantClaims(), typ: "JWT")), 65),
        ]
        let changes: [[String: String?]] = [
            ["aud": #""https://elsewhere.example""#], ["aud": nil],
            ["aud": #"["http://127.0.0.1:9001","https://elsewhere.example"]"#],
            ["resource": #""https://other.example/mcp""#], ["resource": nil],
            ["client_id": #""someone-else""#], ["client_id": nil],
            ["iss": #""https://another-idp.example""#], ["iss": nil],
        ]
        answers += changes.map { (answer(Self.jwt(Self.grantClaims($0))), 65) }
        for (answer, code) in answers {
            let store = MemoryStore()
            try storeIdPLogin(store)
            try storeExpiredResource(store)
            let t = ScriptedTransport([ScriptedTransport.json(answer)])
            XCTAssertThrowsError(try refresher(store, t).usable(resourceID, minValid: 60), answer) { e in
                XCTAssertEqual((e as? TokenVaultError)?.exitCode, Int32(code), "\(e)")
                XCTAssertTrue("\(e)".contains("nothing was sent on"), "\(e)")
            }
            XCTAssertEqual(t.requests.count, 1, "nothing went to the resource's server")
            XCTAssertEqual(try store.load(resourceID)?.accessToken, "old")
        }
    }

    /// An expired ID token: the IdP login is renewed (its refresh token) before the exchange.
    func testAnExpiredIdTokenRenewsTheIdPLoginFirst() throws {
        let store = MemoryStore()
        try storeIdPLogin(store, idTokenExp: 990)
        try storeExpiredResource(store)
        let fresh = Self.jwt(#"{"sub":"u","exp":4600}"#)
        let jag = Self.jwt(Self.grantClaims())
        let t = ScriptedTransport([
            ScriptedTransport.json(
                #"{"access_token":"idp-at2","refresh_token":"idp-rt2","id_token":"\#(fresh)","expires_in":3600}"#),
            ScriptedTransport.json(
                #"{"access_token":"\#(jag)","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag"}"#),
            ScriptedTransport.json(#"{"access_token":"new","expires_in":3600}"#),
        ])
        XCTAssertEqual(try refresher(store, t).usable(resourceID, minValid: 60)?.accessToken, "new")
        XCTAssertEqual(form(t.requests[0])["grant_type"], "refresh_token")
        XCTAssertEqual(form(t.requests[1])["subject_token"], fresh, "the renewed login's ID token is traded")
        XCTAssertEqual(try store.load(idpID)?.refreshToken, "idp-rt2", "the rotated refresh token kept")
    }

    func testTheTableIsChecked() throws {
        let cases = [
            ("idp = \"corp\"", "idp = \"\"", "needs idp"),
            ("idp = \"corp\"", "idp = \"notes\"", "idp names the provider itself"),
            (
                "scopes = [\"read\"]", "scopes = [\"read\"]\nsubject_token_type = \"access_token\"",
                "must be id_token or refresh_token"
            ),
            (
                "scopes = [\"read\"]", "scopes = [\"read\"]\nsubject_token_file = \"/x\"",
                "takes its subject from the login of corp"
            ),
        ]
        for (from, to, message) in cases {
            let config = try Config.parse(Self.config.replacingOccurrences(of: from, with: to))
            XCTAssertThrowsError(try OAuth2Provider.resolve("notes", config: config, configPath: "c"), to) { e in
                XCTAssertEqual((e as? TokenVaultError)?.exitCode, 78)
                XCTAssertTrue("\(e)".contains(message), "\(e)")
            }
        }
        // An IdP whose own subject is the resource's table: a loop, refused.
        let loop = try Config.parse(
            Self.config.replacingOccurrences(
                of: "client_id = \"idp-client\"",
                with: "client_id = \"idp-client\"\ngrant = \"token_exchange\"\nsubject_provider = \"notes\""))
        XCTAssertThrowsError(try OAuth2Provider.resolve("notes", config: loop, configPath: "c")) { e in
            XCTAssertTrue("\(e)".contains("goes round in a loop (notes → corp → notes)"), "\(e)")
        }
    }
}
