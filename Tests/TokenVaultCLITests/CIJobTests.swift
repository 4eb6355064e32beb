import Foundation
import XCTest

/// A CI job (docs/headless.md, "CI jobs"): `CI=true` starts no agent and
/// shows no prompt; a token from a grant that needs no person is fetched,
/// printed and forgotten with `get --no-store` or `backend = "none"`.
/// Against the local authlib provider's client-credentials client.
final class CIJobTests: XCTestCase {
    nonisolated(unsafe) static var provider: LocalProvider!

    override class func setUp() { provider = try! LocalProvider() }
    override class func tearDown() { provider.stop() }

    /// A job's environment: CI=true, no passphrase, the agent allowed to
    /// start on use as it is by default, and run as separate processes.
    func job(backend: String? = nil) throws -> Sandbox {
        let s = Sandbox(inProcess: false)
        s.env["TOKENVAULT_BACKEND"] = nil
        s.env["TOKENVAULT_PASSPHRASE"] = nil
        s.env["TOKENVAULT_AGENT"] = nil
        s.env["CI"] = "true"
        try s.writeConfig(
            (backend.map { "backend = \"\($0)\"\n" } ?? "") + """
                [providers.bot]
                service = "api.ci.example"
                token_url = "\(Self.provider.base)/token"
                grant = "client_credentials"
                scopes = ["read"]
                client_id = "tv-bot"
                client_secret_command = "printf bot-secret"
                """)
        return s
    }

    /// Nothing in the runtime directory but what a command leaves while it
    /// runs: no agent socket, and no vault anywhere.
    func assertNothingLeft(_ s: Sandbox, file: StaticString = #filePath, line: UInt = #line) {
        let runtime = s.env["XDG_RUNTIME_DIR"]! + "/tokenvault"
        let left = (try? FileManager.default.contentsOfDirectory(atPath: runtime)) ?? []
        XCTAssertFalse(left.contains { $0.hasPrefix("agent") }, "\(left)", file: file, line: line)
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.vault), file: file, line: line)
    }

    func testGetNoStoreFetchesPrintsAndForgets() throws {
        let s = try job()
        let first = s.expect("get", "api.ci.example", "--no-store")
        XCTAssertFalse(first.out.isEmpty)
        XCTAssertEqual(first.stderr, "")
        let second = s.expect("get", "api.ci.example", "--no-store")
        XCTAssertNotEqual(first.out, second.out, "fetched again: nothing was kept")
        assertNothingLeft(s)
        // Nothing stored: a plain `get` finds nothing, and asks no one for a passphrase.
        let plain = s.tv("get", "api.ci.example", "--no-refresh")
        XCTAssertNotEqual(plain.status, 0)
        assertNothingLeft(s)
    }

    func testBackendNoneKeepsNothingAndStartsNoAgent() throws {
        let s = try job(backend: "none")
        s.env["CI"] = nil  // backend none alone: no agent either
        let token = s.expect("get", "api.ci.example")
        XCTAssertFalse(token.out.isEmpty)
        s.expect("backend", stdout: ["none: nothing is kept past a command"])
        XCTAssertEqual(s.expect("list", "--json").out.filter { !$0.isWhitespace }, "[]")
        XCTAssertNotEqual(s.expect("get", "api.ci.example").out, token.out)
        assertNothingLeft(s)
    }

    /// With CI=true a command that would start the agent on first use does
    /// not, and a missing passphrase is an error, never a prompt.
    func testCITrueStartsNoAgentAndNeverPrompts() throws {
        let s = try job(backend: "file")
        let r = s.tv("get", "api.ci.example")
        XCTAssertEqual(r.status, 77, r.stderr)
        XCTAssertFalse(r.stderr.contains("passphrase:"), r.stderr)
        assertNothingLeft(s)
    }
}
