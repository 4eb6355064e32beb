import Foundation
import TokenVaultKit
import XCTest

/// Refresh on read against a real OAuth server with rotating refresh tokens
/// and reuse detection: one refresh for many concurrent readers, on both backends.
final class RefreshTests: XCTestCase {
    func sandbox(_ provider: LocalProvider, backend: String, keyring: PrivateKeyring? = nil) throws -> Sandbox {
        let s = Sandbox(backend: backend)
        if let keyring { s.env.merge(keyring.env) { $1 } }
        try s.writeConfig(provider.config)
        return s
    }

    @discardableResult
    func storeExpired(_ s: Sandbox, _ provider: LocalProvider) throws -> String {
        try provider.storeExpired(in: s)
    }

    func concurrentGets(_ s: Sandbox, count: Int) -> [Run] { s.concurrently(count, "get", "local") }

    func checkOneRefreshPerRound(_ s: Sandbox, _ provider: LocalProvider, rounds: Int, readers: Int) throws {
        try storeExpired(s, provider)
        for round in 0..<rounds {
            let before = try provider.stats()
            let runs = concurrentGets(s, count: readers)
            let after = try provider.stats()
            XCTAssertEqual(runs.filter { $0.status != 0 }.map(\.stderr), [], "round \(round)")
            let printed = Swift.Set(runs.map(\.out))
            XCTAssertEqual(printed.count, 1, "round \(round): all \(readers) print the same token")
            XCTAssertEqual(
                (after["refreshes"] ?? 0) - (before["refreshes"] ?? 0), 1, "round \(round): exactly one refresh")
            XCTAssertEqual(after["reuse_detected"] ?? 0, 0, "round \(round): no refresh token replayed")
            XCTAssertEqual(provider.resourceStatus(printed.first ?? ""), 200, "round \(round): the provider accepts it")
            // Expire the stored token again for the next round (the chain must go on).
            let rt = s.tv("get", "local", "--field", "refresh_token").out
            let again = #"{"access_token":"\#(printed.first ?? "")","refresh_token":"\#(rt)","expires_at":1}"#
            XCTAssertEqual(s.tv("set", "local", "--provider", "local", stdin: again).status, 0)
        }
        // The chain still works afterwards.
        let last = s.tv("refresh", "local")
        XCTAssertEqual(last.status, 0, last.stderr)
        XCTAssertEqual(provider.resourceStatus(s.tv("get", "local").out), 200)
    }

    func testThirtyTwoConcurrentReadersOneRefreshFileBackend() throws {
        let provider = try LocalProvider()
        try checkOneRefreshPerRound(try sandbox(provider, backend: "file"), provider, rounds: 3, readers: 32)
    }

    func testThirtyTwoConcurrentReadersOneRefreshSecretService() throws {
        let keyring = try PrivateKeyring()
        defer { keyring.stop() }
        let provider = try LocalProvider()
        try checkOneRefreshPerRound(
            try sandbox(provider, backend: "secret-service", keyring: keyring), provider, rounds: 3, readers: 32)
    }

    func testAKilledLockHolderDoesNotBlockOthers() throws {
        let provider = try LocalProvider()
        let s = try sandbox(provider, backend: "file")
        try storeExpired(s, provider)
        XCTAssertEqual(s.tv("get", "local").status, 0)  // creates the credential's lock file
        let lockDir = s.home + "/run/tokenvault"
        let lock = try XCTUnwrap(
            FileManager.default.contentsOfDirectory(atPath: lockDir).first { $0.hasPrefix("refresh-") })
        // Another process takes the lock and dies without letting go.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        // --no-fork: the process that holds the lock is the one killed.
        holder.arguments = ["--exclusive", "--no-fork", lockDir + "/" + lock, "sleep", "60"]
        try holder.runNoted()
        XCTAssertTrue(
            eventually(10) {
                runProcess("/usr/bin/flock", ["--nonblock", "--exclusive", lockDir + "/" + lock, "true"], env: [:])
                    .status != 0
            }, "the holder has the lock")
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        try storeExpired(s, provider)
        // The limit only catches a hang: a dead holder's lock is gone at once.
        let r = s.tv("get", "local", limit: 20)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(provider.resourceStatus(r.out), 200)
    }

