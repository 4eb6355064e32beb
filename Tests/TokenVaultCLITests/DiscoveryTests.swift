import Foundation
import TokenVaultKit
import XCTest

/// docs/providers.md against the authlib provider: OpenID Connect / RFC 8414 discovery
/// with its issuer check, id_token claims, the RFC 7523 jwt-bearer grant
/// (authlib's JWTBearerGrant) and client assertions (authlib's
/// JWTBearerClientAssertion) signed with RS256, ES256 and HS256 keys made by
/// openssl for the class. The provider starts once for the class.
final class DiscoveryTests: XCTestCase {
    nonisolated(unsafe) static var provider: LocalProvider!
    nonisolated(unsafe) static var keys = ""
    static let robot = "robot@tv-test.iam.gserviceaccount.com"

    override class func setUp() {
        keys = NSTemporaryDirectory() + "tv-keys-" + UUID().uuidString.prefix(8)
        try! FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        for (name, kind) in [
            ("sa-rsa", "rsa"), ("sa-ec", "ec"), ("tv-pkjwt-rsa", "rsa"), ("tv-pkjwt-ec", "ec"), (robot, "rsa"),
        ] {
            makeKey(name, kind)
            let pub = runProcess(
                "/usr/bin/openssl",
                ["pkey", "-in", "\(keys)/\(name).pem", "-pubout", "-out", "\(keys)/\(name).pub.pem"], env: [:])
            precondition(pub.status == 0, pub.stderr)
        }
        provider = try! LocalProvider(extra: ["--keys", keys])
    }

    override class func tearDown() {
        provider.stop()
        try? FileManager.default.removeItem(atPath: keys)
    }

    /// A private key, 0600: RSA 2048 or EC P-256 (or what `args` ask for).
    static func makeKey(_ name: String, _ kind: String, args: [String]? = nil, in dir: String? = nil) {
        let keys = dir ?? Self.keys
        let algorithm =
            kind == "rsa"
            ? ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
            : kind == "ec" ? ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"] : []
        let r = runProcess(
            "/usr/bin/openssl", ["genpkey"] + (args ?? algorithm) + ["-out", "\(keys)/\(name).pem"], env: [:])
        precondition(r.status == 0, r.stderr)
        chmod("\(keys)/\(name).pem", 0o600)
    }

    var provider: LocalProvider { Self.provider }
    var base: String { provider.base }

    func sandbox(_ toml: String) throws -> Sandbox {
        let s = Sandbox()
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        try s.writeConfig(toml)
        return s
    }

    func stat(_ key: String) throws -> Int { try provider.stats()[key] ?? 0 }

    // MARK: jwt_bearer

    func testServiceAccountsSignTheirOwnAssertionsAndGetMintsANewTokenOnExpiry() throws {
        let s = try sandbox(
            """
            [providers.sarsa]
            service = "rsa.sa.example"
            token_url = "\(base)/token"
            grant = "jwt_bearer"
            client_id = "sa-rsa"
            private_key_file = "\(Self.keys)/sa-rsa.pem"
            scopes = ["read"]

            [providers.saec]
            service = "ec.sa.example"
            token_url = "\(base)/token"
            grant = "jwt_bearer"
            client_id = "sa-ec"
            private_key_file = "\(Self.keys)/sa-ec.pem"
            scopes = ["read"]
            """)
        for name in ["sarsa", "saec"] {
            let assertions = try stat("assertions")
            let login = s.tv("login", name)
            XCTAssertEqual(login.status, 0, login.stderr)
            XCTAssertEqual(try stat("assertions"), assertions + 1, "authlib's JWTBearerGrant took the assertion")
            let token = s.tv("get", name).out
            XCTAssertEqual(provider.resourceStatus(token), 200)
            XCTAssertEqual(s.tv("get", name).out, token, "a valid token signs nothing")
            XCTAssertEqual(try stat("assertions"), assertions + 1)
            XCTAssertEqual(s.tv("status", name).status, 0)
            XCTAssertTrue(s.tv("status", name).stdout.contains("can refresh: yes"))
            // Expired: get mints a new one with a new assertion (a new jti: the provider refuses a reused one).
            try s.expireStored(name)
            let fresh = s.tv("get", name)
            XCTAssertEqual(fresh.status, 0, fresh.stderr)
            XCTAssertNotEqual(fresh.out, token)
            XCTAssertEqual(provider.resourceStatus(fresh.out), 200)
            XCTAssertEqual(try stat("assertions"), assertions + 2)
            XCTAssertFalse(fresh.stderr.contains("eyJ"), "no assertion on stderr")
        }
    }

