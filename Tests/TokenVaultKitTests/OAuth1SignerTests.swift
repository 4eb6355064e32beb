import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// RFC 5849's published examples, reproduced exactly with the nonce and
/// timestamp passed in (the signer's own parameters, not a user-facing flag).
final class OAuth1SignerTests: XCTestCase {
    func testSection3_4_1_1BaseString() throws {
        // POST /request?b5=%3D%253D&a3=a&c%40=&a2=r%20b with body c2&a3=2+q
        let form = OAuth1Signer.parseQuery("c2&a3=2+q")
        let oauth = [
            ("oauth_consumer_key", "9djdj82h48djs9d2"), ("oauth_token", "kkk9d7dh3k39sjv7"),
            ("oauth_signature_method", "HMAC-SHA1"), ("oauth_timestamp", "137131201"), ("oauth_nonce", "7d8f3e4a"),
        ]
        let base = try OAuth1Signer.baseString(
            method: "post", url: "http://example.com/request?b5=%3D%253D&a3=a&c%40=&a2=r%20b",
            parameters: oauth + form)
        XCTAssertEqual(
            base,
            "POST&http%3A%2F%2Fexample.com%2Frequest&a2%3Dr%2520b%26a3%3D2%2520q%26a3%3Da%26b5%3D%253D%25253D%26c%2540%3D%26c2%3D%26oauth_consumer_key%3D9djdj82h48djs9d2%26oauth_nonce%3D7d8f3e4a%26oauth_signature_method%3DHMAC-SHA1%26oauth_timestamp%3D137131201%26oauth_token%3Dkkk9d7dh3k39sjv7"
        )
    }

    // §1.2: the three requests of the photo-printing example (without oauth_version, as there).
    func signature(
        _ signer: OAuth1Signer, _ method: String, _ url: String, _ oauth: [(String, String)]
    ) throws -> String {
        try signer.sign(method: method, url: url, parameters: oauth)
    }

    func testSection1_2TemporaryCredentials() throws {
        let signer = OAuth1Signer(consumerKey: "dpf43f3p2l4k3l03", consumerSecret: "kd94hf93k423kf44")
        let sig = try signature(
            signer, "POST", "https://photos.example.net/initiate",
            [
                ("oauth_consumer_key", "dpf43f3p2l4k3l03"), ("oauth_signature_method", "HMAC-SHA1"),
                ("oauth_timestamp", "137131200"), ("oauth_nonce", "wIjqoS"),
                ("oauth_callback", "http://printer.example.com/ready"),
            ])
        XCTAssertEqual(sig, "74KNZJeDHnMBp0EMJ9ZHt/XKycU=")
    }

    func testSection1_2TokenCredentials() throws {
        let signer = OAuth1Signer(
            consumerKey: "dpf43f3p2l4k3l03", consumerSecret: "kd94hf93k423kf44",
            token: "hh5s93j4hdidpola", tokenSecret: "hdhd0244k9j7ao03")
        let sig = try signature(
            signer, "POST", "https://photos.example.net/token",
            [
                ("oauth_consumer_key", "dpf43f3p2l4k3l03"), ("oauth_token", "hh5s93j4hdidpola"),
                ("oauth_signature_method", "HMAC-SHA1"), ("oauth_timestamp", "137131201"), ("oauth_nonce", "walatlh"),
                ("oauth_verifier", "hfdp7dh39dks9884"),
            ])
        XCTAssertEqual(sig, "gKgrFCywp7rO0OXSjdot/IHF7IU=")
    }

    func testSection1_2ProtectedResource() throws {
        let signer = OAuth1Signer(
            consumerKey: "dpf43f3p2l4k3l03", consumerSecret: "kd94hf93k423kf44",
            token: "nnch734d00sl2jdk", tokenSecret: "pfkkdhi9sl3r4s00")
        let sig = try signature(
            signer, "GET", "http://photos.example.net/photos?file=vacation.jpg&size=original",
            [
                ("oauth_consumer_key", "dpf43f3p2l4k3l03"), ("oauth_token", "nnch734d00sl2jdk"),
                ("oauth_signature_method", "HMAC-SHA1"), ("oauth_timestamp", "137131202"), ("oauth_nonce", "chapoH"),
            ])
        // RFC 5849 §1.2 prints it percent-encoded: MdpQcU8iPSUjWoN%2FUDMsK2sui9I%3D
        XCTAssertEqual(sig, "MdpQcU8iPSUjWoN/UDMsK2sui9I=")
    }

