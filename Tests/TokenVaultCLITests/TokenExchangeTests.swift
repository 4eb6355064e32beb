import Foundation
import TokenVaultKit
import XCTest

/// Token exchange (RFC 8693; docs/providers.md, "Credentials from an
/// identity"): a subject token another system issued, traded at a
/// provider's token endpoint for a token of its own, and traded again when
/// that one expires. Against the authlib provider, whose token endpoint
/// (authlib's client authentication and token issuing) takes the exchange of
/// an access token it issued to another client.
final class TokenExchangeTests: XCTestCase {
    nonisolated(unsafe) static var provider: LocalProvider!

    override class func setUp() { provider = try! LocalProvider() }
    override class func tearDown() { provider.stop() }

    var provider: LocalProvider { Self.provider }
    var base: String { provider.base }

    /// A sandbox with `bot` (another client's own token: the subject) and
    /// `exchange`, whose subject token comes from `source`.
    func sandbox(_ source: String) throws -> Sandbox {
        let s = Sandbox()
        try s.writeConfig(
            """
            [providers.bot]
            service = "bot.example"
            token_url = "\(base)/token"
            grant = "client_credentials"
            client_id = "tv-bot"
            client_secret = "bot-secret"

            [providers.exchange]
            service = "api.exchanged.example"
            token_url = "\(base)/token"
            grant = "token_exchange"
            client_id = "tv-exchange"
            client_secret = "exchange-secret"
            \(source)
            audience = "https://api.exchanged.example"
            scopes = ["read"]
            """)
        return s
    }

    func stat(_ key: String) throws -> Int { try provider.stats()[key] ?? 0 }

