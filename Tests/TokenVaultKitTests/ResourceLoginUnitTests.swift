import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// The decisions of a login by URL (docs/providers.md, "Login by URL"), on
/// doubles: which client (configured, kept, registered), which scopes, what
/// a refusal leaves. End-to-end classes keep what needs a browser or a server.
final class ResourceLoginUnitTests: XCTestCase {
    let issuer = "https://auth.example.com"
    let resource = "https://mcp.example.com/mcp"
    var runtime: String!
    let notes = Locked<[String]>([])
    var said: [String] { notes.withLock { $0 } }

    override func setUp() { runtime = NSTemporaryDirectory() + "tv-rlogin-" + UUID().uuidString.prefix(8) }
    override func tearDown() { try? FileManager.default.removeItem(atPath: runtime) }

    func server(registration: Bool = true, scopes: [String] = ["files:read"]) -> ResourceServer {
        var s = ResourceServer(
            resource: resource, issuer: issuer, authorizeURL: issuer + "/authorize", tokenURL: issuer + "/token",
            registrationURL: registration ? issuer + "/register" : nil, revokeURL: nil, scopes: scopes)
        s.scopesSupported = scopes
        return s
    }

    func login(
        _ store: MemoryStore, _ transport: ScriptedTransport, config: String = "", scopes: [String] = [],
        registerAgain: Bool = false
    ) throws -> ResourceLogin {
        var options = ResourceLogin.Options()
        options.scopes = scopes
        options.registerAgain = registerAgain
        return ResourceLogin(
            config: try Config.parse(config), vault: CredentialVault(store: store, runtimeDirectory: runtime),
            transport: transport, clock: FixedClock(1_000),
            notices: Notices(
                warning: { _ in }, notice: { [notes] line in notes.withLock { $0.append(line) } }, later: { _ in },
                passOn: { _ in }),
            configPath: "config.toml", backendName: { "memory" }, options: options)
    }

    static func registered(_ id: String) -> Result<HTTPResponse, TokenVaultError> {
        ScriptedTransport.json(
            #"{"client_id":"\#(id)","token_endpoint_auth_method":"none"}"#,
            status: 201)
    }

    /// A port nothing listens on, for a kept registration's redirect.
    func freeRedirect() throws -> String { try ResourceClient.newRedirectURI() }

