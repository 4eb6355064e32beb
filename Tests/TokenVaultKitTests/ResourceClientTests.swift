import FoundationEssentials
import Glibc
import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// The pieces of `login URL` and the bridge that need no server: kept
/// registrations, the client a resource's table resolves to, the table kept
/// in providers.toml, the `iss` a server promises, and stdin's lines.
final class ResourceClientTests: XCTestCase {
    let issuer = "https://auth.example.com"
    let runtime = NSTemporaryDirectory() + "tv-rc-" + String(getpid())

    func registration(_ id: String, at: Int64, scopes: [String] = ["read"]) -> ClientRegistration {
        ClientRegistration(
            issuer: issuer, clientID: id, clientSecret: id == "confidential" ? "s3cret" : nil,
            registrationAccessToken: "rat-\(id)", redirectURI: "http://127.0.0.1:4\(at)/callback", registeredAt: at,
            scopes: scopes)
    }

    func testRegistrationsAreKeptPerClientAndListedNowhere() throws {
        let store = MemoryStore()
        let vault = CredentialVault(store: store, runtimeDirectory: runtime)
        try vault.keep(registration("old", at: 100))
        try vault.keep(registration("confidential", at: 200, scopes: ["read", "write"]))
        try store.save(Credential(service: try ServiceKey(parsing: "auth.example.com"), type: .token, accessToken: "t"))
        XCTAssertEqual(try vault.registrations(for: issuer).map(\.clientID), ["confidential", "old"], "newest first")
        let kept = try XCTUnwrap(try vault.registration(for: issuer, clientID: "confidential"))
        XCTAssertEqual(kept, registration("confidential", at: 200, scopes: ["read", "write"]))
        XCTAssertTrue(kept.covers(["write"]))
        XCTAssertFalse(try XCTUnwrap(try vault.registration(for: issuer, clientID: "old")).covers(["write"]))
        XCTAssertNil(try vault.registration(for: "https://other.example", clientID: "old"))
        // Only the credential is listed; the registrations stay in the backend.
        XCTAssertEqual(try vault.listIDs().map(\.description), ["auth.example.com (default)"])
        XCTAssertEqual(try vault.listLocated().count, 1)
        XCTAssertEqual(try store.listIDs().count, 3)
        XCTAssertThrowsError(try CredentialID.validateAccount("tokenvault:client")) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 64)
        }
    }

    func table(clientID: String?) -> ProviderConfig {
        var t = ProviderConfig()
        t.issuer = issuer
        t.resource = "https://mcp.example.com/mcp"
        t.client_id = clientID
        return t
    }

    func testAResourcesTableTakesItsClientFromTheConfigElseItsRegistration() throws {
        let kept = registration("confidential", at: 200)
        let lookup: (String, String?) throws -> ClientRegistration? = { issuer, id in
            issuer == self.issuer && (id == nil || id == "confidential") ? kept : nil
        }
        let filled = try ResourceClient.filled(table(clientID: "confidential"), config: Config(), registration: lookup)
        XCTAssertEqual(filled.client_id, "confidential")
        XCTAssertEqual(filled.client_secret, "s3cret")
        XCTAssertEqual(filled.redirect_uri, kept.redirectURI)
        XCTAssertEqual(
            try ResourceClient.filled(table(clientID: nil), config: Config(), registration: lookup).client_id,
            "confidential")
        // A provider configured for the issuer wins over any registration, for the resources it lists.
        let corp = """
            [providers.corp]
            issuer = "\(issuer)"
            client_id = "corp-cli"
            client_secret_file = "/etc/secret"
            """
        let config = try Config.parse(corp + "\nresources = [\"https://mcp.example.com/mcp\"]\n")
        let own = try ResourceClient.filled(table(clientID: nil), config: config, registration: lookup)
        XCTAssertEqual(own.client_id, "corp-cli")
        XCTAssertEqual(own.client_secret_file, "/etc/secret")
        // Not listed (or listed elsewhere): a resource that names the issuer gets its own registration.
        for withheld in [corp, corp + "\nresources = [\"https://other.example.com/mcp\"]\n"] {
            let other = try ResourceClient.filled(
                table(clientID: nil), config: try Config.parse(withheld), registration: lookup)
            XCTAssertEqual(other.client_id, "confidential", withheld)
            XCTAssertNil(other.client_secret_file, withheld)
        }
        // A public client of the user's own (no secret, the user signs in) serves any resource of its issuer.
        let public_ = try Config.parse("[providers.corp]\nissuer = \"\(issuer)\"\nclient_id = \"corp-public\"\n")
        XCTAssertEqual(
            try ResourceClient.filled(table(clientID: nil), config: public_, registration: lookup).client_id,
            "corp-public")
        // The enterprise IdP's own table (another's idp, or subject_provider) is the IdP login: a
        // resource that names the IdP's issuer never gets its client unless its resources lists it.
        for naming in ["grant = \"id_jag\"\nidp = \"corp\"", "grant = \"token_exchange\"\nsubject_provider = \"corp\""]
        {
            let idp = try Config.parse(
                "[providers.corp]\nissuer = \"\(issuer)\"\nclient_id = \"corp-public\"\n\n"
                    + "[providers.mcp]\nservice = \"notes.example\"\nissuer = \"https://as.example\"\n"
                    + "client_id = \"notes\"\n\(naming)\n")
            XCTAssertEqual(
                try ResourceClient.filled(table(clientID: nil), config: idp, registration: lookup).client_id,
                "confidential", "a registration of its own, never the IdP login's client")
            XCTAssertEqual(
                ResourceClient.withheld(issuer: issuer, resource: "https://mcp.example.com/mcp", config: idp)?.name,
                "corp")
        }
        // A server with no metadata (the 2025-03-26 fallback endpoints kept in the table): the
        // secret goes to the token_url the configuration names, and with none named, nowhere.
        var fallback = table(clientID: nil)
        (fallback.authorize_url, fallback.token_url) = (issuer + "/authorize", issuer + "/token")
        XCTAssertThrowsError(try ResourceClient.filled(fallback, config: config, registration: lookup)) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 78, $0.errorText)
        }
        let named = try Config.parse(
            corp + "\nresources = [\"https://mcp.example.com/mcp\"]\ntoken_url = \"\(issuer)/oauth/v2/token\"\n")
        XCTAssertEqual(
            try ResourceClient.filled(fallback, config: named, registration: lookup).token_url,
            issuer + "/oauth/v2/token")
        // The registration is gone: a login is needed, and the hint names the resource.
        XCTAssertThrowsError(
            try ResourceClient.filled(table(clientID: "gone"), config: Config(), registration: { _, _ in nil })
        ) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 4)
            XCTAssertEqual(($0 as? TokenVaultError)?.hint, "run: tokenvault login https://mcp.example.com/mcp")
        }
    }

    func testTheKeptTableIsReplacedOnlyForItsOwnResource() throws {
        let home = NSTemporaryDirectory() + "tv-rc-home-" + String(getpid())
        defer { try? FileManager.default.removeItem(atPath: home) }
        let settings = Settings(environment: ["HOME": home])
        var t = table(clientID: "c1")
        t.service = "mcp.example.com/mcp"
        t.scopes = ["read"]
        try DiscoveredProviders.keepResource(name: "mcp", table: t, settings: settings)
        try DiscoveredProviders.keepResource(name: "mcp", table: t, settings: settings)
        var moved = t
        moved.issuer = "https://new-auth.example.com"
        moved.client_id = "c2"
        try DiscoveredProviders.keepResource(name: "mcp", table: moved, settings: settings)
        let text = try String(contentsOfFile: settings.discoveredProvidersPath, encoding: .utf8)
        XCTAssertEqual(text.components(separatedBy: "[providers.").count, 2, text)
        let config = try Config.parse(text)
        XCTAssertEqual(config.providers["mcp"]?.issuer, "https://new-auth.example.com")
        XCTAssertEqual(config.providers["mcp"]?.client_id, "c2")
        var other = t
        other.resource = "https://mcp.example.com/other"
        XCTAssertThrowsError(try DiscoveredProviders.keepResource(name: "mcp", table: other, settings: settings)) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 64)
        }
    }

    func testARedirectWithoutThePromisedIssIsRefused() throws {
        let config = try Config.parse(
            """
            [providers.p]
            issuer = "\(issuer)"
            authorize_url = "\(issuer)/authorize"
            token_url = "\(issuer)/token"
            client_id = "c"
            """)
        var p = try OAuth2Provider.resolve("p", config: config, configPath: "c")
        let id = CredentialID(service: try ServiceKey(parsing: "api.p.example"), account: "default")
        let login = {
            OAuth2Login(provider: p, transport: ScriptedTransport([]), clock: FixedClock(0), notify: { _ in })
        }
        XCTAssertEqual(try login().checkedCode(["code": "x", "state": "s"], state: "s", id: id), "x")
        p.issParameterRequired = true
        XCTAssertEqual(try login().checkedCode(["code": "x", "state": "s", "iss": issuer], state: "s", id: id), "x")
        XCTAssertThrowsError(try login().checkedCode(["code": "x", "state": "s"], state: "s", id: id)) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 65)
            XCTAssertTrue($0.errorText.hasPrefix("possible mix-up"), $0.errorText)
        }
        // Another issuer is refused before anything else is looked at, an error included.
        XCTAssertThrowsError(
            try login().checkedCode(["error": "access_denied", "iss": "https://evil"], state: "s", id: id)
        ) {
            XCTAssertTrue($0.errorText.hasPrefix("mix-up"), $0.errorText)
        }
    }

    func testStdinIsReadLineByLineAndALongLineIsSkippedWhole() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let long = String(repeating: "x", count: 100)
        let input = "one\r\n\(long)\nthree\n\nlast"
        let writeEnd = fds[1]
        Posix.spawnThread {
            Posix.write(writeEnd, input)
            close(writeEnd)
        }
        var reader = LineReader(fd: fds[0], maxBytes: 10)
        var lines: [LineReader.Line] = []
        while let l = reader.next() { lines.append(l) }
        close(fds[0])
        XCTAssertEqual(
            lines,
            [.line(Array("one".utf8)), .tooLong, .line(Array("three".utf8)), .line([]), .line(Array("last".utf8))])
    }
}
