import XCTest

@testable import TokenVaultKit

/// The routing headers of MCP 2026-07-28 (`MCPRouting`), computed from a
/// request's body as the MCP SDKs' HTTP clients compute them.
final class MCPRoutingTests: XCTestCase {
    func json(_ s: String) -> JSONValue { try! JSONDecoder().decode(JSONValue.self, from: Data(s.utf8)) }

    func testOnlyAVersionOfThePerRequestEraCountsAsModern() {
        XCTAssertEqual(
            MCPRouting.modernVersion(
                of: json(#"{"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#)
            ),
            "2026-07-28")
        XCTAssertNil(
            MCPRouting.modernVersion(
                of: json(#"{"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}"#)
            ))
        XCTAssertNil(MCPRouting.modernVersion(of: json(#"{"method":"initialize","params":{"protocolVersion":"x"}}"#)))
        XCTAssertNil(
            MCPRouting.modernVersion(
                of: json(#"{"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"a\r\nb"}}}"#)),
            "a version that cannot be a header is none")
    }

    func testAValueOutsideVisibleASCIIIsBase64Wrapped() {
        XCTAssertEqual(MCPRouting.headerValue("eu-west-1"), "eu-west-1")
        XCTAssertEqual(MCPRouting.headerValue("a b"), "a b")
        XCTAssertEqual(MCPRouting.headerValue("Zürich"), "=?base64?WsO8cmljaA==?=")
        XCTAssertEqual(MCPRouting.headerValue(" x"), "=?base64?IHg=?=")
        XCTAssertEqual(MCPRouting.headerValue("a\r\nX-Evil: 1"), "=?base64?YQ0KWC1FdmlsOiAx?=")
        XCTAssertEqual(MCPRouting.headerValue("=?base64?eA==?="), "=?base64?PT9iYXNlNjQ/ZUE9PT89?=")
    }

    func testTheHeaderMapFollowsOnlyValidAnnotations() {
        let schema = json(
            #"{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"#
                + #""opts":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}}}}"#)
        XCTAssertEqual(MCPRouting.headerMap(of: schema), [["region"]: "Region", ["opts", "n"]: "N"])
        for bad in [
            #"{"properties":{"a":{"type":"number","x-mcp-header":"A"}}}"#,
            #"{"properties":{"a":{"type":"string","x-mcp-header":"A B"}}}"#,
            #"{"properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}}"#,
            #"{"type":"string","x-mcp-header":"Root"}"#,
        ] {
            XCTAssertNil(MCPRouting.headerMap(of: json(bad)), bad)
        }
    }

    func testACallCarriesMethodNameAndItsArguments() {
        let call = json(
            #"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"locate","#
                + #""arguments":{"region":"Zürich","opts":{"n":3,"flag":true}}}}"#)
        let map: MCPRouting.HeaderMap = [["region"]: "Region", ["opts", "n"]: "N", ["missing"]: "Gone"]
        let h = MCPRouting.headers(for: call, version: "2026-07-28") { $0 == "locate" ? map : nil }
        XCTAssertEqual(
            h,
            [
                "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: locate",
                "Mcp-Param-N: 3", "Mcp-Param-Region: =?base64?WsO8cmljaA==?=",
            ])
        let read = json(#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///ä"}}"#)
        XCTAssertEqual(
            MCPRouting.headers(for: read, version: "2026-07-28") { _ in nil }?.last,
            "Mcp-Name: =?base64?ZmlsZTovLy/DpA==?=")
        let evil = json(#"{"jsonrpc":"2.0","id":3,"method":"a\r\nX-Evil: 1","params":{}}"#)
        XCTAssertNil(MCPRouting.headers(for: evil, version: "2026-07-28") { _ in nil }, "never sent")
    }
}