    func testAGoogleServiceAccountKeyFileNamesItsOwnAccount() throws {
        let pem = try String(contentsOfFile: "\(Self.keys)/\(Self.robot).pem", encoding: .utf8)
        let json = try JSONSerialization.data(withJSONObject: [
            "type": "service_account", "project_id": "tv-test", "private_key_id": "k-0001", "private_key": pem,
            "client_email": Self.robot, "client_id": "1234567890", "token_uri": "\(base)/token",
        ])
        let path = NSTemporaryDirectory() + "tv-sa-" + UUID().uuidString.prefix(8) + ".json"
        _ = FileManager.default.createFile(atPath: path, contents: json, attributes: [.posixPermissions: 0o600])
        defer { try? FileManager.default.removeItem(atPath: path) }
        let s = try sandbox(
            """
            [providers.robot]
            service = "robot.sa.example"
            token_url = "\(base)/token"
            grant = "jwt_bearer"
            credentials_file = "\(path)"
            scopes = ["read"]
            """)
        let r = s.tv("login", "robot")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(provider.resourceStatus(s.tv("get", "robot").out), 200)
        // Readable by others: refused (77), before anything is sent.
        chmod(path, 0o644)
        try s.expireStored("robot")
        let open = s.tv("get", "robot")
        XCTAssertEqual(open.status, 77, open.stderr)
        XCTAssertTrue(open.stderr.contains("readable by others"), open.stderr)
    }

    // MARK: client assertions

    func testPrivateKeyJWTAndClientSecretJWTAuthenticateEveryTokenCall() throws {
        let s = try sandbox(
            """
            [providers.pkrsa]
            service = "pkrsa.example"
            authorize_url = "\(base)/authorize"
            token_url = "\(base)/token"
            revoke_url = "\(base)/revoke"
            client_id = "tv-pkjwt-rsa"
            client_auth = "private_key_jwt"
            private_key_file = "\(Self.keys)/tv-pkjwt-rsa.pem"
            scopes = ["read"]

            [providers.pkec]
            service = "pkec.example"
            token_url = "\(base)/token"
            grant = "client_credentials"
            client_id = "tv-pkjwt-ec"
            client_auth = "private_key_jwt"
            private_key_file = "\(Self.keys)/tv-pkjwt-ec.pem"
            scopes = ["read"]

            [providers.csjwt]
            service = "csjwt.example"
            token_url = "\(base)/token"
            grant = "client_credentials"
            client_id = "tv-csjwt"
            client_auth = "client_secret_jwt"
            client_secret = "csjwt-secret-0123456789abcdef"
            scopes = ["read"]
            """)
        let before = try stat("client_assertions")
        // Code exchange, then refresh (the rotating refresh grant), then revoke: each with an assertion.
        XCTAssertEqual(s.tv("login", "pkrsa", limit: 60).status, 0)
        try s.expireStored("pkrsa")
        XCTAssertEqual(s.tv("status", "pkrsa").status, 0, "still refreshable")
        let refreshed = s.tv("get", "pkrsa")
        XCTAssertEqual(refreshed.status, 0, refreshed.stderr)
        XCTAssertEqual(provider.resourceStatus(refreshed.out), 200)
        XCTAssertEqual(s.tv("revoke", "pkrsa").status, 0)
        XCTAssertEqual(provider.resourceStatus(refreshed.out), 401, "the provider took the revocation")
        XCTAssertEqual(try stat("client_assertions"), before + 3)
        for name in ["pkec", "csjwt"] {
            let r = s.tv("login", name)
            XCTAssertEqual(r.status, 0, "\(name): \(r.stderr)")
            XCTAssertEqual(provider.resourceStatus(s.tv("get", name).out), 200)
        }
        XCTAssertEqual(try stat("client_assertions"), before + 5)
        // The wrong secret: the provider refuses the client (76), nothing stored changes.
        try s.writeConfig(
            """
            [providers.csjwt]
            service = "csjwt.example"
            token_url = "\(base)/token"
            grant = "client_credentials"
            client_id = "tv-csjwt"
            client_auth = "client_secret_jwt"
            client_secret = "not-the-secret"
            """)
        let stored = s.tv("get", "csjwt").out
        let wrong = s.tv("login", "csjwt")
        XCTAssertEqual(wrong.status, 76, wrong.stderr)
        XCTAssertTrue(wrong.stderr.contains("invalid_client"), wrong.stderr)
        XCTAssertFalse(wrong.stderr.contains("not-the-secret"))
        XCTAssertEqual(s.tv("get", "csjwt").out, stored)
    }

