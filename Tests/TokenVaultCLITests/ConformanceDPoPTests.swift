import Foundation
import XCTest

/// The conformance suite's DPoP scenarios (SEP-1932: auth/dpop,
/// auth/dpop-nonce): a resource whose 401 is a DPoP challenge and an
/// authorization server that lists ES256 proofs. `login URL` binds the
/// token to a key of the credential's own; the bridge presents it with the
/// DPoP scheme and a fresh proof on every request, at both eras, and
/// answers each server's nonce once.
final class ConformanceDPoPTests: ConformanceTestCase {
    static let baseline = [
        "sep-1932-client-token-request-proof", "sep-1932-client-dpop-auth-scheme", "sep-1932-client-fresh-proof",
    ]

    func testDPoP() throws {
        try assertScenario("dpop", Self.baseline)
    }

    func testDPoPNonce() throws {
        try assertScenario("dpop-nonce", Self.baseline + ["sep-1932-client-as-nonce", "sep-1932-client-rs-nonce"])
    }

    /// What login by URL keeps: the resource's table says dpop, the record
    /// its key's thumbprint and the DPoP token type.
    func testTheResourceTableAndTheRecordSayDPoP() throws {
        let c = try start("dpop")
        let s = sandbox()
        login(s, c)
        let providers = try String(
            contentsOfFile: s.env["XDG_CONFIG_HOME"]! + "/tokenvault/providers.toml", encoding: .utf8)
        XCTAssertTrue(providers.contains("dpop = true"), providers)
        let json = s.expect("get", c.url, "--format", "json", "--no-refresh").stdout
        XCTAssertTrue(json.contains(#""token_type":"DPoP""#) && json.contains("dpop_jkt"), json)
    }
}
