import Foundation
import XCTest

/// `make demo` is scripts/demo.sh on the release binary; here it runs on the
/// test build, so a change that breaks the README's first command fails CI
/// without a second, optimised build.
final class DemoTests: XCTestCase {
    func testDemoRunsToTheEnd() {
        let env = ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory(), "LANG": "C.UTF-8"]
        let r = runProcess(
            "/bin/bash", [Paths.root.appendingPathComponent("scripts/demo.sh").path, Paths.binary], env: env, limit: 120
        )
        // The demo prints (throwaway) tokens: assert on markers, never echo its output.
        XCTAssertEqual(r.status, 0, "scripts/demo.sh failed")
        XCTAssertTrue(r.stdout.contains("demo done: everything lived in"))
        XCTAssertTrue(r.stdout.contains(#""refreshes":1"#), "the demo's refresh on read")
        XCTAssertTrue(r.stdout.contains("exit=77"), "the locked vault without a passphrase source")
        XCTAssertTrue(r.stdout.contains("exit=3"), "the deleted credential")
        XCTAssertTrue(r.stdout.contains("running: process"), "the agent started on first use")
        XCTAssertTrue(
            r.stdout.contains("api.weibo.com (default): not renewed ahead"), "what it keeps, and why not renewed")
    }

    /// `make demo-identity` (docs/providers.md, "Credentials from an
    /// identity"): the walk-through runs as written.
    func testTheIdentityDemoRunsToTheEnd() {
        let env = ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory(), "LANG": "C.UTF-8"]
        let r = runProcess(
            "/bin/bash", [Paths.root.appendingPathComponent("scripts/demo-identity.sh").path, Paths.binary], env: env,
            limit: 120)
        XCTAssertEqual(r.status, 0, "scripts/demo-identity.sh failed")
        XCTAssertTrue(r.stdout.contains("identity demo done: everything lived in"))
        XCTAssertTrue(r.stdout.contains("workload.demo.example  default  workload  oauth2  valid"), "the first token")
        XCTAssertTrue(r.stdout.contains("sts.demo.example       default  sts       oauth2  valid"), "the exchange")
        XCTAssertTrue(r.stdout.contains(#""exchanges":1"#), "one token exchange")
        XCTAssertTrue(r.stdout.contains("exit=4") && r.stdout.contains("exit=0"), "refused, then healed")
    }
}