    // MARK: keys that cannot sign

    func testKeysThatCannotSignAreClearErrorsAndNothingStoredIsLost() throws {
        Self.makeKey("ed25519", "", args: ["-algorithm", "ED25519"])
        Self.makeKey("rsa1024", "", args: ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"])
        Self.makeKey("p384", "", args: ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"])
        let encrypted = runProcess(
            "/usr/bin/openssl",
            [
                "pkey", "-in", "\(Self.keys)/sa-rsa.pem", "-aes256", "-passout", "pass:pw", "-out",
                "\(Self.keys)/encrypted.pem",
            ], env: [:])
        XCTAssertEqual(encrypted.status, 0, encrypted.stderr)
        chmod("\(Self.keys)/encrypted.pem", 0o600)
        _ = FileManager.default.createFile(
            atPath: "\(Self.keys)/garbage.pem", contents: Data("not a key\n".utf8),
            attributes: [.posixPermissions: 0o600])
        let cases: [(String, Int32, String)] = [
            ("missing.pem", 78, "cannot read the private key"),
            ("garbage.pem", 78, "not an unencrypted PEM private key"),
            ("encrypted.pem", 78, "not an unencrypted PEM private key"),
            ("ed25519.pem", 78, "neither RSA nor EC P-256"),
            ("rsa1024.pem", 78, "RS256 needs 2048"),
            ("p384.pem", 78, "ES256 needs P-256"),
        ]
        for (file, code, message) in cases {
            let s = try sandbox(
                """
                [providers.sa]
                service = "sa.example"
                token_url = "\(base)/token"
                grant = "jwt_bearer"
                client_id = "sa-rsa"
                private_key_file = "\(Self.keys)/\(file)"
                """)
            XCTAssertEqual(
                s.tv("set", "sa", "--provider", "sa", stdin: #"{"access_token":"kept","expires_at":1}"#).status, 0)
            let r = s.tv("get", "sa")
            XCTAssertEqual(r.status, code, "\(file): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(message), "\(file): \(r.stderr)")
            XCTAssertEqual(r.stderr.split(separator: "\n").count <= 2, true, r.stderr)
            XCTAssertTrue(
                s.tv("get", "sa", "--format", "json").stdout.contains("\"kept\""), "the stored record is untouched")
        }
        // A clock the server finds too far off: it refuses the assertion, clearly.
        let skewed = try LocalProvider(extra: ["--keys", Self.keys, "--clock-skew", "900"])
        defer { skewed.stop() }
        let s = try sandbox(
            """
            [providers.sa]
            service = "sa.example"
            token_url = "\(skewed.base)/token"
            grant = "jwt_bearer"
            client_id = "sa-rsa"
            private_key_file = "\(Self.keys)/sa-rsa.pem"
            """)
        let r = s.tv("login", "sa")
        XCTAssertEqual(r.status, 4, r.stderr)
        XCTAssertTrue(r.stderr.contains("invalid_grant") && r.stderr.contains("expired"), r.stderr)
        // get fetches a first token itself, is refused the same way, and then sends the same no more.
        let first = s.tv("get", "sa")
        XCTAssertEqual(first.status, 4, first.stderr)
        let again = s.tv("get", "sa")
        XCTAssertEqual(again.status, 4, again.stderr)
        XCTAssertTrue(again.stderr.contains("has not changed since, so nothing was sent"), again.stderr)
        XCTAssertEqual(s.tv("get", "sa", "--format", "json", "--no-refresh").status, 3, "nothing stored")
    }

    // MARK: discovery

    func testDiscoveryFillsTheEndpointsOnceAndGetNeverFetchesIt() throws {
        let s = try sandbox(
            """
            [providers.oidc]
            issuer = "\(base)/good"
            client_id = "tv-client"
            client_secret = "tv-secret"
            scopes = ["openid", "read"]
            """)
        let fetched = try stat("discovery_good")
        let login = s.tv("login", "oidc", limit: 60)
        XCTAssertEqual(login.status, 0, login.stderr)
        XCTAssertTrue(
            login.stderr.contains("\(base)/authorize?"), "the discovered authorization endpoint: \(login.stderr)")
        XCTAssertEqual(try stat("discovery_good"), fetched + 1)
        // The id_token is kept; status shows its claims, get prints it on request.
        let status = s.tv("status", "oidc")
        XCTAssertTrue(
            status.stdout.contains(
                "id token:    sub alice-0001, email alice@example.test, name Alice Example (not verified)"),
            status.stdout)
        XCTAssertTrue(
            status.stdout.contains("service:     127.0.0.1:\(provider.port)"), "the issuer's host: \(status.stdout)")
        XCTAssertEqual(s.tv("get", "oidc", "--field", "id_token").out.split(separator: ".").count, 3)
        let json = s.tv("status", "oidc", "--json").stdout
        XCTAssertTrue(json.contains("\"email\":\"alice@example.test\""), json)
        // A refresh uses the cached document; a valid get never looks at it, even when gone.
        try s.expireStored("127.0.0.1:\(provider.port)")
        XCTAssertEqual(s.tv("get", "oidc").status, 0)
        _ = s.shell(#"rm -rf "$HOME/.cache/tokenvault/discovery""#)
        XCTAssertEqual(s.tv("get", "oidc").status, 0)
        XCTAssertEqual(try stat("discovery_good"), fetched + 1, "fetched once")
        // Explicit keys win over the document.
        try s.writeConfig(
            """
            [providers.oidc]
            issuer = "\(base)/good"
            client_id = "tv-client"
            client_secret = "tv-secret"
            authorize_url = "\(base)/authorize?explicit=1"
            """)
        let explicit = s.tv("login", "oidc", limit: 60)
        XCTAssertTrue(explicit.stderr.contains("\(base)/authorize?explicit=1&"), explicit.stderr)
        // RFC 8414 where there is no OpenID configuration.
        let as8414 = try sandbox(
            """
            [providers.as]
            issuer = "\(base)/as"
            client_id = "tv-client"
            client_secret = "tv-secret"
            scopes = ["read"]
            """)
        XCTAssertEqual(as8414.tv("login", "as", limit: 60).status, 0)
        XCTAssertEqual(provider.resourceStatus(as8414.tv("get", "as").out), 200)
    }

    func testABadIssuerOrDocumentIsRefusedAndNothingIsStored() throws {
        let cases: [(String, Int32, String)] = [
            ("\(base)/liar", 78, "is for issuer 'https://idp.evil.example'"),
            ("\(base)/broken", 65, "has no token_endpoint"),
            ("\(base)/nowhere", 65, "no discovery document"),
            ("http://127.0.0.1:1/down", 75, "cannot reach"),
            ("http://idp.example.com/realm", 78, "issuer must be an https:// URL"),
        ]
        for (issuer, code, message) in cases {
            let s = try sandbox(
                """
                [providers.idp]
                service = "idp.example"
                issuer = "\(issuer)"
                client_id = "tv-client"
                client_secret = "tv-secret"
                """)
            let r = s.tv("login", "idp", limit: 60)
            XCTAssertEqual(r.status, code, "\(issuer): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(message), "\(issuer): \(r.stderr)")
            XCTAssertEqual(s.tv("get", "idp").status, 3, "nothing stored")
        }
    }

    func testARedirectNamingAnotherIssuerStoresNothing() throws {
        let s = try sandbox("")
        let issuer = "\(base)/good"
        let mixedUp = s.tv(
            "login", "idp", "--issuer", issuer, "--client-id", "tv-public",
            env: ["BROWSER_MODE": "iss", "BROWSER_ISS": "https://idp.evil.example"], limit: 60)
        XCTAssertEqual(mixedUp.status, 65, mixedUp.stderr)
        XCTAssertTrue(
            mixedUp.stderr.contains(
                "mix-up: the redirect comes from another authorization server (iss https://idp.evil.example, not \(issuer)); nothing was stored"
            ),
            mixedUp.stderr)
        XCTAssertEqual(s.tv("get", "idp").status, 3)
        XCTAssertFalse(s.tv("providers").stdout.contains("idp "), "a login that failed keeps no provider either")
        let named = s.tv(
            "login", "idp", "--issuer", issuer, "--client-id", "tv-public",
            env: ["BROWSER_MODE": "iss", "BROWSER_ISS": issuer],
            limit: 60)
        XCTAssertEqual(named.status, 0, named.stderr)
        XCTAssertEqual(s.tv("get", "idp").status, 0)
    }

    func testALoginThatGivesNoRefreshTokenSaysItCannotRenew() throws {
        let s = try sandbox("")
        let r = s.tv("login", "idp", "--issuer", "\(base)/good", "--client-id", "tv-once", limit: 60)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("idp gave no refresh token: the token expires in "), r.stderr)
        XCTAssertTrue(r.stderr.contains("(some servers give one only for --scope offline_access)"), r.stderr)
        // With a refresh token, nothing is said.
        let renewing = s.tv(
            "login", "idp2", "--issuer", "\(base)/good", "--client-id", "tv-public", "--account", "other", limit: 60)
        XCTAssertEqual(renewing.status, 0, renewing.stderr)
        XCTAssertFalse(renewing.stderr.contains("no refresh token"), renewing.stderr)
    }

    func testLoginWithAnIssuerAndNoConfigKeepsTheProvider() throws {
        let s = try sandbox("")
        let derived = "127-0-0-1-\(provider.port)-good"
        let r = s.tv("login", "--issuer", "\(base)/good", "--client-id", "tv-public", limit: 60)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("logged in to \(derived) as Alice Example"), r.stderr)
        let providers = s.tv("providers").stdout
        XCTAssertTrue(providers.contains("\(derived)  oauth2  127.0.0.1:\(provider.port)"), providers)
        XCTAssertTrue(providers.contains("login --issuer"), providers)
        XCTAssertEqual(s.tv("get", "\(derived)").status, 0)
        // The refresh finds it too.
        try s.expireStored("127.0.0.1:\(provider.port)")
        XCTAssertEqual(s.tv("get", "\(derived)").status, 0)
        // A name of one's own; a name taken by a preset or the config is refused.
        XCTAssertEqual(
            s.tv("login", "corp", "--issuer", "\(base)/good", "--client-id", "tv-public", "--account", "two", limit: 60)
                .status, 0)
        XCTAssertTrue(s.tv("providers").stdout.contains("corp"))
        XCTAssertEqual(s.tv("login", "github", "--issuer", "\(base)/good", "--client-id", "x").status, 64)
        XCTAssertEqual(s.tv("login", "--issuer", "\(base)/good").status, 64, "--client-id is needed")
        // A failed discovery keeps nothing.
        XCTAssertEqual(s.tv("login", "liar", "--issuer", "\(base)/liar", "--client-id", "tv-public").status, 78)
        XCTAssertFalse(s.tv("providers").stdout.contains("liar"))
    }

    /// OpenID providers as they are: a login asking for openid sends a fresh
    /// nonce (the provider refuses without one) and checks it in the ID
    /// token: an ID token with another nonce stores nothing (65).
    func testAnOpenIDLoginSendsANonceAndChecksIt() throws {
        let own = try LocalProvider()
        defer { own.stop() }
        let s = Sandbox()
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        let r = s.tv("login", "--issuer", "\(own.base)/good", "--client-id", "tv-public", limit: 60)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try own.stats()["nonce_missing"] ?? 0, 0, "the nonce was sent")
        let replay = runProcess("/usr/bin/curl", ["-s", "-X", "POST", own.base + "/admin/replay-nonce"], env: [:])
        XCTAssertEqual(replay.status, 0)
        let other = s.tv(
            "login", "--issuer", "\(own.base)/good", "--client-id", "tv-public", "--account", "replayed", limit: 60)
        XCTAssertEqual(other.status, 65, other.stderr)
        XCTAssertTrue(other.stderr.contains("nonce"), other.stderr)
        XCTAssertEqual(s.tv("get", "127.0.0.1:\(own.port)", "--account", "replayed").status, 3, "nothing stored")
    }

    /// Two issuers on one host: a name stays with its issuer, and a refresh
    /// token goes to no other, whatever the config says later.
    func testANameIsNeverPointedAtAnotherIssuerAndARefreshTokenGoesOnlyToItsOwn() throws {
        let other = try LocalProvider()
        defer { other.stop() }
        let s = try sandbox("")
        let first = "127-0-0-1-\(provider.port)-good", second = "127-0-0-1-\(other.port)-good"
        let file = s.env["XDG_CONFIG_HOME"]! + "/tokenvault/providers.toml"
        func kept() -> String { (try? String(contentsOfFile: file, encoding: .utf8)) ?? "" }
        XCTAssertEqual(s.tv("login", "--issuer", "\(base)/good", "--client-id", "tv-public", limit: 60).status, 0)
        // A key the user adds to the kept table stays through later logins.
        try (kept() + "scopes = [\"openid\", \"read\"]\n").write(toFile: file, atomically: true, encoding: .utf8)
        let login = s.tv("login", "--issuer", "\(other.base)/good", "--client-id", "tv-public", limit: 60)
        XCTAssertEqual(login.status, 0, login.stderr)
        XCTAssertTrue(login.stderr.contains("logged in to \(second)"), "the port makes another name: \(login.stderr)")
        var text = kept()
        XCTAssertTrue(
            text.contains(
                "[providers.\"\(first)\"]\nissuer = \"\(base)/good\"\nclient_id = \"tv-public\"\nscopes = [\"openid\", \"read\"]\n"
            ), text)
        XCTAssertTrue(text.contains("[providers.\"\(second)\"]\nissuer = \"\(other.base)/good\""), text)
        // The first name, asked for the other issuer: refused, naming both; nothing changes.
        let taken = s.tv("login", first, "--issuer", "\(other.base)/good", "--client-id", "attacker", limit: 60)
        XCTAssertEqual(taken.status, 64, taken.stderr)
        XCTAssertTrue(
            taken.stderr.contains("\(base)/good") && taken.stderr.contains("\(other.base)/good")
                && taken.stderr.contains("--name"), taken.stderr)
        XCTAssertEqual(kept(), text)
        // --name keeps it under another name.
        XCTAssertEqual(
            s.tv(
                "login", "--name", "mine", "--issuer", "\(other.base)/good", "--client-id", "tv-public", "--account",
                "m", limit: 60
            ).status, 0)
        text = kept()
        XCTAssertTrue(text.contains("[providers.\"mine\"]"), text)
        // Four logins at once keep four tables.
        let runs = Locked<[Run]>([])
        let issuer = "\(base)/good"
        DispatchQueue.concurrentPerform(iterations: 4) { i in
            let r = s.tv(
                "login", "--name", "team\(i)", "--issuer", issuer, "--client-id", "tv-public", "--account", "t\(i)",
                limit: 60)
            runs.mutate { $0.append(r) }
        }
        XCTAssertEqual(runs.value.filter { $0.status != 0 }.map(\.stderr), [])
        text = kept()
        for i in 0..<4 { XCTAssertTrue(text.contains("[providers.\"team\(i)\"]"), text) }
        XCTAssertTrue(text.contains("scopes = [\"openid\", \"read\"]"), text)
        // The config re-points the first name at the other issuer: its refresh token is not sent there.
        try s.expireStored("127.0.0.1:\(provider.port)")
        try s.writeConfig(
            "[providers.\(first)]\nissuer = \"\(other.base)/good\"\nservice = \"127.0.0.1:\(provider.port)\"\n")
        let before = try other.stats()["refreshes"] ?? 0
        let refused = s.tv("get", first)
        XCTAssertEqual(refused.status, 78, refused.stderr)
        XCTAssertTrue(
            refused.stderr.contains("now names another issuer") && refused.stderr.contains("log in again"),
            refused.stderr)
        XCTAssertEqual(try other.stats()["refreshes"] ?? 0, before, "the other issuer got no refresh token")
        let revoke = s.tv("revoke", first)
        XCTAssertEqual(revoke.status, 78, "nor a revocation: \(revoke.stderr)")
        XCTAssertTrue(revoke.stderr.contains("now names another issuer"), revoke.stderr)
        // Back to its own issuer, it renews as before.
        try s.writeConfig("")
        XCTAssertEqual(s.tv("get", first).status, 0)
    }
}