    func testInvalidGrantExits4AndKeepsTheRecord() throws {
        let provider = try LocalProvider()
        let s = try sandbox(provider, backend: "file")
        let before = try storeExpired(s, provider)
        // Revoking at the provider kills the refresh token's family.
        _ = runProcess(
            "/usr/bin/curl",
            ["-s", "-d", "token=\(before)&client_id=tv-client&client_secret=tv-secret", provider.base + "/revoke"],
            env: [:])
        let r = s.tv("get", "local")
        XCTAssertEqual(r.status, 4, r.stderr)
        XCTAssertTrue(r.stderr.contains("invalid_grant"), r.stderr)
        XCTAssertTrue(r.stderr.contains("hint: run: tokenvault login local"), r.stderr)
        XCTAssertFalse(r.stderr.contains(before), "no secret on stderr")
        // The record is kept as it was: read it with the independent decryptor.
        let dump = runProcess(
            "/usr/bin/python3", [Paths.fixtures.appendingPathComponent("decrypt_vault.py").path, s.vault],
            env: ["TOKENVAULT_PASSPHRASE": "correct horse", "PATH": "/usr/bin:/bin"])
        XCTAssertTrue(dump.stdout.contains(before), "the stored refresh token is unchanged")
    }

    func testRevokeAtTheProviderThenDeleteLocally() throws {
        let provider = try LocalProvider()
        let s = try sandbox(provider, backend: "file")
        let token = try provider.obtainToken()
        s.expect(
            "set", "local", "--provider", "local",
            stdin: String(decoding: try JSONSerialization.data(withJSONObject: token), as: UTF8.self))
        let access = token["access_token"] as? String ?? ""
        XCTAssertEqual(provider.resourceStatus(access), 200)
        let r = s.tv("revoke", "local")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try provider.stats()["revocations"], 1)
        XCTAssertEqual(provider.resourceStatus(access), 401, "revoking the refresh token revokes its access token")
        XCTAssertEqual(s.tv("get", "local").status, 3, "deleted locally")
    }

    func testRevokeKeepsTheLocalCopyWhenTheProviderIsAway() throws {
        let provider = try LocalProvider()
        let s = try sandbox(provider, backend: "file")
        let token = try provider.obtainToken()
        s.expect(
            "set", "local", "--provider", "local",
            stdin: String(decoding: try JSONSerialization.data(withJSONObject: token), as: UTF8.self))
        provider.stop()
        let r = s.tv("revoke", "local")
        XCTAssertEqual(r.status, 75, r.stderr)
        XCTAssertTrue(r.stderr.contains("cannot reach"), r.stderr)
        XCTAssertEqual(s.tv("get", "local").out, token["access_token"] as? String, "the local copy is kept")
        // Not tied to a provider: revoke says to use delete.
        s.expect("set", "api.plain.example", stdin: "t\n")
        XCTAssertEqual(s.tv("revoke", "api.plain.example").status, 64)
    }

    /// A provider that issues 20 s tokens, under the default min_valid (60):
    /// ten gets in a row renew at most once (docs/reference.md, "The renewal margin").
    func testTenGetsOfATwentySecondTokenRenewAtMostOnce() throws {
        let provider = try LocalProvider(tokenTTL: 20)
        let s = try sandbox(provider, backend: "file")
        let token = try provider.obtainToken()
        s.expect(
            "set", "local", "--provider", "local",
            stdin: String(decoding: try JSONSerialization.data(withJSONObject: token), as: UTF8.self))
        let before = try provider.stats()["refreshes"] ?? 0
        for _ in 0..<10 { XCTAssertEqual(s.expect("get", "local").status, 0) }
        XCTAssertLessThanOrEqual((try provider.stats()["refreshes"] ?? 0) - before, 1)
    }

    func testUnreachableProviderWhileValidWarnsAndPrints() throws {
        let provider = try LocalProvider()
        let s = try sandbox(provider, backend: "file")
        var token = try provider.obtainToken()
        // Renewed once less than half its lifetime is left. Times are whole seconds, and the
        // write may fall a second after expires_at was computed: a lifetime of 13 or 14 s, so a
        // margin of 6 or 7; 9 s later (the run's clock) 4 or 5 are left.
        token["expires_in"] = 14
        s.expect(
            "set", "local", "--provider", "local",
            stdin: String(decoding: try JSONSerialization.data(withJSONObject: token), as: UTF8.self))
        provider.stop()
        let later = FixedClock(SystemClock().now + 9)  // a lifetime passing, nothing to observe
        let r = s.tv("get", "local", at: later)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.out, token["access_token"] as? String)
        XCTAssertTrue(r.stderr.contains("warning: could not refresh"), r.stderr)
        XCTAssertEqual(s.tv("get", "local", "--min-valid", "0", at: later).stderr, "", "no refresh wanted: no warning")
        // Expired and unreachable: 75, nothing printed.
        token["expires_in"] = 0
        s.expect(
            "set", "local", "--provider", "local",
            stdin: String(decoding: try JSONSerialization.data(withJSONObject: token), as: UTF8.self))
        let gone = s.tv("get", "local")
        XCTAssertEqual(gone.status, 75, gone.stderr)
        XCTAssertEqual(gone.stdout, "")
    }
}
