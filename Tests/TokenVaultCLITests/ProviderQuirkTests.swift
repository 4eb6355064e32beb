import Foundation
import XCTest

/// Refresh against token endpoints with real providers' quirks
/// (Tests/Fixtures/quirk_provider.py).
final class ProviderQuirkTests: XCTestCase {
    var server: Process!
    var port = 0

    override func setUpWithError() throws {
        (server, port) = try startFixtureServer("quirk_provider.py")
    }

    override func tearDown() {
        if server.isRunning {
            server.terminate()
            server.waitUntilExit()
        }
    }

    /// A sandbox whose provider "q" has its token endpoint at `path`, holding an
    /// expired credential with refresh token "r-old".
    func sandbox(_ path: String, timeout: Int = 30) throws -> Sandbox {
        let s = Sandbox()
        try s.writeConfig(
            """
            timeout = \(timeout)
            [providers.q]
            service = "api.quirk.example"
            token_url = "http://127.0.0.1:\(port)\(path)"
            client_id = "cid"
            client_secret = "csecret"
            """)
        let r = s.tv(
            "set", "q", "--provider", "q",
            stdin: #"{"access_token":"old","refresh_token":"r-old","expires_at":1,"uid":"7"}"#)
        XCTAssertEqual(r.status, 0, r.stderr)
        return s
    }

    func testWeiboTextPlainJSONWithNumbersAsStrings() throws {
        let s = try sandbox("/textplain")
        XCTAssertEqual(s.tv("get", "q").out, "2.00weibo1")
        XCTAssertEqual(s.tv("get", "q", "--field", "uid").out, "1404376560")
        let exp = Int64(s.tv("get", "q", "--field", "expires_at").out) ?? 0
        XCTAssertGreaterThan(exp, Int64(Date().timeIntervalSince1970) + 157_000_000)
        XCTAssertEqual(
            s.tv("get", "q", "--field", "refresh_token").out, "r-old",
            "no refresh token in the answer: the old one stays")
    }

    func testGitHubFormEncoded() throws {
        let s = try sandbox("/form")
        XCTAssertEqual(s.tv("get", "q").out, "gho_form1")
        XCTAssertEqual(s.tv("get", "q", "--field", "scope").out, "repo,gist")
    }

    func testGoogleNoNewRefreshTokenKeepsTheOld() throws {
        let s = try sandbox("/keep-refresh")
        XCTAssertEqual(s.tv("get", "q").out, "ya29.kept1")
        XCTAssertEqual(s.tv("get", "q", "--field", "refresh_token").out, "r-old")
        XCTAssertEqual(s.tv("get", "q", "--field", "uid").out, "7", "extra fields survive a refresh")
    }

    func testInvalidGrantIsLoginRequired() throws {
        let s = try sandbox("/invalid-grant")
        let r = s.tv("get", "q")
        XCTAssertEqual(r.status, 4)
        XCTAssertTrue(r.stderr.contains("Token has been expired or revoked"), r.stderr)
        XCTAssertTrue(r.stderr.contains("hint: run: tokenvault login q"), r.stderr)
    }

    func testInvalidClientIsProviderRefused() throws {
        let s = try sandbox("/invalid-client")
        let r = s.tv("get", "q")
        XCTAssertEqual(r.status, 76)
        XCTAssertTrue(r.stderr.contains("invalid_client: Client authentication failed"), r.stderr)
        XCTAssertFalse(r.stderr.contains("csecret") || r.stderr.contains("r-old"), "no secret on stderr")
    }

    func testHTML502IsTemporary() throws {
        let s = try sandbox("/html502")
        let r = s.tv("get", "q")
        XCTAssertEqual(r.status, 75)
        XCTAssertTrue(r.stderr.contains("HTTP 502"), r.stderr)
        XCTAssertEqual(r.stdout, "")
    }

    func testHangingEndpointEndsWithinTheTimeout() throws {
        let s = try sandbox("/hang", timeout: 2)
        // The runner's own limit only catches a hang; the command gives up after 2 s.
        let r = s.tv("get", "q", limit: 30)
        XCTAssertEqual(r.status, 75, r.stderr)
        XCTAssertTrue(r.stderr.contains("did not answer within 2 s"), r.stderr)
    }

    func testUntrustedTLSCertificateIsRefused() throws {
        // The same endpoint over HTTPS with a self-signed certificate: verification stays on.
        let dir = NSTemporaryDirectory() + "tv-tls-" + UUID().uuidString.prefix(6)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cert = runProcess(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1", "-days", "1",
                "-keyout", dir + "/key.pem", "-out", dir + "/cert.pem",
            ], env: ["PATH": "/usr/bin:/bin"])
        XCTAssertEqual(cert.status, 0, cert.stderr)
        let (tls, tlsPort) = try startFixtureServer(
            "quirk_provider.py", ["--tls", dir + "/cert.pem", dir + "/key.pem"])
        defer {
            tls.terminate()
            tls.waitUntilExit()
        }
        let s = try sandbox("/textplain")
        try s.writeConfig(
            """
            [providers.q]
            service = "api.quirk.example"
            token_url = "https://127.0.0.1:\(tlsPort)/textplain"
            client_id = "cid"
            """)
        // Stored again for the https origin: a refresh token goes only to the issuer it was stored for.
        XCTAssertEqual(
            s.tv(
                "set", "q", "--provider", "q", stdin: #"{"access_token":"old","refresh_token":"r-old","expires_at":1}"#
            ).status, 0)
        let r = s.tv("get", "q")
        XCTAssertEqual(r.status, 75, r.stderr)
        XCTAssertTrue(r.stderr.lowercased().contains("certificate"), r.stderr)
        XCTAssertEqual(try String(contentsOfFile: dir + "/cert.pem", encoding: .utf8).isEmpty, false)
    }

    func testFiveMiBBodyIsRefused() throws {
        let s = try sandbox("/huge")
        let r = s.tv("get", "q")
        XCTAssertEqual(r.status, 65, r.stderr)
        XCTAssertTrue(r.stderr.contains("larger than 1 MiB"), r.stderr)
        XCTAssertEqual(s.tv("get", "q", "--field", "uid").out, "7", "the record is untouched")
    }
}