    func testARefusedRegistrationKeepsNothing() throws {
        let store = MemoryStore()
        let t = ScriptedTransport([
            ScriptedTransport.json(#"{"error":"invalid_client_metadata","error_description":"no"}"#, status: 400)
        ])
        let l = try login(store, t)
        XCTAssertThrowsError(try l.client(server(), scopes: ["files:read"])) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 76)
        }
        XCTAssertEqual(t.requests.map(\.url), [issuer + "/register"])
        XCTAssertEqual(try l.vault.registrations(for: issuer).count, 0, "nothing kept")
    }

    /// The user's confidential client for another resource of the same
    /// issuer is not used: a registration is made, or, where the server has
    /// none, the error names the `resources` line that would allow it.
    func testAClientForAnotherResourceIsNotUsed() throws {
        let config = """
            [providers.mine]
            issuer = "\(issuer)"
            client_id = "mine"
            client_secret = "s3cret"
            resources = ["https://other.example.com/mcp"]
            """
        let t = ScriptedTransport([Self.registered("fresh-1")])
        XCTAssertEqual(try login(MemoryStore(), t, config: config).client(server(), scopes: ["files:read"]), "fresh-1")
        let none = ScriptedTransport([])
        XCTAssertThrowsError(
            try login(MemoryStore(), none, config: config).client(server(registration: false), scopes: [])
        ) { error in
            let e = error as? TokenVaultError
            XCTAssertEqual(e?.exitCode, 78)
            XCTAssertTrue(e?.errorText.contains("does not list \(self.resource)") == true, "\(error)")
            XCTAssertTrue(e?.hint?.contains("resources = [\"\(self.resource)\"]") == true, "\(error)")
        }
        XCTAssertTrue(none.requests.isEmpty)
        // Listed for it: the user's client, and nothing is registered.
        let listed = config.replacingOccurrences(of: "https://other.example.com/mcp", with: resource)
        XCTAssertEqual(try login(MemoryStore(), none, config: listed).client(server(), scopes: []), "mine")
    }

    /// Step-up keeps what the stored grant holds; another issuer's grant adds nothing.
    func testAScopeStepUpKeepsWhatIsHeld() throws {
        let store = MemoryStore()
        let id = CredentialID(service: try ServiceKey(resource: resource))
        var c = Credential(
            service: id.service, type: .oauth2, accessToken: "a", refreshToken: "r", scope: "files:read", updatedAt: 1)
        c.issuer = issuer
        try store.save(c)
        let l = try login(store, ScriptedTransport([]), scopes: ["files:write"])
        XCTAssertEqual(try l.scopes(server(), id: id).wanted, ["files:read", "files:write"])
        c.issuer = "https://elsewhere.example.com"
        try store.save(c)
        XCTAssertEqual(try l.scopes(server(), id: id).wanted, ["files:write"])
    }

    /// A confidential client of the user's asks for its configured scopes
    /// (none: the server's default), never the resource's; a public one the resource's.
    func testAConfidentialClientsScopesAreItsOwn() throws {
        let id = CredentialID(service: try ServiceKey(resource: resource))
        let confidential = """
            [providers.mine]
            issuer = "\(issuer)"
            client_id = "mine"
            client_secret = "s3cret"
            resources = ["\(resource)"]
            scopes = ["tools:run"]
            """
        let big = server(scopes: ["files:read", "admin:all"])
        let own = try login(MemoryStore(), ScriptedTransport([]), config: confidential).scopes(big, id: id)
        XCTAssertEqual(own.wanted, ["tools:run"])
        XCTAssertEqual(own.kept, ["tools:run"])
        let unscoped = confidential.replacingOccurrences(of: "scopes = [\"tools:run\"]", with: "")
        XCTAssertEqual(try login(MemoryStore(), ScriptedTransport([]), config: unscoped).scopes(big, id: id).wanted, [])
        let publicClient = confidential.replacingOccurrences(of: "client_secret = \"s3cret\"", with: "")
        XCTAssertEqual(
            try login(MemoryStore(), ScriptedTransport([]), config: publicClient).scopes(big, id: id).wanted,
            ["files:read", "admin:all"])
    }

    /// A kept registration that covers the scopes is used as it is; one
    /// that does not is replaced by a registration asking for both.
    func testAKeptRegistrationIsReusedOrWidened() throws {
        let store = MemoryStore()
        let vault = CredentialVault(store: store, runtimeDirectory: runtime)
        try vault.keep(
            ClientRegistration(
                issuer: issuer, clientID: "kept-1", clientSecret: nil, redirectURI: try freeRedirect(),
                registeredAt: 1, scopes: ["files:read"], tokenEndpointAuthMethod: "none"))
        let quiet = ScriptedTransport([])
        XCTAssertEqual(try login(store, quiet).client(server(), scopes: ["files:read"]), "kept-1")
        XCTAssertTrue(quiet.requests.isEmpty, "no request for a kept registration")
        let t = ScriptedTransport([Self.registered("wider-2")])
        XCTAssertEqual(try login(store, t).client(server(), scopes: ["files:write"]), "wider-2")
        let body = String(decoding: try XCTUnwrap(t.requests.first?.body), as: UTF8.self)
        XCTAssertTrue(body.contains("files:read") && body.contains("files:write"), body)
        XCTAssertTrue(said.contains { $0.contains("does not cover every scope") }, "\(said)")
        XCTAssertEqual(Set(try vault.registrations(for: issuer).map(\.clientID)), ["kept-1", "wider-2"])
        // --register-again: none kept is used.
        let again = ScriptedTransport([Self.registered("again-3")])
        XCTAssertEqual(
            try login(store, again, registerAgain: true).client(server(), scopes: ["files:read"]), "again-3")
    }

    /// The client authentication: the configured provider's, else the
    /// registration's answer, else what the server lists.
    func testClientAuthenticationFollowsWhoSaysIt() throws {
        let store = MemoryStore()
        try CredentialVault(store: store, runtimeDirectory: runtime).keep(
            ClientRegistration(
                issuer: issuer, clientID: "reg-1", clientSecret: "sec", redirectURI: try freeRedirect(),
                registeredAt: 1, scopes: [], tokenEndpointAuthMethod: "client_secret_post"))
        var s = server()
        s.tokenEndpointAuthMethods = ["client_secret_basic", "client_secret_post"]
        XCTAssertEqual(try login(store, ScriptedTransport([])).clientAuth(s, clientID: "reg-1"), "body")
        // A registration that said nothing: what the server lists first.
        try CredentialVault(store: store, runtimeDirectory: runtime).keep(
            ClientRegistration(
                issuer: issuer, clientID: "reg-2", clientSecret: "sec", redirectURI: try freeRedirect(),
                registeredAt: 2, scopes: [], tokenEndpointAuthMethod: nil))
        XCTAssertEqual(try login(store, ScriptedTransport([])).clientAuth(s, clientID: "reg-2"), "basic")
        let configured = """
            [providers.mine]
            issuer = "\(issuer)"
            client_id = "mine"
            client_secret = "s"
            client_auth = "body"
            resources = ["\(resource)"]
            """
        s.tokenEndpointAuthMethods = ["client_secret_basic"]
        XCTAssertEqual(
            try login(store, ScriptedTransport([]), config: configured).clientAuth(s, clientID: "mine"), "body")
    }

    /// Which flow a login runs: what was asked, else what can work here.
    func testTheFlowIsAskedOrWhatCanWorkHere() {
        let ssh = Settings(environment: ["HOME": "/nonexistent", "SSH_CONNECTION": "10.0.0.1 22 10.0.0.2 22"])
        let desktop = Settings(environment: ["HOME": "/nonexistent", "DISPLAY": ":0", "BROWSER": "true"])
        XCTAssertEqual(
            LoginFlow.choose(asked: nil, grant: .authorizationCode, hasDevice: true, settings: desktop).flow, .browser)
        let device = LoginFlow.choose(asked: nil, grant: .authorizationCode, hasDevice: true, settings: ssh)
        XCTAssertEqual(device.flow, .device)
        XCTAssertTrue(device.said?.contains("an SSH session without a display") == true, "\(device)")
        let paste = LoginFlow.choose(asked: nil, grant: .authorizationCode, hasDevice: false, settings: ssh)
        XCTAssertEqual(paste.flow, .paste)
        XCTAssertTrue(paste.said?.contains("paste mode") == true)
        XCTAssertEqual(
            LoginFlow.choose(asked: .browser, grant: .authorizationCode, hasDevice: true, settings: ssh).flow, .browser)
        XCTAssertNil(
            LoginFlow.choose(asked: .noBrowser, grant: .authorizationCode, hasDevice: true, settings: desktop).said)
        XCTAssertEqual(
            LoginFlow.choose(asked: .noBrowser, grant: .clientCredentials, hasDevice: false, settings: ssh).flow,
            .clientCredentials)
        XCTAssertEqual(
            LoginFlow.choose(asked: .device, grant: .clientCredentials, hasDevice: false, settings: ssh).flow, .device)
    }
}