    func testBaseURIRules() throws {
        XCTAssertEqual(try OAuth1Signer.baseURI("HTTP://EXAMPLE.COM:80/r%20v/X?id=123").0, "http://example.com/r%20v/X")
        XCTAssertEqual(try OAuth1Signer.baseURI("https://www.example.net:8080/?q=1").0, "https://www.example.net:8080/")
        XCTAssertEqual(try OAuth1Signer.baseURI("https://api.twitter.com:443").0, "https://api.twitter.com/")
        XCTAssertThrowsError(try OAuth1Signer.baseURI("ftp://x/"))
        XCTAssertThrowsError(try OAuth1Signer.baseURI("/relative"))
    }

    func testHeaderAndPlaintext() throws {
        let signer = OAuth1Signer(
            consumerKey: "ck", consumerSecret: "c s", token: "tk", tokenSecret: "t&s", method: .plaintext)
        let header = try signer.authorization(method: "GET", url: "https://api.example.com/x", nonce: "n", timestamp: 1)
        XCTAssertTrue(
            header.hasPrefix(
                "OAuth oauth_consumer_key=\"ck\", oauth_nonce=\"n\", oauth_signature=\"c%2520s%26t%2526s\""), header)
        XCTAssertTrue(header.contains("oauth_signature_method=\"PLAINTEXT\""))
        XCTAssertTrue(header.contains("oauth_token=\"tk\""))
        XCTAssertNotEqual(OAuth1Signer.freshNonce(), OAuth1Signer.freshNonce())
    }
}

final class OAuth1ProviderTests: XCTestCase {
    func testPresetsAndConfig() throws {
        let config = try Config.parse(
            """
            [providers.flickr]
            consumer_key = "fk"
            consumer_secret = "fs"
            perms = "write"
            """)
        let flickr = try OAuth1Provider.resolve("flickr", config: config, configPath: "c")
        XCTAssertEqual(flickr.service.description, "api.flickr.com")
        XCTAssertEqual(flickr.requestTokenURL, "https://www.flickr.com/services/oauth/request_token")
        let login = OAuth1Login(
            provider: flickr, transport: ScriptedTransport([]), clock: FixedClock(0), notify: { _ in })
        XCTAssertEqual(
            login.authorizeURL(token: "t1"),
            "https://www.flickr.com/services/oauth/authorize?oauth_token=t1&perms=write")
        do {
            _ = try OAuth1Provider.resolve("twitter", config: Config(), configPath: "c")
            XCTFail("no consumer key")
        } catch let e as TokenVaultError {
            XCTAssertEqual(e.exitCode, 78)
            XCTAssertTrue(e.hint?.contains("developer.x.com") ?? false, e.hint ?? "")
        }
        XCTAssertEqual(
            try OAuth1Provider.resolve(
                "twitter",
                config: try Config.parse("[providers.twitter]\nconsumer_key = \"k\"\nconsumer_secret = \"s\"\n"),
                configPath: "c"
            ).service.description, "api.twitter.com")
    }

    func testProblemsMapToExitCodes() {
        let f: (String) -> [String: JSONValue] = { ["oauth_problem": .string($0)] }
        XCTAssertEqual(
            OAuth1Login.error(status: 401, fields: f("permission_denied"), host: "h", provider: "p").exitCode, 4)
        XCTAssertEqual(
            OAuth1Login.error(status: 401, fields: f("signature_invalid"), host: "h", provider: "p").exitCode, 76)
        XCTAssertEqual(OAuth1Login.error(status: 401, fields: nil, host: "h", provider: "p").exitCode, 76)
        XCTAssertEqual(OAuth1Login.error(status: 503, fields: nil, host: "h", provider: "p").exitCode, 75)
    }
}
