import TokenVaultKit
import XCTest

/// `no_proxy` as curl users write it (docs/config.md, "Behind a proxy"):
/// names and the domains above them, a leading and a trailing dot, any case,
/// IPv4 and IPv6 addresses and CIDR ranges, `*` alone, commas or spaces.
final class NoProxyTests: XCTestCase {
    func bypasses(_ list: String, _ host: String) -> Bool {
        ProxySettings(noProxy: list).bypasses(host)
    }

    func testNames() {
        for (list, host, expected) in [
            ("example.com", "example.com", true), ("example.com", "api.example.com", true),
            ("example.com", "notexample.com", false), (".example.com", "api.example.com", true),
            (".example.com", "example.com", true), ("example.com.", "api.example.com", true),
            ("example.com", "api.example.com.", true), ("EXAMPLE.com", "Api.Example.COM", true),
            ("example.com:8443", "api.example.com", true), ("other.org, example.com", "example.com", true),
            ("other.org example.com", "example.com", true), ("other.org", "example.com", false),
            ("", "example.com", false), ("com", "example.com", true), ("ample.com", "example.com", false),
        ] {
            XCTAssertEqual(bypasses(list, host), expected, "\(list) / \(host)")
        }
    }

    func testAddressesAndRanges() {
        for (list, host, expected) in [
            ("127.0.0.1", "127.0.0.1", true), ("127.0.0.0/8", "127.0.0.1", true), ("127.0.0.0/8", "128.0.0.1", false),
            ("10.0.0.0/8", "127.0.0.1", false), ("192.168.1.0/24", "192.168.1.77", true),
            ("192.168.1.0/24", "192.168.2.1", false), ("0.0.0.0/0", "8.8.8.8", true), ("127.0.0.1.", "127.0.0.1", true),
            ("127.0.0.1:8080", "127.0.0.1", true), ("127.0.0.1/33", "127.0.0.1", false),
            ("::1", "[::1]", true), ("[::1]", "::1", true), ("0:0::1", "::1", true), ("::1/128", "::1", true),
            ("fd00::/8", "fd12:3456::1", true), ("fd00::/8", "fe80::1", false), ("127.0.0.0/8", "::1", false),
            ("localhost", "127.0.0.1", false), ("1", "127.0.0.1", false),
        ] {
            XCTAssertEqual(bypasses(list, host), expected, "\(list) / \(host)")
        }
    }

    func testTheStarAloneBypassesEverything() {
        XCTAssertTrue(bypasses("*", "example.com"))
        XCTAssertTrue(bypasses(" * ", "127.0.0.1"))
        XCTAssertFalse(bypasses("example.org,*", "example.com"), "curl: only a list that is * alone")
    }
}
