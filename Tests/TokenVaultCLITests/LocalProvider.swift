import Foundation
import XCTest

/// The authlib provider in Tests/Fixtures/oauth_provider.py, on a free loopback port.
final class LocalProvider {
    let port: Int
    private let process: Process

    init(tokenTTL: Int = 3600, slowDown: Bool = false, refreshTTL: Int? = nil, extra: [String] = []) throws {
        (process, port) = try startFixtureServer(
            "oauth_provider.py",
            ["--token-ttl", String(tokenTTL)] + (slowDown ? ["--slow-down"] : [])
                + (refreshTTL.map { ["--refresh-ttl", String($0)] } ?? []) + extra)
    }

    deinit { stop() }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    var base: String { "http://127.0.0.1:\(port)" }

    /// Counters of the token endpoint.
    func stats() throws -> [String: Int] {
        try fixtureStats(base + "/stats")
    }

    /// Waits up to 10 s for the provider to count more refreshes than `before`; true when it did.
    func waitForRefresh(after before: Int) throws -> Bool {
        eventually(10) { ((try? stats())?["refreshes"] ?? 0) > before }
    }

    /// A fresh token-endpoint answer, by the authorization-code flow with PKCE.
    func obtainToken() throws -> [String: Any] {
        let r = runProcess(
            "/usr/bin/python3", [Paths.fixtures.appendingPathComponent("obtain_token.py").path, String(port)],
            env: ["PATH": "/usr/bin:/bin"])
        guard r.status == 0, let o = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        else {
            throw NSError(
                domain: "LocalProvider", code: 2, userInfo: [NSLocalizedDescriptionKey: "obtain_token.py: \(r.stderr)"])
        }
        return o
    }

    /// The HTTP status of the protected resource for a bearer token.
    func resourceStatus(_ token: String) -> Int {
        let r = runProcess(
            "/usr/bin/curl",
            ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer \(token)", base + "/api/me"],
            env: [:])
        return Int(r.stdout) ?? -1
    }

    /// Stores a real token, already expired, as "local" through `s`; returns its refresh token.
    @discardableResult
    func storeExpired(in s: Sandbox) throws -> String {
        var token = try obtainToken()
        token.removeValue(forKey: "expires_in")
        token["expires_at"] = Int(Date().timeIntervalSince1970) - 10
        let json = String(decoding: try JSONSerialization.data(withJSONObject: token), as: UTF8.self)
        let r = s.tv("set", "local", "--provider", "local", stdin: json)
        XCTAssertEqual(r.status, 0, r.stderr)
        return token["refresh_token"] as? String ?? ""
    }

    /// Marks the stored "local" credential expired in `s`'s vault, tokens kept.
    /// With `revoke`, the provider also stops honouring its access token (the
    /// refresh token stays good), so only a renewed token works anywhere.
    func expireStored(in s: Sandbox, revoke: Bool = false, account: String = "default") throws {
        let token = try s.expireStored("local", account: account)
        if revoke { revokeAccess(token) }
    }

    /// The provider stops honouring one access token; its refresh token stays good.
    func revokeAccess(_ token: String) {
        let r = runProcess(
            "/usr/bin/curl",
            ["-s", "-f", "-o", "/dev/null", "--data-urlencode", "token@-", base + "/admin/revoke-access"],
            stdin: token, env: [:])
        XCTAssertEqual(r.status, 0, "revoke-access: \(r.stderr)")
    }

    /// The config that names this provider "local".
    var config: String {
        """
        [providers.local]
        service = "127.0.0.1:\(port)"
        authorize_url = "\(base)/authorize"
        token_url = "\(base)/token"
        revoke_url = "\(base)/revoke"
        device_authorization_url = "\(base)/device_authorization"
        client_id = "tv-client"
        client_secret = "tv-secret"
        scopes = ["read"]
        """
    }
}
