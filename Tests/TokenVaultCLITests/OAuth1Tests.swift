import Foundation
import XCTest

/// OAuth 1.0a against Tests/Fixtures/oauth1_provider.py (oauthlib), which
/// verifies every signature.
final class OAuth1Tests: XCTestCase {
    var server: Process!
    var base = ""

    override func setUpWithError() throws {
        let port: Int
        (server, port) = try startFixtureServer("oauth1_provider.py")
        base = "http://127.0.0.1:\(port)"
    }

    override func tearDown() {
        if server.isRunning {
            server.terminate()
            server.waitUntilExit()
        }
    }

    func sandbox(
        consumerSecret: String = "tvconsumersecret", command: String = "printf tvconsumersecret"
    ) throws -> Sandbox {
        let s = Sandbox()
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        try s.writeConfig(
            """
            [providers.localtw]
            type = "oauth1"
            service = "\(base.dropFirst(7))"
            request_token_url = "\(base)/oauth/request_token"
            authorize_url = "\(base)/oauth/authorize"
            access_token_url = "\(base)/oauth/access_token"
            consumer_key = "tvconsumerkey"
            consumer_secret_command = '\(command.replacingOccurrences(of: "tvconsumersecret", with: consumerSecret))'

            """)
        return s
    }

    func curl(_ args: [String]) -> String {
        runProcess("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}"] + args, env: [:]).stdout
    }

    func testLoginThroughTheCallbackThenSignedRequests() throws {
        let s = try sandbox()
        let login = s.tv("login", "localtw", limit: 60)
        XCTAssertEqual(login.status, 0, login.stderr)
        XCTAssertTrue(login.stderr.contains("logged in to localtw as alice"), login.stderr)
        XCTAssertEqual(s.tv("get", "localtw", "--field", "screen_name").out, "alice")
        XCTAssertEqual(s.tv("get", "localtw", "--field", "user_id").out, "7")
        XCTAssertEqual(s.tv("list", "--json").stdout.contains(#""type":"oauth1""#), true)
        let secret = s.tv("get", "localtw", "--field", "token_secret").out
        XCTAssertFalse(secret.isEmpty)
        XCTAssertFalse(login.stderr.contains(secret), "no secret on stderr")

        // A signed GET, accepted; and the same header twice is a replay (fresh nonce each time).
        let url = base + "/1.1/account/verify_credentials.json?include_entities=true"
        let header = s.tv("header", "localtw", "--method", "GET", "--url", url).out
        XCTAssertTrue(header.hasPrefix("Authorization: OAuth oauth_consumer_key=\"tvconsumerkey\""), header)
        XCTAssertEqual(curl(["-H", header, url]), "200")
        XCTAssertEqual(curl(["-H", header, url]), "401", "a replayed nonce is refused")
        XCTAssertEqual(curl(["-H", s.tv("header", "localtw", "--url", url).out, url]), "200")
        // The signature covers the URL: another query is refused.
        XCTAssertEqual(curl(["-H", s.tv("header", "localtw", "--url", url).out, url + "&x=1"]), "401")

        // A signed form body.
        let post = base + "/1.1/statuses/update.json"
        let body = "status=hello%20world%21&lat=1.5"
        let signed = s.tv("header", "localtw", "--method", "POST", "--url", post, "--data", stdin: body).out
        XCTAssertEqual(curl(["-H", signed, "-d", body, post]), "200")
        let again = s.tv("header", "localtw", "--method", "POST", "--url", post, "--data", stdin: body).out
        XCTAssertEqual(curl(["-H", again, "-d", "status=tampered", post]), "401", "the body is signed")

        // A tampered token secret is refused by the provider.
        let token = s.tv("get", "localtw").out
        s.expect(
            "set", "localtw", "--provider", "localtw",
            stdin: #"{"oauth_token":"\#(token)","oauth_token_secret":"wrong"}"#)
        XCTAssertEqual(curl(["-H", s.tv("header", "localtw", "--url", url).out, url]), "401")
    }

    /// Through the agent (docs/agent.md): the consumer secret comes from a
    /// command that needs a variable only the client has (as `pass` needs
    /// PASSWORD_STORE_DIR), and is run with the client's environment; a
    /// signed form body is read from the client's stdin, by the client
    /// (which still asks the agent for the credential).
    func testTheAgentSignsWithTheClientsCommandAndBody() throws {
        let s = try sandbox(command: #"printf %s "$TV_CONSUMER_SECRET""#)
        let client = ["TV_CONSUMER_SECRET": "tvconsumersecret", "TOKENVAULT_AGENT": "auto"]
        XCTAssertEqual(s.tv("login", "localtw", env: client, limit: 60).status, 0)
        XCTAssertEqual(s.tv("agent").status, 0)  // without TV_CONSUMER_SECRET
        defer { _ = s.tv("agent", "stop") }
        func requests() -> Int {
            let status = s.tv("agent", "status", "--json").stdout
            let o = (try? JSONSerialization.jsonObject(with: Data(status.utf8))) as? [String: Any]
            return o?["requests"] as? Int ?? -1
        }
        let url = base + "/1.1/account/verify_credentials.json"
        let before = requests()
        let header = s.tv("header", "localtw", "--url", url, env: client)
        XCTAssertEqual(requests() - before, 2, "answered by the agent (and one status)")
        XCTAssertEqual(curl(["-H", header.out, url]), "200", header.stderr)
        let post = base + "/1.1/statuses/update.json"
        let body = "status=through%20the%20agent&lat=2.5"
        let signed = s.tv("header", "localtw", "--method", "POST", "--url", post, "--data", stdin: body, env: client)
        XCTAssertEqual(curl(["-H", signed.out, "-d", body, post]), "200", signed.stderr)
        // The client ran it (one request: the credential asked of the agent, then the status).
        XCTAssertEqual(requests() - before, 4, "--data is run by the client, which has the body")
    }

    func testPINLogin() throws {
        let s = try sandbox()
        let r = runProcess(
            "/usr/bin/python3", [Paths.fixtures.appendingPathComponent("pin_login.py").path, Paths.binary, "localtw"],
            env: s.env, limit: 60)
        XCTAssertEqual(r.out, "0", r.stderr)
        let url = base + "/1.1/account/verify_credentials.json"
        XCTAssertEqual(curl(["-H", s.tv("header", "localtw", "--url", url).out, url]), "200")
    }

    func testDeniedLoginExits4() throws {
        let s = try sandbox()
        let r = s.tv("login", "localtw", env: ["BROWSER_MODE": "deny"], limit: 60)
        XCTAssertEqual(r.status, 4, r.stderr)
        XCTAssertEqual(s.tv("get", "localtw").status, 3)
    }

    func testWrongConsumerSecretIsRefused() throws {
        let s = try sandbox(consumerSecret: "notthesecret")
        let r = s.tv("login", "localtw", limit: 60)
        XCTAssertEqual(r.status, 76, r.stderr)
        XCTAssertFalse(r.stderr.contains("notthesecret"))
    }

    func testExecGetsTheTokenSecretAndHeaderNeedsAURL() throws {
        let s = try sandbox()
        s.expect("set", "localtw", "--provider", "localtw", stdin: #"{"oauth_token":"tok","oauth_token_secret":"sec"}"#)
        let r = s.tv(
            "exec", "localtw", "--", "/bin/sh", "-c",
            #"printf '%s %s' "$TOKENVAULT_ACCESS_TOKEN" "$TOKENVAULT_TOKEN_SECRET""#)
        XCTAssertEqual(r.stdout, "tok sec")
        XCTAssertEqual(s.tv("header", "localtw").status, 64, "OAuth 1.0a needs --url")
        XCTAssertEqual(s.tv("get", "localtw", "--format", "header").status, 64)
        XCTAssertEqual(s.tv("header", "localtw", "--url", "ftp://x/").status, 64)
    }
}
