import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// A login to a named provider as the library runs it (docs/providers.md),
/// on a scripted transport and presenter: what it stores, what it refuses
/// before anyone is asked, and what it says.
final class ProviderLoginTests: XCTestCase {
    var home: String!
    let said = Locked<[String]>([])

    override func setUp() {
        home = NSTemporaryDirectory() + "tv-plogin-" + UUID().uuidString.prefix(8)
        try! FileManager.default.createDirectory(atPath: home + "/config/tokenvault", withIntermediateDirectories: true)
        try! """
        [providers.dev]
        authorize_url = "https://idp.example/authorize"
        token_url = "https://idp.example/token"
        device_authorization_url = "https://idp.example/device"
        client_id = "cid"
        service = "api.dev.example"
        """.write(toFile: home + "/config/tokenvault/config.toml", atomically: true, encoding: .utf8)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: home) }

    func session() -> Session {
        let settings = Settings(environment: [
            "HOME": home, "XDG_CONFIG_HOME": home + "/config", "XDG_RUNTIME_DIR": home + "/run",
            "TOKENVAULT_BACKEND": "none", "TOKENVAULT_AGENT": "off",
        ])
        let said = said
        return Session(
            settings: settings,
            notices: Notices(
                warning: { line in said.withLock { $0.append("warning: " + line) } },
                notice: { line in said.withLock { $0.append(line) } }, later: { _ in }, passOn: { _ in }))
    }

    func login(
        _ s: Session, _ t: ScriptedTransport, asked: LoginFlow.Asked?, canWait: Bool = false, force: Bool = false
    ) -> ProviderLogin {
        var options = ProviderLogin.Options()
        options.asked = asked
        options.force = force
        options.timeout = 5
        let presenter = LoginPresenter(
            openBrowser: { _ in XCTFail("no browser in this test") }, readLine: { nil },
            showDeviceURL: { [said] url in said.withLock { $0.append("shown " + url) } }, pause: { _ in },
            canWait: canWait)
        return ProviderLogin(session: s, transport: t, presenter: presenter, options: options)
    }

    static let device = ScriptedTransport.json(
        #"{"device_code":"dc","user_code":"ABCD-EFGH","verification_uri":"https://idp.example/activate","expires_in":600,"interval":1}"#
    )
    static let token = ScriptedTransport.json(#"{"access_token":"at-1","token_type":"Bearer","expires_in":3600}"#)

    /// The device flow: the URL shown, the token stored under the provider's
    /// service, and a token that cannot be renewed said so.
    func testTheDeviceFlowStoresAndSaysWhatCannotBeRenewed() throws {
        let s = session()
        let t = ScriptedTransport([Self.device, Self.token])
        let p = try s.oauth2Provider("dev")
        let outcome = try login(s, t, asked: .device).oauth2(p, account: "default", scopes: nil)
        XCTAssertEqual(outcome.credential.accessToken, "at-1")
        XCTAssertEqual(outcome.provider, "dev")
        XCTAssertFalse(outcome.byAnotherLogin)
        let id = CredentialID(service: try ServiceKey(parsing: "api.dev.example"))
        XCTAssertEqual(try s.vault().load(id)?.accessToken, "at-1")
        XCTAssertEqual(t.requests.map(\.url), ["https://idp.example/device", "https://idp.example/token"])
        let lines = said.withLock { $0 }
        XCTAssertTrue(lines.contains { $0.hasPrefix("shown https://idp.example/activate") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("warning: dev gave no refresh token") }, "\(lines)")
    }

    /// Another provider's credential under the same id: refused (64) before
    /// anything is sent; --force logs in over it.
    func testAnotherProvidersCredentialIsNotReplacedUnasked() throws {
        let s = session()
        let id = CredentialID(service: try ServiceKey(parsing: "api.dev.example"))
        try s.vault().write(
            Credential(service: id.service, type: .token, provider: "other", accessToken: "theirs", updatedAt: 1))
        let t = ScriptedTransport([])
        XCTAssertThrowsError(
            try login(s, t, asked: .device).oauth2(try s.oauth2Provider("dev"), account: "default", scopes: nil)
        ) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 64)
        }
        XCTAssertTrue(t.requests.isEmpty)
        XCTAssertEqual(try s.vault().load(id)?.accessToken, "theirs")
        let forced = login(s, ScriptedTransport([Self.device, Self.token]), asked: .device, force: true)
        let outcome = try forced.oauth2(try s.oauth2Provider("dev"), account: "default", scopes: nil)
        XCTAssertEqual(outcome.credential.accessToken, "at-1")
    }

    /// A login of the same credential pending in another process: with
    /// nobody to wait, a temporary failure (75) and nothing sent.
    func testAPendingLoginElsewhereIsNotStartedTwice() throws {
        let s = session()
        let id = CredentialID(service: try ServiceKey(parsing: "api.dev.example"))
        let other = try XCTUnwrap(try LoginLock.attempt(try s.vault(), id))
        defer { other.release() }
        let t = ScriptedTransport([])
        XCTAssertThrowsError(
            try login(s, t, asked: .device).oauth2(try s.oauth2Provider("dev"), account: "default", scopes: nil)
        ) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 75)
        }
        XCTAssertTrue(t.requests.isEmpty)
    }
}
