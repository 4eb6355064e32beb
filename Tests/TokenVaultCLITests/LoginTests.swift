import Foundation
import XCTest

/// `tokenvault login` against the authlib provider.
final class LoginTests: XCTestCase {
    var provider: LocalProvider!

    override func setUpWithError() throws { provider = try LocalProvider() }
    override func tearDown() { provider.stop() }

    func sandbox(extraConfig: String = "") throws -> Sandbox {
        let s = Sandbox()
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        try s.writeConfig(provider.config + "\nuserinfo_url = \"\(provider.base)/api/me\"\n" + extraConfig)
        return s
    }

    func testLoopbackLoginWithPKCEStoresAWorkingToken() throws {
        let s = try sandbox()
        let r = s.tv("login", "local", limit: 60)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(
            r.stderr.contains("\(provider.base)/authorize?response_type=code&client_id=tv-client"),
            "the URL is printed: \(r.stderr)")
        XCTAssertTrue(r.stderr.contains("code_challenge_method=S256"), r.stderr)
        XCTAssertTrue(r.stderr.contains("logged in to local as Alice Example"), r.stderr)
        XCTAssertEqual(r.stdout, "", "nothing on stdout")
        let token = s.tv("get", "local").out
        XCTAssertEqual(provider.resourceStatus(token), 200)
        XCTAssertFalse(r.stderr.contains(token), "the token is never on stderr")
        XCTAssertEqual(try provider.stats()["issued_authorization_code"], 1)
        XCTAssertTrue(s.tv("status", "local").stdout.contains("user:        Alice Example"))
        // A second account for the same service.
        XCTAssertEqual(s.tv("login", "local", "--account", "work", limit: 60).status, 0)
        XCTAssertNotEqual(s.tv("get", "local", "--account", "work").out, token)
    }

    func testAUserinfoThatWantsAnotherScopeIsSaidOnceQuietly() throws {
        let s = Sandbox()
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        try s.writeConfig(provider.config + "\nuserinfo_url = \"\(provider.base)/api/admin-me\"\n")
        let first = s.tv("login", "local", limit: 60)
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertTrue(
            first.stderr.contains("tokenvault: who logged in is not shown (userinfo_url answered HTTP 403"),
            first.stderr)
        XCTAssertFalse(first.stderr.contains("warning"), first.stderr)
        let second = s.tv("login", "local", limit: 60)
        XCTAssertEqual(second.status, 0, second.stderr)
        XCTAssertFalse(second.stderr.contains("who logged in"), "said once: \(second.stderr)")
    }

    func testDeniedLoginExits4AndStoresNothing() throws {
        let s = try sandbox()
        let r = s.tv("login", "local", "--account", "bob", env: ["BROWSER_MODE": "deny"], limit: 60)
        XCTAssertEqual(r.status, 4, r.stderr)
        XCTAssertTrue(r.stderr.contains("the access was not approved at local's page (access_denied"), r.stderr)
        // The hint, literally, is this login again: the same account.
        XCTAssertTrue(
            r.stderr.contains("hint: to try again, run: tokenvault login local --account bob and approve"), r.stderr)
        XCTAssertEqual(s.tv("get", "local", "--account", "bob").status, 3)
    }

    func testForgedStateDoesNotEndTheLogin() throws {
        let s = try sandbox()
        // Only a forged redirect: the login goes on waiting until its timeout.
        let r = s.tv("login", "local", "--timeout", "3", env: ["BROWSER_MODE": "bad-state"], limit: 60)
        XCTAssertEqual(r.status, 75, r.stderr)
        XCTAssertEqual(s.tv("get", "local").status, 3)
        // A forged state and an error without state from another local process
        // get an error page; the user's own redirect then completes the login.
        let ok = s.tv("login", "local", env: ["BROWSER_MODE": "forged-first"], limit: 60)
        XCTAssertEqual(ok.status, 0, ok.stderr)
        XCTAssertEqual(s.tv("status", "local").status, 0)
    }

    func testATricklingClientDoesNotStretchTheTimeout() throws {
        let s = try sandbox()
        let start = Date()
        let r = s.tv("login", "local", "--timeout", "3", env: ["BROWSER_MODE": "trickle"], limit: 60)
        XCTAssertEqual(r.status, 75, r.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(start), 20, "--timeout is a hard bound")
    }

    func testCallbackErrorOtherThanAccessDeniedIs76() throws {
        let s = try sandbox()
        let r = s.tv("login", "local", env: ["BROWSER_MODE": "invalid-scope"], limit: 60)
        XCTAssertEqual(r.status, 76, r.stderr)
        XCTAssertTrue(r.stderr.contains("invalid_scope: scope nope is unknown"), r.stderr)
    }

