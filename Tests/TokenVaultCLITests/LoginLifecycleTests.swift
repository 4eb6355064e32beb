import Foundation
import TokenVaultKit
import XCTest

/// docs/providers.md against the authlib provider (started once for the class): one
/// pending login at a time, the flow that can work where no browser opens,
/// and TOKENVAULT_ACCOUNT.
final class LoginLifecycleTests: XCTestCase {
    nonisolated(unsafe) static var provider: LocalProvider!
    /// Its answers say when the refresh token dies (three days), as GitHub Apps' do.
    nonisolated(unsafe) static var mortal: LocalProvider!

    override class func setUp() {
        provider = try! LocalProvider()
        mortal = try! LocalProvider(refreshTTL: 3 * 86400)
    }

    override class func tearDown() {
        provider.stop()
        mortal.stop()
    }

    var provider: LocalProvider { Self.provider }

    func sandbox(extraConfig: String = "") throws -> Sandbox {
        let s = Sandbox()
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        s.env["BROWSER_LOG"] = s.home + "/browser.log"
        try s.writeConfig(provider.config + "\nuserinfo_url = \"\(provider.base)/api/me\"\n" + extraConfig)
        return s
    }

    /// How often a browser was opened in `s`.
    func openings(_ s: Sandbox) -> Int {
        ((try? String(contentsOfFile: s.home + "/browser.log", encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    func codesIssued() throws -> Int { try provider.stats()["issued_authorization_code"] ?? 0 }

    /// Starts `login local` in the background with a user who takes `delay`
    /// seconds, and returns once its browser is open.
    func firstLogin(_ s: Sandbox, delay: Int = 3) -> DispatchGroup {
        let group = DispatchGroup()
        let result = Locked<Run?>(nil)
        DispatchQueue.global().async(group: group) {
            let r = s.tv("login", "local", env: ["BROWSER_DELAY": String(delay)], limit: 60)
            result.mutate { $0 = r }
            XCTAssertEqual(r.status, 0, "the first login: \(r.stderr)")
        }
        _ = eventually(20) { openings(s) > 0 }
        XCTAssertEqual(openings(s), 1, "the first login opened its browser")
        return group
    }

    // MARK: One pending login

    func testASecondLoginWithoutATerminalSaysOneIsPendingAndOpensNothing() throws {
        let s = try sandbox()
        let codes = try codesIssued()
        let first = firstLogin(s)
        let second = s.tv("login", "local", limit: 30)
        XCTAssertEqual(second.status, 75, second.stderr)
        XCTAssertTrue(second.stderr.contains("already pending (process "), second.stderr)
        XCTAssertEqual(second.stderr.split(separator: "\n").count, 2, second.stderr)
        XCTAssertTrue(second.stderr.hasSuffix("hint: nothing was changed; try again later\n"), second.stderr)
        // Background callers of every kind: none starts a login of its own.
        let device = s.tv("login", "local", "--device", limit: 30)
        XCTAssertEqual(device.status, 75, device.stderr)
        first.wait()
        XCTAssertEqual(openings(s), 1, "never two browsers")
        XCTAssertEqual(try codesIssued(), codes + 1, "never two code exchanges")
        XCTAssertEqual(provider.resourceStatus(s.tv("get", "local").out), 200)
    }

    func testASecondLoginOnATerminalWaitsAndUsesTheFirstOnesResult() throws {
        let s = try sandbox()
        let codes = try codesIssued()
        let first = firstLogin(s)
        let second = runProcess(
            "/usr/bin/python3",
            [Paths.fixtures.appendingPathComponent("on_pty.py").path, Paths.binary, "login", "local"],
            env: s.env, limit: 60)
        first.wait()
        XCTAssertEqual(second.status, 0, second.stdout)
        XCTAssertTrue(second.stdout.contains("already pending"), second.stdout)
        XCTAssertTrue(
            second.stdout.contains("the other login finished: logged in to local as Alice Example"), second.stdout)
        XCTAssertEqual(openings(s), 1)
        XCTAssertEqual(try codesIssued(), codes + 1)
    }

    func testAnInterruptedOrKilledLoginFreesTheWayAtOnce() throws {
        let s = try sandbox()
        for signal in ["INT", "TERM", "KILL"] {
            // bash with job control on, so the background login takes SIGINT as
            // a Ctrl-C would (a non-interactive sh starts it with SIGINT ignored).
            let r = runProcess(
                "/bin/bash",
                [
                    "-c",
                    """
                    set -m
                    BROWSER_MODE=ignore "$TV" login local --timeout 60 2>/dev/null &
                    pid=$!
                    while [ ! -s "$BROWSER_LOG" ]; do sleep 0.05; done
                    kill -\(signal) $pid; wait $pid
                    echo "first=$?"
                    "$TV" login local --timeout 20
                    echo "second=$?"
                    """,
                ], env: s.env.merging(["TV": Paths.binary]) { $1 })
            XCTAssertTrue(r.stdout.contains("second=0"), "\(signal): \(r.stdout) \(r.stderr)")
            XCTAssertFalse(r.stdout.contains("first=0"))
            XCTAssertFalse(r.stderr.contains("pending"), r.stderr)
            try? FileManager.default.removeItem(atPath: s.home + "/browser.log")
        }
    }

    // MARK: Ctrl-C says what was and was not stored

    func testCtrlCDuringALoginSaysWhatWasAndWasNotStored() throws {
        let s = try sandbox()
        XCTAssertEqual(s.tv("login", "local", limit: 60).status, 0)
        let before = s.tv("get", "local").out
        // During the browser wait, with a credential already stored.
        let browser = s.onTerminal(
            ["login", "local", "--timeout", "60"], interruptAfter: "waiting for the browser login: ",
            env: ["BROWSER_MODE": "ignore"])
        XCTAssertEqual(browser.status, 130, browser.stdout)
        XCTAssertTrue(
            browser.stdout.hasSuffix(
                "s left (Ctrl-C to stop)^C\u{1B}[Ktokenvault: interrupted; nothing was stored: the login to local did not finish, and the credential stored under 127.0.0.1:\(provider.port) (default) is unchanged\n"
            ),
            "the wait line is cleared and one line says it: \(browser.stdout.debugDescription)")
        XCTAssertEqual(s.tv("get", "local").out, before)
        // During device-flow polling, with nothing stored: the wait line repeats the code and counts down.
        let fresh = try sandbox()
        let device = fresh.onTerminal(
            ["login", "local", "--device", "--no-qr", "--timeout", "60"], interruptAfter: "(Ctrl-C to stop)")
        XCTAssertEqual(device.status, 130, device.stdout)
        let code = try XCTUnwrap(
            device.stdout.range(of: #"enter the code: (\S+)"#, options: .regularExpression).map {
                String(device.stdout[$0].split(separator: " ").last!)
            })
        XCTAssertTrue(
            device.stdout.range(
                of:
                    "tokenvault: waiting for approval: [0-9]+ s left; enter \(code) at \(provider.base)/device \\(Ctrl-C to stop\\)",
                options: .regularExpression) != nil, device.stdout)
        XCTAssertTrue(
            device.stdout.hasSuffix(
                "tokenvault: interrupted; nothing was stored: the login to local did not finish, and 127.0.0.1:\(provider.port) (default) still has no credential\n"
            ),
            device.stdout)
        XCTAssertEqual(fresh.tv("get", "local").status, 3)
        // Without a terminal the line is the same, and nothing is drawn.
        try FileManager.default.removeItem(atPath: s.home + "/browser.log")
        let piped = runProcess(
            "/bin/bash",
            [
                "-c",
                """
                set -m
                BROWSER_MODE=ignore "$TV" login local --timeout 60 2>"$HOME/err" &
                pid=$!
                while [ ! -s "$BROWSER_LOG" ]; do sleep 0.05; done
                kill -INT $pid; wait $pid
                echo "status=$?"
                """,
            ], env: s.env.merging(["TV": Paths.binary]) { $1 }, limit: 60)
        XCTAssertTrue(piped.stdout.contains("status=130"), piped.stdout + piped.stderr)
        let err = try String(contentsOfFile: s.home + "/err", encoding: .utf8)
        XCTAssertTrue(
            err.hasSuffix(
                "\ntokenvault: interrupted; nothing was stored: the login to local did not finish, and the credential stored under 127.0.0.1:\(provider.port) (default) is unchanged\n"
            ), err)
        XCTAssertFalse(err.contains("\u{1B}"), err)
        XCTAssertEqual(s.tv("get", "local").out, before)
    }

    // MARK: The flow that can work here

    func testOverSSHWithoutADisplayTheDeviceFlowIsChosenAndSaidSo() throws {
        let s = try sandbox()
        let ssh = ["SSH_CONNECTION": "192.0.2.7 50522 192.0.2.1 22", "BROWSER": ""]
        var env = s.env.merging(ssh) { $1 }
        env["BROWSER"] = nil
        let r = runProcess(
            "/usr/bin/python3",
            [
                Paths.fixtures.appendingPathComponent("device_login.py").path, Paths.binary, "local",
                provider.base, "approve", "--timeout", "60",
            ], env: env, limit: 90)
        XCTAssertEqual(r.out, "0", r.stderr)
        XCTAssertTrue(
            r.stderr.contains("no browser can open here (an SSH session without a display): using the device flow"),
            r.stderr)
        XCTAssertEqual(openings(s), 0)
        XCTAssertEqual(provider.resourceStatus(s.tv("get", "local").out), 200)
        // --browser opens one all the same.
        let forced = s.tv("login", "local", "--browser", env: ["SSH_CONNECTION": ssh["SSH_CONNECTION"]!], limit: 60)
        XCTAssertEqual(forced.status, 0, forced.stderr)
        XCTAssertEqual(openings(s), 1)
        // A forwarded display is a way to open one.
        XCTAssertEqual(
            s.tv(
                "login", "local", env: ["SSH_CONNECTION": ssh["SSH_CONNECTION"]!, "DISPLAY": "localhost:10.0"],
                limit: 60
            ).status, 0)
        XCTAssertEqual(openings(s), 2)
        XCTAssertEqual(s.tv("login", "local", "--browser", "--device").status, 64)
    }

    func testWithoutADeviceFlowPasteModeIsChosen() throws {
        // The same provider, without its device endpoint.
        let s = Sandbox()
        try s.writeConfig(
            provider.config.split(separator: "\n").filter { !$0.hasPrefix("device_authorization_url") }.joined(
                separator: "\n"))
        let r = runProcess(
            "/usr/bin/python3",
            [Paths.fixtures.appendingPathComponent("paste_login.py").path, Paths.binary, "local", "--timeout", "60"],
            env: s.env, limit: 60)
        XCTAssertEqual(r.out, "0", r.stderr)
        XCTAssertTrue(
            r.stderr.contains(
                "no browser can open here (no $BROWSER, DISPLAY or WAYLAND_DISPLAY, and no desktop portal or graphical session on the session bus): paste mode"
            ),
            r.stderr)
        XCTAssertEqual(provider.resourceStatus(s.tv("get", "local").out), 200)
    }

    // MARK: QR code

    func qrLogin(_ s: Sandbox, _ args: String...) throws -> [String: Any] {
        let r = runProcess(
            "/usr/bin/python3",
            [Paths.fixtures.appendingPathComponent("qr_device_login.py").path, Paths.binary, "local", provider.base]
                + args,
            env: s.env, limit: 90)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], r.stderr)
    }

    func testTheDeviceFlowDrawsAQRCodeThatZbarReads() throws {
        let s = try sandbox()
        let drawn = try qrLogin(s)
        XCTAssertEqual(drawn["status"] as? Int, 0)
        let code = try XCTUnwrap(drawn["code"] as? String)
        // verification_uri_complete: the phone lands with the code filled in.
        XCTAssertEqual(drawn["decoded"] as? String, "\(provider.base)/device?user_code=\(code)")
        XCTAssertGreaterThan(drawn["lines"] as? Int ?? 0, 10)
        XCTAssertEqual(provider.resourceStatus(s.tv("get", "local").out), 200)
        // --no-qr: nothing drawn.
        let plain = try qrLogin(s, "--no-qr")
        XCTAssertEqual(plain["status"] as? Int, 0)
        XCTAssertEqual(plain["lines"] as? Int, 0)
        XCTAssertNil(plain["decoded"] as? String)
        // stderr not a terminal: nothing drawn either.
        let piped = runProcess(
            "/usr/bin/python3",
            [
                Paths.fixtures.appendingPathComponent("device_login.py").path, Paths.binary, "local",
                provider.base, "approve",
            ], env: s.env, limit: 90)
        XCTAssertEqual(piped.out, "0", piped.stderr)
        XCTAssertFalse(
            piped.stderr.contains("\u{2580}") || piped.stderr.contains("\u{2588}") || piped.stderr.contains("\u{1B}["),
            piped.stderr)
    }

    // MARK: TOKENVAULT_ACCOUNT

    func testTOKENVAULT_ACCOUNTPicksTheAccountEverywhereAndSaysWhy() throws {
        let s = try sandbox()
        let work = ["TOKENVAULT_ACCOUNT": "work"]
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "home-token").status, 0)
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "work-token", env: work).status, 0)
        XCTAssertEqual(s.tv("get", "api.example.com", env: work).out, "work-token")
        XCTAssertEqual(s.tv("get", "api.example.com").out, "home-token")
        XCTAssertEqual(
            s.tv("get", "api.example.com", "--account", "default", env: work).out, "home-token", "--account wins")
        let status = s.tv("status", "api.example.com", env: work)
        XCTAssertTrue(status.stdout.contains("account:     work (from TOKENVAULT_ACCOUNT)"), status.stdout)
        XCTAssertTrue(s.tv("status", "api.example.com").stdout.contains("default (the default)"))
        let verbose = s.tv("get", "api.example.com", "--verbose", env: work)
        XCTAssertEqual(verbose.out, "work-token")
        XCTAssertEqual(verbose.stderr, "tokenvault: account work (from TOKENVAULT_ACCOUNT)\n")
        XCTAssertEqual(s.tv("header", "api.example.com", env: work).out, "Authorization: Bearer work-token")
        XCTAssertEqual(
            s.tv("exec", "api.example.com", "--", "/bin/sh", "-c", "echo $TOKENVAULT_ACCESS_TOKEN", env: work).out,
            "work-token")
        XCTAssertEqual(s.tv("get", "api.example.com", env: ["TOKENVAULT_ACCOUNT": "nobody"]).status, 3)
        let bad = s.tv("get", "api.example.com", env: ["TOKENVAULT_ACCOUNT": String(repeating: "x", count: 300)])
        XCTAssertEqual(bad.status, 64, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("TOKENVAULT_ACCOUNT"), bad.stderr)
        // The login and the git adapter follow it too; delete removes only that account.
        XCTAssertEqual(s.tv("login", "local", env: work, limit: 60).status, 0)
        XCTAssertEqual(s.tv("get", "local").status, 3, "stored under work, not default")
        XCTAssertEqual(s.tv("get", "local", "--account", "work").status, 0)
        XCTAssertEqual(s.tv("delete", "api.example.com", env: work).status, 0)
        XCTAssertEqual(s.tv("get", "api.example.com").out, "home-token")
        XCTAssertEqual(s.tv("get", "api.example.com", env: work).status, 3)
    }

    // MARK: Refresh-token lifetime

    func record(_ s: Sandbox) throws -> [String: Any] {
        let r = s.tv("status", "local", "--json")
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], r.stderr)
    }

    func refreshExpiresAt(_ s: Sandbox) throws -> Int { try record(s)["refresh_expires_at"] as? Int ?? 0 }

    var now: Int { Int(Date().timeIntervalSince1970) }

    /// "in 2d 23h", or "in 3d 0h" when no second has passed yet.
    func threeDays(_ text: String) -> Bool { text.contains("in 2d 23h") || text.contains("in 3d 0h") }

    func testTheProvidersRefreshTokenLifetimeIsShownAndWarnedOfOnceADay() throws {
        let s = Sandbox()
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        try s.writeConfig(Self.mortal.config)
        XCTAssertEqual(s.tv("login", "local", limit: 60).status, 0)
        let dies = try refreshExpiresAt(s)
        XCTAssertTrue((now + 3 * 86400 - 60...now + 3 * 86400).contains(dies), "\(dies)")
        let status = s.tv("status", "local")
        XCTAssertEqual(status.status, 0, "a dying refresh token still works")
        XCTAssertTrue(
            status.stdout.contains(
                "refresh token: dies \(ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(dies)))) (in "
            ), status.stdout)
        XCTAssertTrue(threeDays(status.stdout), status.stdout)
        XCTAssertTrue(threeDays(s.tv("list").stdout), s.tv("list").stdout)
        // get warns (fewer than 7 days left), once a day per credential.
        let first = s.tv("get", "local")
        XCTAssertEqual(first.status, 0)
        XCTAssertTrue(
            first.stderr.hasPrefix(
                "tokenvault: warning: the refresh token for 127.0.0.1:\(Self.mortal.port) (default) dies in "),
            first.stderr)
        XCTAssertTrue(threeDays(first.stderr), first.stderr)
        XCTAssertTrue(first.stderr.contains("log in again before then: tokenvault login local"), first.stderr)
        XCTAssertFalse(first.stderr.contains(first.out), "no secret in the warning")
        XCTAssertEqual(s.tv("get", "local").stderr, "", "not on every call")
        XCTAssertEqual(s.tv("header", "local").stderr, "")
        let nextDay = s.shell(
            #"touch -d '25 hours ago' "$XDG_RUNTIME_DIR"/tokenvault/warned-*.lock && "$TV" get local"#)
        XCTAssertTrue(threeDays(nextDay.stderr), "a day later: \(nextDay.stderr)")
        // A refresh brings the provider's new figure.
        try Self.mortal.expireStored(in: s)
        XCTAssertEqual(s.tv("get", "local").status, 0)
        XCTAssertGreaterThanOrEqual(try refreshExpiresAt(s), dies)
        // warn_before (a top-level key) sets the threshold; 0 turns the warning off.
        for (value, warns) in [(86400, false), (0, false), (4 * 86400, true)] {
            try s.writeConfig("warn_before = \(value)\n" + Self.mortal.config)
            _ = s.shell(#"rm -f "$XDG_RUNTIME_DIR"/tokenvault/warned-*.lock"#)
            XCTAssertEqual(s.tv("get", "local").stderr.contains("dies in"), warns, "warn_before = \(value)")
        }
        try s.writeConfig("warn_before = -1\n" + Self.mortal.config)
        XCTAssertEqual(s.tv("get", "local").status, 78)
    }

    func testProviderKeysEstimateWhenTheRefreshTokenDies() throws {
        let s = try sandbox(extraConfig: "refresh_token_idle = 864000\n")
        XCTAssertEqual(s.tv("login", "local", limit: 60).status, 0)
        let idle = try refreshExpiresAt(s)
        XCTAssertTrue((now + 864000 - 60...now + 864000).contains(idle), "10 days unused: \(idle)")
        XCTAssertEqual(s.tv("get", "local").stderr, "", "more than 7 days left")
        // Each use of the refresh token restarts the idle clock (a use two seconds later, by the run's clock).
        try provider.expireStored(in: s)
        let later = s.tv("get", "local", at: FixedClock(SystemClock().now + 2))
        XCTAssertEqual(later.status, 0, later.stderr)
        XCTAssertGreaterThan(try refreshExpiresAt(s), idle)
        // A fixed lifetime shorter than the idle limit wins.
        try s.writeConfig(
            provider.config
                + "\nuserinfo_url = \"\(provider.base)/api/me\"\nrefresh_token_idle = 864000\nrefresh_token_lifetime = 172800\n"
        )
        XCTAssertEqual(s.tv("login", "local", limit: 60).status, 0)
        let both = try refreshExpiresAt(s)
        XCTAssertTrue((now + 172800 - 60...now + 172800).contains(both), "\(both)")
        let warned = s.tv("get", "local")
        XCTAssertTrue(
            warned.stderr.contains("dies in 1d 23h") || warned.stderr.contains("dies in 2d 0h"), warned.stderr)
        // What a token endpoint said is kept by set as well.
        XCTAssertEqual(
            s.tv(
                "set", "api.example.com",
                stdin: #"{"access_token":"a","refresh_token":"r","refresh_token_expires_in":15897600}"#
            ).status, 0)
        let told = s.tv("status", "api.example.com").stdout
        XCTAssertTrue(told.contains("(in 183d 23h)") || told.contains("(in 184d 0h)"), told)
        for bad in ["refresh_token_idle = 0", "refresh_token_lifetime = -5"] {
            try s.writeConfig(provider.config + "\n" + bad + "\n")
            XCTAssertEqual(s.tv("get", "local").status, 78, bad)
        }
    }
}
