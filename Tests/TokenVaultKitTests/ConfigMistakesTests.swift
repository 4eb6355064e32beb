import XCTest

@testable import TokenVaultKit

/// Every mistake of a config file named at its own line, in words, with
/// did-you-mean where a value or key is close to a right one (docs/config.md).
final class ConfigMistakesTests: XCTestCase {
    static let threeInOneTable = """
        [providers.dot]
        token_url = "https://a.example/token"
        pkce = "yes"
        client_id = 12345
        grant = "authorisation_code"

        [providers.ok]
        token_url = "https://b.example/token"
        client_id = "x"
        """

    /// A wrong type is the key's own line (not the table's header) and says
    /// what the value must be; a misspelt grant gets did-you-mean; all three
    /// are warnings of their own, and the provider's error lists them all.
    func testThreeMistakesInATableAreEachAtTheirLine() throws {
        let c = try Config.parse(Self.threeInOneTable, path: "config.toml")
        XCTAssertEqual(
            c.warnings,
            [
                "config.toml:3: providers.dot.pkce must be true or false, e.g. pkce = true, not a string; provider dot cannot be used until it is fixed",
                #"config.toml:4: providers.dot.client_id must be a string, e.g. client_id = "value", not a whole number; provider dot cannot be used until it is fixed"#,
                "config.toml:5: providers.dot.grant must be authorization_code, client_credentials, jwt_bearer, token_exchange or id_jag, not 'authorisation_code' (did you mean authorization_code?); provider dot cannot be used until it is fixed",
            ])
        XCTAssertNil(c.providers["dot"])
        XCTAssertNotNil(c.providers["ok"], "a mistake stays in its table")
        let broken = try XCTUnwrap(c.brokenProviders["dot"])
        XCTAssertTrue(broken.errorText.hasPrefix("config.toml:3: providers.dot.pkce"), broken.errorText)
        XCTAssertEqual(broken.excerpt.count, 2)
        XCTAssertTrue(broken.excerpt[1].hasPrefix("config.toml:5: providers.dot.grant"), "\(broken.excerpt)")
        XCTAssertEqual(broken.hint, "fix [providers.dot] in config.toml")
        XCTAssertEqual(broken.exitCode, 78)
    }

    /// A table whose subject is a table of its own service (as written, or
    /// spelt another way) would trade its own token: both are refused, each
    /// error naming the line of both; a third table of that service, that is
    /// nobody's subject, is another owner kept apart by accounts.
    func testTwoTablesNamingOneServiceAreRefused() throws {
        let c = try Config.parse(
            """
            [providers.cluster]
            service = "api.internal.example"
            token_url = "https://idp.internal.example/oauth2/token"
            grant = "jwt_bearer"
            assertion_file = "/var/run/token"

            [providers.sts]
            service = "https://API.internal.example/"
            token_url = "https://sts.example.com/oauth2/token"
            grant = "token_exchange"
            subject_provider = "cluster"

            [providers.other]
            service = "api.other.example"
            token_url = "https://b.example/token"
            client_id = "x"

            [providers.work]
            service = "api.other.example"
            token_url = "https://b.example/token"
            client_id = "y"
            """, path: "config.toml")
        XCTAssertNil(c.providers["cluster"])
        XCTAssertNil(c.providers["sts"])
        XCTAssertNotNil(c.providers["other"])
        XCTAssertNotNil(c.providers["work"], "two owners of one service, kept apart by accounts")
        for name in ["cluster", "sts"] {
            let error = try XCTUnwrap(c.brokenProviders[name])
            XCTAssertEqual(error.exitCode, 78)
            XCTAssertTrue(error.errorText.contains("config.toml:2"), error.errorText)
            XCTAssertTrue(error.errorText.contains("config.toml:8"), error.errorText)
            XCTAssertTrue(error.errorText.contains("name one service, api.internal.example"), error.errorText)
        }
        XCTAssertEqual(c.warnings.count, 2)
    }

    /// Mistakes that stop every command are the error, all of them, with the tables' beneath.
    func testTopLevelMistakesAreAllSaid() {
        let text = """
            timeout = "30"
            backend = "fil"
            min_valid = -1
            [providers.dot]
            scops = ["a"]
            """
        XCTAssertThrowsError(try Config.parse(text, path: "config.toml")) { error in
            let e = error as? TokenVaultError
            XCTAssertEqual(
                e?.errorText,
                "config.toml:1: timeout must be a positive whole number of seconds, e.g. timeout = 30, not a string")
            XCTAssertEqual(
                e?.excerpt,
                [
                    "config.toml:2: backend must be auto, secret-service, file, etcd or none, not 'fil' (did you mean file?)",
                    "config.toml:3: min_valid must be a whole number of seconds, 0 or more, e.g. min_valid = 60",
                    "config.toml:5: unknown setting providers.dot.scops (did you mean scopes?); provider dot cannot be used until it is fixed",
                ])
            XCTAssertEqual(e?.hint, "fix them in config.toml")
        }
    }

    /// Arrays and tables of strings are checked element by element.
    func testAnArrayOfTheWrongThingIsAMistake() throws {
        let c = try Config.parse(
            """
            [providers.x]
            token_url = "https://a.example/token"
            client_id = "c"
            scopes = ["read", 2]
            auth_params = { prompt = true }
            """)
        XCTAssertEqual(c.warnings.count, 2, "\(c.warnings)")
        XCTAssertTrue(c.warnings[0].contains("config.toml:4: providers.x.scopes must be an array of strings"))
        XCTAssertTrue(c.warnings[1].contains("config.toml:5: providers.x.auth_params must be a table of strings"))
    }

    /// A syntax error on a secret's line names the line and the key, never
    /// the value: an unquoted secret, a secret given twice, a bad escape.
    func testASyntaxErrorNeverQuotesASecret() {
        let cases = [
            ("client_secret = hunter2secret", 2),
            ("client_secret = \"s3cr3t-one\"\nclient_secret = \"hunter2secret\"", 3),
            ("client_secret = \"abc\\qhunter2secret\"", 2),
            ("consumer_secret_command = 'pass show x' hunter2secret", 2),
            ("auth_params = { password = hunter2secret }", 2),
        ]
        for (line, number) in cases {
            XCTAssertThrowsError(try Config.parse("[providers.x]\n" + line + "\n", path: "c.toml"), line) { error in
                let e = error as? TokenVaultError
                let text = ([e?.errorText ?? ""] + (e?.excerpt ?? [])).joined(separator: "\n")
                XCTAssertTrue(text.hasPrefix("c.toml:\(number):"), text)
                XCTAssertFalse(text.contains("hunter2") || text.contains("s3cr3t") || text.contains("\\q"), text)
                XCTAssertTrue(text.contains("the value is not shown"), text)
            }
        }
        // Any other line is shown whole, as before.
        XCTAssertThrowsError(try Config.parse("[providers.x]\nscopes = [a b]\n", path: "c.toml")) { error in
            XCTAssertEqual((error as? TokenVaultError)?.excerpt.first, "scopes = [a b]")
        }
    }
}
