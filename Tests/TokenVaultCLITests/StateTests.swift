import Foundation
import XCTest

/// docs/reference.md: every command agrees about a credential, on every backend, and
/// no read fails because someone writes. Each test is one of the
/// contradictions between commands that were once found.
final class StateTests: QuirkProviderTestCase {

    func sandbox(_ backend: String, path: String, grant: String = "authorization_code") throws -> Sandbox {
        let s = Sandbox(backend: backend)
        s.env.merge(Self.keyring.env) { $1 }
        try s.writeConfig(
            """
            [providers.q]
            service = "q-\(UUID().uuidString.prefix(8).lowercased()).example"
            token_url = "http://127.0.0.1:\(Self.port)\(path)"
            client_id = "cid"
            client_secret = "csecret"
            grant = "\(grant)"
            """)
        return s
    }

    /// After invalid_grant: status exits 4, list says so, get does not ask again,
    /// the record stays readable, refresh asks again, set clears the mark.
    func checkRefusalIsRemembered(_ backend: String) throws {
        let s = try sandbox(backend, path: "/invalid-grant")
        XCTAssertEqual(
            s.tv(
                "set", "q", "--provider", "q", stdin: #"{"access_token":"old","refresh_token":"r-old","expires_at":1}"#
            ).status, 0)
        let before = try stats()["/invalid-grant"] ?? 0
        XCTAssertEqual(s.tv("get", "q").status, 4)
        let status = s.tv("status", "q")
        XCTAssertEqual(status.status, 4, status.stdout)
        XCTAssertTrue(status.stdout.contains("state:") && status.stdout.contains("login required"), status.stdout)
        XCTAssertTrue(
            status.stdout.contains("can refresh:  no") || status.stdout.contains("can refresh: no"), status.stdout)
        XCTAssertTrue(s.tv("list").stdout.contains("login required"))
        XCTAssertTrue(s.tv("status", "--json").stdout.contains("\"login required\""))
        let again = s.tv("get", "q")
        XCTAssertEqual(again.status, 4)
        XCTAssertTrue(again.stderr.contains("hint: run: tokenvault login q"), again.stderr)
        XCTAssertEqual((try stats()["/invalid-grant"] ?? 0) - before, 1, "the provider is not asked again")
        // What is stored stays readable.
        let rt = s.tv("get", "q", "--no-refresh", "--field", "refresh_token")
        XCTAssertEqual(rt.status, 0, rt.stderr)
        XCTAssertEqual(rt.out, "r-old")
        XCTAssertEqual(s.tv("get", "q", "--field", "refresh_token").out, "r-old")
        let json = s.tv("get", "q", "--format", "json")
        XCTAssertEqual(json.status, 0, json.stderr)
        XCTAssertTrue(json.stdout.contains("\"refresh_token\":\"r-old\""), json.stdout)
        // An explicit refresh asks again.
        XCTAssertEqual(s.tv("refresh", "q").status, 4)
        XCTAssertEqual((try stats()["/invalid-grant"] ?? 0) - before, 2)
        // Migrating keeps the mark.
        if backend != "auto" {
            let other = backend == "file" ? "secret-service" : "file"
            XCTAssertEqual(s.tv("migrate", "--to", other).status, 0)
            let moved = s.tv("status", "q", env: ["TOKENVAULT_BACKEND": other])
            XCTAssertEqual(moved.status, 4, moved.stdout + moved.stderr)
            XCTAssertEqual(s.tv("migrate", "--to", backend, env: ["TOKENVAULT_BACKEND": other]).status, 0)
        }
        // A set is a new record: the mark goes.
        XCTAssertEqual(
            s.tv("set", "q", "--provider", "q", stdin: #"{"access_token":"fresh","expires_in":3600}"#).status, 0)
        XCTAssertEqual(s.tv("status", "q").status, 0)
        XCTAssertEqual(s.tv("get", "q").out, "fresh")
    }

    func testARefusalIsRememberedFile() throws { try checkRefusalIsRemembered("file") }
    func testARefusalIsRememberedSecretService() throws { try checkRefusalIsRemembered("secret-service") }
    func testARefusalIsRememberedAuto() throws { try checkRefusalIsRemembered("auto") }

    /// An expired client-credentials token: status, list and get all say it renews.
    func testClientCredentialsExpiredIsRefreshableEverywhere() throws {
        let s = try sandbox("file", path: "/form", grant: "client_credentials")
        XCTAssertEqual(
            s.tv("set", "q", "--provider", "q", stdin: #"{"access_token":"cc-old","expires_at":1}"#).status, 0)
        let status = s.tv("status", "q")
        XCTAssertEqual(status.status, 0, status.stdout + status.stderr)
        XCTAssertTrue(status.stdout.contains("refreshable"), status.stdout)
        XCTAssertTrue(
            status.stdout.contains("can refresh:  yes") || status.stdout.contains("can refresh: yes"), status.stdout)
        XCTAssertTrue(s.tv("list").stdout.contains("refreshable"))
        let get = s.tv("get", "q")
        XCTAssertEqual(get.status, 0, get.stderr)
        XCTAssertTrue(get.out.hasPrefix("gho_form"), get.out)
        XCTAssertTrue(s.tv("list").stdout.contains("valid"))
    }

    /// A preset with only token_url overridden keeps its service everywhere.
    func testOverridingTokenURLAloneKeepsThePresetsService() throws {
        let s = Sandbox()
        try s.writeConfig(
            """
            [providers.weibo]
            token_url = "http://127.0.0.1:\(Self.port)/textplain"
            client_id = "wid"
            """)
        XCTAssertEqual(
            s.tv("set", "api.weibo.com", "--provider", "weibo", stdin: #"{"access_token":"2.00w","expires_in":3600}"#)
                .status, 0)
        let get = s.tv("get", "weibo")
        XCTAssertEqual(get.status, 0, get.stderr)
        XCTAssertEqual(get.out, "2.00w")
        let providers = s.tv("providers", "--json").stdout
        XCTAssertTrue(providers.contains("api.weibo.com"), providers)
        XCTAssertFalse(providers.contains("127.0.0.1:\(Self.port)"), providers)
        XCTAssertEqual(s.tv("status", "weibo").status, 0)
    }

    /// Readers never fail while writers write (docs/reference.md), on every backend.
    func checkSoak(_ backend: String, writes: Int) throws {
        let s = Sandbox(backend: backend)
        s.env.merge(Self.keyring.env) { $1 }
        s.env["TOKENVAULT_KEY_TTL"] = "600"
        let r = runProcess(
            Paths.fixtures.appendingPathComponent("soak.sh").path, [Paths.binary, "2", String(writes / 2), "3"],
            env: s.env, limit: 240)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(
            lines.count, 1, "failed or wrong reads on \(backend):\n" + lines.prefix(10).joined(separator: "\n"))
        XCTAssertTrue(lines.last?.hasPrefix("writes \(writes) reads ") ?? false, r.stdout + r.stderr)
        let reads = Int(lines.last?.split(separator: " ").last ?? "") ?? 0
        XCTAssertGreaterThan(reads, 20, "the readers ran during the writes")
        _ = s.tv("lock")
    }

    // Two writers and three readers that spawn tokenvault as fast as the
    // machine lets them: every read lands during writes. The counts keep the
    // class's two cores busy for seconds, not for most of a minute, beside
    // the other classes of the run.
    func testReadersNeverFailDuringWritesFile() throws { try checkSoak("file", writes: 100) }
    func testReadersNeverFailDuringWritesSecretService() throws { try checkSoak("secret-service", writes: 60) }
    func testReadersNeverFailDuringWritesAuto() throws { try checkSoak("auto", writes: 60) }
}
