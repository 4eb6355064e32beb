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
            "x.com/", "x.com//a", "x.com/a/../b", "x.com/./a", "x.com/a b", "x.com/%zz", "x.com/é", "/a", "ftp://x.com",
            "https://user:pw@x.com/", "x.com:", "x.com:0", "x.com:65536", "x.com:８０",
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

    func testAResourceKeyKeepsThePath() throws {
        XCTAssertEqual(try ServiceKey(resource: "https://MCP.example.com/a/mcp/").description, "mcp.example.com/a/mcp")
        XCTAssertEqual(try ServiceKey(resource: "http://127.0.0.1:9000/mcp?x=1#y").description, "127.0.0.1:9000/mcp")
        XCTAssertEqual(try ServiceKey(resource: "https://x.com/A%2fb").description, "x.com/A%2Fb")
        // The root is the host itself.
        XCTAssertEqual(try ServiceKey(resource: "https://x.com/").description, "x.com")
        XCTAssertNil(try ServiceKey(resource: "https://x.com").path)
        // As `list` prints it, it parses back to itself; a plain URL still names the host.
        for form in ["mcp.example.com/a/mcp", "127.0.0.1:9000/mcp", "[::1]:8/a/b", "x.com/a/mcp/"] {
            let k = try ServiceKey(parsing: form)
            XCTAssertEqual(try ServiceKey(parsing: k.description), k, form)
        }
        XCTAssertEqual(try ServiceKey(parsing: "x.com/a/mcp/").description, "x.com/a/mcp")
        XCTAssertEqual(try key("https://x.com/a/mcp"), "x.com")
        XCTAssertNotEqual(try ServiceKey(parsing: "x.com/a"), try ServiceKey(parsing: "x.com/A"))
        XCTAssertThrowsError(try ServiceKey(resource: "https://x.com/a/../b"))
        XCTAssertThrowsError(try ServiceKey(resource: "https://x.com/" + String(repeating: "a", count: 600)))
    }

    func testAURLNamesTheStoredResourceThatHoldsIt() throws {
        let stored = try ["x.com/a", "x.com/a/mcp", "x.com/b", "y.com/a/mcp", "x.com:8/a/mcp"].map {
            try ServiceKey(parsing: $0)
        }
        func closest(_ url: String) throws -> String {
            try ServiceKey(resource: url).closest(among: stored).description
        }
        XCTAssertEqual(try closest("https://x.com/a/mcp"), "x.com/a/mcp")
        XCTAssertEqual(try closest("https://x.com/a/mcp/tools/x"), "x.com/a/mcp")
        XCTAssertEqual(try closest("https://x.com/a/other"), "x.com/a")
        XCTAssertEqual(try closest("https://x.com/ab"), "x.com", "a segment is whole or not at all")
        XCTAssertEqual(try closest("https://x.com/"), "x.com")
        XCTAssertEqual(try closest("https://x.com:8/a/mcp"), "x.com:8/a/mcp")
    }
}