    /// The subject: a token the server issued to another client, in a file.
    func subject(_ s: Sandbox) throws -> String {
        s.expect("login", "bot")
        let path = s.home + "/subject-token"
        try s.tv("get", "bot").out.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func testASubjectTokenIsTradedAndTradedAgainOnExpiry() throws {
        let s = try sandbox("")
        let file = try subject(s)
        try s.writeConfig(
            try String(contentsOfFile: s.env["XDG_CONFIG_HOME"]! + "/tokenvault/config.toml", encoding: .utf8)
                + "\nsubject_token_file = \"\(file)\"\n")
        let before = try stat("exchanges")
        let audience = try stat("exchange_audience:https://api.exchanged.example")
        s.expect("login", "exchange")
        XCTAssertEqual(try stat("exchanges"), before + 1, "authlib's token endpoint took the exchange")
        XCTAssertEqual(try stat("exchange_audience:https://api.exchanged.example"), audience + 1)
        let first = s.tv("get", "exchange").out
        XCTAssertEqual(provider.resourceStatus(first), 200)
        XCTAssertNotEqual(first, try String(contentsOfFile: file, encoding: .utf8), "a token of its own")
        XCTAssertTrue(s.tv("status", "exchange").stdout.contains("can refresh: yes"))
        try s.expireStored("exchange")
        let again = s.tv("get", "exchange")
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertNotEqual(again.out, first)
        XCTAssertEqual(try stat("exchanges"), before + 2, "traded again, the subject read afresh")
        XCTAssertFalse(again.stderr.contains(first), "no token on stderr")
        // Expired again: one exchange for 20 readers at once.
        try s.expireStored("exchange")
        let runs = s.concurrently(20, "get", "exchange")
        XCTAssertEqual(runs.filter { $0.status != 0 }.map(\.stderr), [])
        XCTAssertEqual(Swift.Set(runs.map(\.out)).count, 1, "all 20 print the same token")
        XCTAssertEqual(try stat("exchanges"), before + 3, "one exchange for 20 readers")
    }

    func testTheSubjectFromACommandAndTheRefusals() throws {
        let s = try sandbox("")
        let file = try subject(s)
        let config = try String(
            contentsOfFile: s.env["XDG_CONFIG_HOME"]! + "/tokenvault/config.toml", encoding: .utf8)
        try s.writeConfig(config + "\nsubject_token_command = \"cat \(file)\"\n")
        s.expect("login", "exchange")
        XCTAssertEqual(provider.resourceStatus(s.tv("get", "exchange").out), 200)
        // A subject the server does not take: its refusal, exit 4, what is stored untouched.
        try "not-a-token-of-this-server".write(toFile: file, atomically: true, encoding: .utf8)
        let stored = try s.expireStored("exchange")
        let refused = s.tv("get", "exchange")
        XCTAssertEqual(refused.status, 4, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("invalid_grant"), refused.stderr)
        XCTAssertFalse(refused.stderr.contains("not-a-token-of-this-server"), "the subject is never shown")
        XCTAssertTrue(
            s.tv("get", "exchange", "--no-refresh", "--format", "json").stdout.contains("\"\(stored)\""),
            "what is stored is untouched")
        // No subject: one error naming where it was to be read, nothing sent.
        let missing = s.home + "/missing-token"
        try s.writeConfig(config + "\nsubject_token_file = \"\(missing)\"\n")
        let before = try stat("exchanges")
        let none = s.tv("login", "exchange")
        XCTAssertEqual(none.status, 78, none.stderr)
        XCTAssertTrue(none.stderr.contains("cannot read the subject token from \(missing)"), none.stderr)
        XCTAssertEqual(try stat("exchanges"), before)
        // A table without a subject source is refused as a configuration error.
        try s.writeConfig(config)
        s.expect("login", "exchange", status: 78, stderr: ["needs the subject token"])
    }

    /// The subject is another provider's stored credential, renewed first
    /// when it has expired; none stored is a login to that provider.
    func testTheSubjectIsAnotherProvidersCredentialRenewedFirst() throws {
        let s = try sandbox("subject_provider = \"bot\"")
        let none = s.tv("login", "exchange")
        XCTAssertEqual(none.status, 4, none.stderr)
        XCTAssertTrue(none.stderr.contains("the subject token comes from the credential of bot"), none.stderr)
        XCTAssertTrue(none.stderr.contains("hint: run: tokenvault login bot"), none.stderr)
        s.expect("login", "bot")
        let before = try stat("exchanges")
        s.expect("login", "exchange")
        XCTAssertEqual(try stat("exchanges"), before + 1)
        XCTAssertEqual(provider.resourceStatus(s.tv("get", "exchange").out), 200)
        // Both expired: the subject is renewed first (an expired one would be refused), then traded.
        let oldSubject = try s.expireStored("bot")
        try s.expireStored("exchange")
        let renewed = s.tv("get", "exchange")
        XCTAssertEqual(renewed.status, 0, renewed.stderr)
        XCTAssertEqual(provider.resourceStatus(renewed.out), 200)
        XCTAssertNotEqual(s.tv("get", "bot", "--no-refresh").out, oldSubject, "bot's token was renewed first")
        XCTAssertEqual(try stat("exchanges"), before + 2)
        // Two tables each other's subject: refused, never two renewals waiting for each other.
        let config = try String(contentsOfFile: s.env["XDG_CONFIG_HOME"]! + "/tokenvault/config.toml", encoding: .utf8)
        try s.writeConfig(
            config + """

                [providers.loop]
                service = "api.loop.example"
                token_url = "\(base)/token"
                grant = "token_exchange"
                client_id = "tv-exchange"
                client_secret = "exchange-secret"
                subject_provider = "back"

                [providers.back]
                service = "api.back.example"
                token_url = "\(base)/token"
                grant = "token_exchange"
                client_id = "tv-exchange"
                client_secret = "exchange-secret"
                subject_provider = "loop"
                """)
        s.expect(
            "login", "loop", status: 78, stderr: ["subject_provider (or idp) goes round in a loop (loop → back → loop)"]
        )
    }
}
