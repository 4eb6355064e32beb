import XCTest

@testable import TokenVaultKit

final class ServiceKeyTests: XCTestCase {
    func key(_ s: String) throws -> String {
        try ServiceKey(parsing: s) { ["weibo": "api.weibo.com", "local": "127.0.0.1:9000"][$0] }.description
    }

    func testEveryWayOfTypingAHostIsOneKey() throws {
        for form in [
            "api.weibo.com", "API.Weibo.com", "https://api.weibo.com/2/", "https://API.WEIBO.COM:443/x?y#z",
            "api.weibo.com:443", "weibo", "WEIBO", "https://api.weibo.com",
        ] {
            XCTAssertEqual(try key(form), "api.weibo.com", form)
        }
    }

    func testNonDefaultPortsAreKept() throws {
        XCTAssertEqual(try key("127.0.0.1:9000"), "127.0.0.1:9000")
        XCTAssertEqual(try key("http://127.0.0.1:9000/o/token/"), "127.0.0.1:9000")
        XCTAssertEqual(try key("local"), "127.0.0.1:9000")
        XCTAssertEqual(try key("http://localhost/"), "localhost")
        XCTAssertEqual(try key("http://localhost:443/"), "localhost:443")
        XCTAssertEqual(try key("https://x.com:80/"), "x.com:80")
        XCTAssertEqual(try key("[::1]:8080"), "[::1]:8080")
        XCTAssertEqual(try key("http://[::1]/"), "[::1]")
    }

    func testHostileNamesAreUsageErrors() {
        let bad = [
            "", " ", "a b", "api.x.com\n", "a\u{0}b", "../../etc", "..", "a..b", ".x.com", "x.com.", "-x.com",
            "x.com/path", "ftp://x.com", "https://user:pw@x.com/", "x.com:", "x.com:0", "x.com:65536", "x.com:８０",
            String(repeating: "a", count: 254), "https://", "x_y?.com", "[::1", "[zz]:80", "exa\u{301}mple.com",
        ]
        for b in bad {
            XCTAssertThrowsError(try key(b), b.debugDescription) { e in
                XCTAssertEqual((e as? TokenVaultError)?.exitCode, 64, b.debugDescription)
            }
        }
        XCTAssertNoThrow(try key(String(repeating: "a", count: 253)))
    }

    func testErrorMessagesQuoteControlCharacters() {
        XCTAssertThrowsError(try key("a\u{1b}[31mb")) { e in
            let m = (e as! TokenVaultError).localizedDescription
            XCTAssertFalse(m.contains("\u{1b}"))
            XCTAssertTrue(m.contains("\\x1B"), m)
        }
    }
}
