import Foundation
import TokenVaultKit
import XCTest

/// DPoP and pushed authorization requests from login to every use
/// (docs/security.md, "Sender-constrained tokens"), against dpop_server.py:
/// a server that requires PAR and DPoP of its client, binds its tokens and
/// refresh tokens to the proof's key, refuses Bearer at its userinfo
/// endpoint, and (the second one) asks for nonces at its token endpoint and
/// its resource.
final class DPoPLoginTests: XCTestCase {
    nonisolated(unsafe) static var plain: Process!
    nonisolated(unsafe) static var plainPort = 0
    nonisolated(unsafe) static var nonces: Process!
    nonisolated(unsafe) static var noncesPort = 0

    override class func setUp() {
        (plain, plainPort) = try! startFixtureServer("dpop_server.py", ["--token-ttl", "3"])
        (nonces, noncesPort) = try! startFixtureServer("dpop_server.py", ["--nonce", "--rs-nonce", "--par-nonce"])
    }

    override class func tearDown() {
        for p in [plain, nonces] where p!.isRunning {
            p!.terminate()
            p!.waitUntilExit()
        }
    }

    func base(_ port: Int) -> String { "http://127.0.0.1:\(port)" }

    func stats(_ port: Int) throws -> [String: Any] {
        let r = runProcess("/usr/bin/curl", ["-s", base(port) + "/stats"], env: [:])
        return try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any] ?? [:]
    }

    /// A server that lists only EdDSA: the key is Ed25519 (libsodium), and
    /// the server (authlib) takes its proofs at the token endpoint and the resource.
    func testAServerThatListsOnlyEdDSAGetsAnEd25519Key() throws {
        let (server, port) = try startFixtureServer("dpop_server.py", ["--algs", "EdDSA"])
        defer { server.terminate() }
        let s = try loggedIn(port)
        let url = base(port) + "/userinfo"
        let pair = s.expect("header", "api.dpop.example", "--method", "GET", "--url", url).stdout
        let proof = String(pair.split(separator: "\n")[1].dropFirst("DPoP: ".count))
        let header = try XCTUnwrap(
            JSONSerialization.jsonObject(
                with: Data(base64Encoded: base64(String(proof.split(separator: ".")[0]))) ?? Data())
                as? [String: Any])
        XCTAssertEqual(header["alg"] as? String, "EdDSA")
        XCTAssertEqual(userinfo(port, headers: pair), "200")
        s.expect("refresh", "api.dpop.example")
        XCTAssertEqual(try stats(port)["refreshes"] as? Int, 1)
    }

    func base64(_ url: String) -> String {
        var s = url.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return s
    }

    /// A provider with no `dpop = true` whose server refuses a token request
    /// without a proof: the login makes a key then, and the credential is bound;
    /// `par = false` does not stop a server that requires PAR from getting it.
    func testAServerThatRefusesWithoutAProofGetsOne() throws {
        let s = try loggedIn(Self.plainPort, dpop: false, extra: "par = false")
        let json = s.expect("get", "api.dpop.example", "--format", "json", "--no-refresh").stdout
        XCTAssertTrue(json.contains(#""token_type":"DPoP""#) && json.contains("dpop_jkt"), json)
        s.expect("refresh", "api.dpop.example")
    }

    /// A sandbox logged in to the server on `port` with `dpop = true`.
    func loggedIn(_ port: Int, dpop: Bool = true, extra: String = "") throws -> Sandbox {
        let s = Sandbox()
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        try s.writeConfig(
            """
            [providers.dp]
            issuer = "\(base(port))"
            service = "api.dpop.example"
            client_id = "dpop-client"
            client_secret = "dpop-secret"
            scopes = ["profile"]
            dpop = \(dpop)
            git_hosts = ["git.dpop.example"]
            \(extra)
            """)
        s.expect("login", "dp", limit: 60)
        return s
    }

    /// `curl` of the userinfo endpoint with the header lines given on stdin; its status.
    func userinfo(_ port: Int, headers: String) -> String {
        runProcess(
            "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "@-", base(port) + "/userinfo"],
            stdin: headers, env: [:]
        ).stdout
    }

    func testALoginThroughPARWithDPoPAndEveryUseAfter() throws {
        let s = try loggedIn(Self.plainPort)
        var st = try stats(Self.plainPort)
        XCTAssertEqual(st["par"] as? Int, 1, "the authorization request was pushed")
        XCTAssertEqual(st["tokens"] as? Int, 1)
        let jkt = try XCTUnwrap((st["jkts"] as? [String])?.first)
        XCTAssertEqual(st["userinfo_ok"] as? Int, 1, "who logged in, asked with a proof: \(st)")

        // The record says the token type and the key's thumbprint, never the key.
        let json = s.expect("get", "api.dpop.example", "--format", "json", "--no-refresh")
        XCTAssertTrue(json.stdout.contains(#""token_type":"DPoP""#), json.stdout)
        XCTAssertTrue(json.stdout.contains(#""dpop_jkt":"\#(jkt)""#), json.stdout)
        XCTAssertFalse(json.stdout.contains("dpop_key") || json.stdout.contains("PRIVATE KEY"), json.stdout)
        XCTAssertEqual(s.expect("get", "api.dpop.example", "--field", "dpop_jkt", "--no-refresh").out, jkt)
        let status = s.expect("status", "api.dpop.example").stdout
        XCTAssertTrue(status.contains("bound to") && status.contains("DPoP key \(jkt)"), status)
        XCTAssertFalse(status.contains("PRIVATE"), status)
        let listed = s.expect("status", "--json").stdout
        XCTAssertTrue(listed.contains(#""dpop_jkt":"\#(jkt)""#) && !listed.contains("dpop_key"), listed)
        // Nothing hands it out as a bearer token.
        s.expect(
            "get", "api.dpop.example", "--format", "header", status: 64, stderr: ["DPoP-bound", "tokenvault header"])
        let git = s.tv("git-credential", "get", stdin: "protocol=https\nhost=git.dpop.example\n\n")
        XCTAssertEqual(git.status, 0, git.stderr)
        XCTAssertEqual(git.stdout, "", "no password git would send without its proof")
        XCTAssertTrue(git.stderr.contains("DPoP-bound"), git.stderr)
        // Renewed first when the 3-second token has run out meanwhile (a loaded machine): the
        // notice is the same either way.
        let onTerminal = s.onTerminal(["get", "api.dpop.example"])
        XCTAssertTrue(onTerminal.stdout.contains("bound to a DPoP key"), onTerminal.stdout)
        XCTAssertFalse(s.expect("get", "api.dpop.example").stderr.contains("DPoP"), "a pipe: no notice")

        // The header pair is taken by the resource; the same token as Bearer is not.
        let url = base(Self.plainPort) + "/userinfo"
        let pair = s.expect("header", "api.dpop.example", "--method", "GET", "--url", url).stdout
        let lines = pair.split(separator: "\n")
        XCTAssertEqual(lines.count, 2, pair)
        XCTAssertTrue(lines[0].hasPrefix("Authorization: DPoP "), pair)
        XCTAssertTrue(lines[1].hasPrefix("DPoP: "), pair)
        XCTAssertEqual(userinfo(Self.plainPort, headers: pair), "200")
        let token = String(lines[0].dropFirst("Authorization: DPoP ".count))
        XCTAssertEqual(userinfo(Self.plainPort, headers: "Authorization: Bearer \(token)\n"), "401")
        XCTAssertEqual(userinfo(Self.plainPort, headers: pair), "401", "a proof is good once (its jti)")
        s.expect(
            "header", "api.dpop.example", status: 64, stderr: ["holds a DPoP-bound token", "--url"])
        s.expect(
            "header", "api.dpop.example", "--url", "http://example.com/x", status: 64, stderr: ["not an https URL"])
        s.expect("header", "api.dpop.example", "--method", "GET\nX", "--url", url, status: 64, stderr: ["--method"])
        s.expect("header", "api.dpop.example", "--url", url, "--nonce", "a b", status: 64, stderr: ["--nonce"])

        // Renewed with the same key, and used again: forced, then once the 3-second token expired.
        s.expect("refresh", "api.dpop.example")
        let expired = FixedClock(SystemClock().now + 4)  // the run's clock: past the 3-second token's expiry
        let afterRun = s.tv("header", "api.dpop.example", "--method", "GET", "--url", url, at: expired)
        XCTAssertEqual(afterRun.status, 0, afterRun.stderr)
        let after = afterRun.stdout
        XCTAssertEqual(userinfo(Self.plainPort, headers: after), "200")
        st = try stats(Self.plainPort)
        // The forced renewal and the one after expiry; on a loaded machine the steps before
        // may outlast the 3-second token, and a use then renews it once more.
        XCTAssertGreaterThanOrEqual(st["refreshes"] as? Int ?? 0, 2, "\(st)")
        XCTAssertEqual(Set(st["jkts"] as? [String] ?? []), [jkt], "every token bound to the one key")
    }

    /// The server binds the refresh token to the key: a proof of another
    /// key is refused, and the credential's own still works after it.
    func testARefreshTokenIsUselessWithAnotherKey() throws {
        let s = try loggedIn(Self.plainPort)
        let refreshToken = s.expect(
            "get", "api.dpop.example", "--field", "refresh_token", "--no-refresh"
        ).out
        let other = try DPoPKey.generate()
        let tokenURL = base(Self.plainPort) + "/token"
        let stolen = runProcess(
            "/usr/bin/curl",
            [
                "-s", "-u", "dpop-client:dpop-secret", "-H",
                "DPoP: " + (try other.proof(method: "POST", url: tokenURL)), "--data-urlencode",
                "grant_type=refresh_token", "--data-urlencode", "refresh_token@-", tokenURL,
            ], stdin: refreshToken, env: [:])
        XCTAssertTrue(stolen.stdout.contains("invalid_dpop_proof"), stolen.stdout)
        s.expect("refresh", "api.dpop.example")
    }

    /// A server that wants nonces at its token endpoint and its resource:
    /// each refusal is answered once with the nonce it gave.
    func testNoncesAtTheTokenEndpointAndTheResource() throws {
        let s = try loggedIn(Self.noncesPort)
        var st = try stats(Self.noncesPort)
        XCTAssertEqual(st["par_nonce_challenges"] as? Int, 1, "one challenge at PAR, then the nonce: \(st)")
        XCTAssertEqual(st["nonce_challenges"] as? Int, 0, "the token endpoint's nonce was known from PAR: \(st)")
        XCTAssertEqual(st["userinfo_ok"] as? Int, 1, "the resource's nonce answered too: \(st)")
        XCTAssertEqual(st["rs_nonce_challenges"] as? Int, 1)
        // By hand: the resource's nonce comes back in DPoP-Nonce; `header --nonce` carries it.
        let url = base(Self.noncesPort) + "/userinfo"
        let first = s.expect("header", "api.dpop.example", "--method", "GET", "--url", url).stdout
        let challenged = runProcess("/usr/bin/curl", ["-s", "-i", "-H", "@-", url], stdin: first, env: [:]).stdout
        let nonce = try XCTUnwrap(
            challenged.split(separator: "\r\n").first { $0.lowercased().hasPrefix("dpop-nonce:") }.map {
                String($0.dropFirst("dpop-nonce:".count)).trimmingCharacters(in: .whitespaces)
            }, challenged)
        let second = s.expect("header", "api.dpop.example", "--method", "GET", "--url", url, "--nonce", nonce).stdout
        XCTAssertEqual(userinfo(Self.noncesPort, headers: second), "200")
        s.expect("refresh", "api.dpop.example")
        st = try stats(Self.noncesPort)
        XCTAssertEqual(st["refreshes"] as? Int, 1, "\(st)")
    }

    /// The agent renews a bound credential with its key, and answers
    /// `header` with a proof of that key.
    func testTheAgentRenewsABoundCredentialWithItsKey() throws {
        let s = try loggedIn(Self.plainPort)
        let jkt = s.expect("get", "api.dpop.example", "--field", "dpop_jkt", "--no-refresh").out
        let was = try stats(Self.plainPort)
        let before = was["refreshes"] as? Int ?? 0
        let issuedBefore = (was["jkts"] as? [String] ?? []).count
        s.expect("agent")
        addTeardownBlock { s.expect("agent", "stop") }
        let url = base(Self.plainPort) + "/userinfo"
        // Handed out through the agent: kept renewed from then on, half its 3-second life ahead.
        s.expect("header", "api.dpop.example", "--method", "GET", "--url", url)
        XCTAssertTrue(eventually(15) { s.agentSettled() }, "the agent renewed it")
        let pair = s.expect("header", "api.dpop.example", "--method", "GET", "--url", url).stdout
        XCTAssertEqual(userinfo(Self.plainPort, headers: pair), "200")
        let st = try stats(Self.plainPort)
        XCTAssertGreaterThan(st["refreshes"] as? Int ?? 0, before, "\(st)")
        let renewed = (st["jkts"] as? [String] ?? []).dropFirst(issuedBefore)
        XCTAssertFalse(renewed.isEmpty)
        XCTAssertTrue(renewed.allSatisfy { $0 == jkt }, "every renewal bound to the credential's key: \(st)")
        let agent = s.expect("agent", "status", "--json").stdout
        XCTAssertFalse(agent.contains("\"requests\":0"), "the agent answered: \(agent)")
    }
}
