import Foundation
import XCTest

@testable import TokenVaultKit

/// What servers send, read safely (docs/security.md): scopes as scope tokens,
/// empty header values that still travel, an etcd token fit for a header,
/// and tool maps of the current listing only.
final class ServerInputTests: XCTestCase {
    func testScopesSupportedAreScopeTokensEachOnce() {
        let listed: [JSONValue] = [
            .string("admin openid"), .string("read"), .string("read"), .string("bad\"quote"), .string(""),
            .string("  spaced  "), .integer(7), .string("a\\b"), .string("offline_access"),
        ]
        XCTAssertEqual(
            ProtectedResourceMetadata.scopeTokens(listed), ["admin", "openid", "read", "spaced", "offline_access"])
    }

    func testAnEmptyHeaderValueIsSentAsLibcurlSendsOne() {
        XCTAssertEqual(HTTPRequest.curlLine("Mcp-Param-Region: "), "Mcp-Param-Region;")
        XCTAssertEqual(HTTPRequest.curlLine("Mcp-Name:"), "Mcp-Name;")
        XCTAssertEqual(HTTPRequest.curlLine("Mcp-Name: x"), "Mcp-Name: x")
        XCTAssertEqual(HTTPRequest.curlLine("Authorization: Bearer t"), "Authorization: Bearer t")
    }

    func testAnEtcdTokenMustFitInAHeader() {
        XCTAssertTrue(EtcdClient.isUsableToken("abcDEF.123-_~"))
        for bad in ["", "tok\r\nX-Injected: yes", "two words", "tök", String(repeating: "a", count: 4097)] {
            XCTAssertFalse(EtcdClient.isUsableToken(bad), bad.debugDescription)
        }
    }

    final class NoHost: BridgeTokenSource, @unchecked Sendable {
        func token() throws -> PresentedToken { PresentedToken("t") }
        func renewed(after rejected: PresentedToken) throws -> PresentedToken { PresentedToken("t") }
        func stepUp(_ scopes: [String]) throws -> Bool { false }
        func say(_ line: String) {}
    }

    /// A server that renames its tools at every listing grows nothing: a
    /// listing's first page replaces the maps kept, its next pages add.
    func testToolMapsAreThoseOfTheCurrentListing() throws {
        let bridge = try MCPBridge(url: "http://127.0.0.1:9/mcp", transport: CurlTransport(), tokens: NoHost())
        func listing(_ names: [String]) -> JSONValue {
            .object([
                "tools": .array(
                    names.map {
                        .object([
                            "name": .string($0),
                            "inputSchema": .object([
                                "type": .string("object"),
                                "properties": .object([
                                    "r": .object(["type": .string("string"), "x-mcp-header": .string("R")])
                                ]),
                            ]),
                        ])
                    })
            ])
        }
        for round in 0..<20 {
            bridge.absorbTools(listing((0..<50).map { "tool-\(round)-\($0)" }), firstPage: true)
            bridge.absorbTools(listing((0..<50).map { "more-\(round)-\($0)" }), firstPage: false)
        }
        let kept = bridge.perRequest.toolMaps.withLock { $0 }
        XCTAssertEqual(kept.count, 100, "the last listing's two pages only")
        XCTAssertNotNil(kept["tool-19-0"])
        XCTAssertNil(kept["tool-0-0"])
    }
}