    func testFixedRedirectURIPort() throws {
        // A free port, as Weibo users register one fixed callback.
        let probe = try LoopbackPortProbe()
        let port = probe.port
        probe.close()
        let s = try sandbox(extraConfig: "redirect_uri = \"http://127.0.0.1:\(port)/callback\"\n")
        let r = s.tv("login", "local", limit: 60)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("redirect_uri=http%3A%2F%2F127.0.0.1%3A\(port)%2Fcallback"), r.stderr)
        XCTAssertEqual(provider.resourceStatus(s.tv("get", "local").out), 200)
    }

    /// `$BROWSER` inherits no descriptor of tokenvault's: not the redirect
    /// listener, not the vault or a lock. So a browser that stays open does
    /// not hold a fixed redirect port, and the next login on it succeeds
    /// (RFC 8252 §8.3: the port is closed once the response has arrived).
    func testTheBrowserInheritsNothingAndAFixedPortIsFreeForTheNextLogin() throws {
        let probe = try LoopbackPortProbe()
        let port = probe.port
        probe.close()
        let s = try sandbox(extraConfig: "redirect_uri = \"http://127.0.0.1:\(port)/callback\"\n")
        s.env["TOKENVAULT_KEY_TTL"] = "60"
        s.expect("set", "api.before.example", stdin: "t\n")  // the vault exists and is open during the login
        let fds = s.home + "/browser-fds"
        // Started with one descriptor of its parent's open (not close-on-exec), which the browser must not get either.
        var env = s.env
        (env["BROWSER_MODE"], env["BROWSER_FDS"]) = ("linger", fds)
        let held = s.home + "/held-by-the-caller"
        let first = runProcess(
            "/usr/bin/python3",
            [
                "-c",
                "import os, sys; os.closerange(3, 65536); fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY); "
                    + "os.set_inheritable(fd, True); os.execv(sys.argv[2], sys.argv[2:])", held, Paths.binary,
            ] + ["login", "local"], env: env, limit: 60)
        XCTAssertEqual(first.status, 0, first.stderr)
        let listing = try String(contentsOfFile: fds, encoding: .utf8)
        XCTAssertFalse(listing.contains("socket:"), "no socket reached the browser: \(listing)")
        XCTAssertFalse(listing.contains(held), "nothing of tokenvault's parent reached the browser: \(listing)")
        XCTAssertFalse(
            listing.contains(s.home + "/data") || listing.contains(s.home + "/run"),
            "no vault or lock file reached the browser: \(listing)")
        let second = s.tv("login", "local", "--account", "again", limit: 60)
        XCTAssertEqual(second.status, 0, "the port is free while the first browser lives: \(second.stderr)")
    }

    func testNoRedirectWithinTheTimeoutIs75() throws {
        let s = try sandbox()
        // A browser that never comes back.
        let r = s.tv("login", "local", "--timeout", "1", env: ["BROWSER": "true"], limit: 60)
        XCTAssertEqual(r.status, 75, r.stderr)
    }

    func testPasteModeForSSH() throws {
        let s = try sandbox()
        let r = runProcess(
            "/usr/bin/python3", [Paths.fixtures.appendingPathComponent("paste_login.py").path, Paths.binary, "local"],
            env: s.env, limit: 60)
        XCTAssertEqual(r.out, "0", r.stderr)
        XCTAssertEqual(provider.resourceStatus(s.tv("get", "local").out), 200)
    }

    func testClientCredentialsLoginAndRefetch() throws {
        let s = try sandbox(
            extraConfig: """

                [providers.bot]
                service = "bot.127.0.0.1.example"
                token_url = "\(provider.base)/token"
                grant = "client_credentials"
                scopes = ["read"]
                client_id = "tv-bot"
                client_secret_command = "printf bot-secret"
                userinfo_url = "\(provider.base)/userinfo"
                """)
        // No user behind a client's own grant: the userinfo endpoint is not asked, nothing is warned.
        let login = s.tv("login", "bot")
        XCTAssertEqual(login.status, 0, login.stderr)
        XCTAssertFalse(login.stderr.contains("who logged in") || login.stderr.contains("Alice"), login.stderr)
        XCTAssertEqual(provider.resourceStatus(s.tv("get", "bot").out), 200)
        XCTAssertEqual(s.tv("refresh", "bot").status, 0)
        XCTAssertEqual(try provider.stats()["issued_client_credentials"], 2)
    }

    func deviceLogin(_ s: Sandbox, _ answer: String) -> Run {
        runProcess(
            "/usr/bin/python3",
            [
                Paths.fixtures.appendingPathComponent("device_login.py").path, Paths.binary, "local",
                provider.base, answer,
            ], env: s.env, limit: 90)
    }

    func testDeviceFlowApproved() throws {
        let s = try sandbox()
        let r = deviceLogin(s, "approve")
        XCTAssertEqual(r.out, "0", r.stderr)
        XCTAssertEqual(provider.resourceStatus(s.tv("get", "local").out), 200)
        XCTAssertGreaterThanOrEqual(try provider.stats()["device_polls"] ?? 0, 1)
    }

    func testDeviceFlowDeniedExits4() throws {
        let s = try sandbox()
        let r = deviceLogin(s, "deny")
        XCTAssertEqual(r.out, "4", r.stderr)
        XCTAssertTrue(r.stderr.contains("access_denied"), r.stderr)
        XCTAssertEqual(s.tv("get", "local").status, 3)
    }

    func testDeviceFlowSlowsDownWhenAsked() throws {
        provider.stop()
        provider = try LocalProvider(slowDown: true)
        let s = try sandbox()
        let started = Date()
        let r = deviceLogin(s, "approve")
        XCTAssertEqual(r.out, "0", r.stderr)
        XCTAssertEqual(try provider.stats()["slow_downs"], 1)
        // interval 1 s, +5 s after slow_down: the second poll cannot come before 6 s.
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 6)
    }

    func testUnknownProviderAndOAuth1() throws {
        let s = try sandbox()
        XCTAssertEqual(s.tv("login", "nosuch").status, 78)
        XCTAssertEqual(s.tv("login", "weibo").status, 78, "no client id configured")
        XCTAssertTrue(s.tv("login", "weibo").stderr.contains("open.weibo.com"))
    }
}

/// Finds a free port on 127.0.0.1.
struct LoopbackPortProbe {
    let fd: Int32
    let port: Int

    init() throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = self.fd
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        port = Int(UInt16(bigEndian: addr.sin_port))
    }

    func close() { Glibc.close(fd) }
}
