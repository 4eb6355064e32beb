import XCTest

@testable import TokenVaultKit

/// What the bridge accepts from its MCP client on stdin, and how it answers a
/// line that is no message.
final class JSONRPCTests: XCTestCase {
    func message(_ text: String) throws(JSONRPC.Refusal) -> JSONValue { try JSONRPC.message(Array(text.utf8)[...]) }

    func refusal(_ text: String) -> JSONRPC.Refusal? {
        do {
            _ = try message(text)
            return nil
        } catch {
            return error
        }
    }

    func testRequestsNotificationsResponsesAndBatchesPass() throws {
        for line in [
            #"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            #"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#,
            #"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            #"{"jsonrpc":"2.0","id":7,"result":{}}"#,
            #"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/cancelled"}]"#,
        ] {
            XCTAssertNoThrow(try message(line), line)
        }
    }

    func testWhatIsNoMessageGetsJSONRPCsOwnErrorWithTheIdWhenItCanBeRead() {
        XCTAssertEqual(refusal("{not json")?.code, -32700)
        // Strict JSON: what Foundation's decoder would take, other peers would not.
        XCTAssertEqual(refusal(#"{"jsonrpc":"2.0","id":1,"method":"x",}"#)?.code, -32700)
        XCTAssertEqual(refusal(#"{"jsonrpc":"2.0","id":1,"method":"x"} x"#)?.code, -32700)
        // What the server sends is held to the same rules.
        XCTAssertNil(JSONRPC.serverMessage(Array(#"{"jsonrpc":"2.0","id":2,"result":{"a":1},}"#.utf8)))
        XCTAssertNil(JSONRPC.serverMessage(Array(#"{"hello":"world"}"#.utf8)))
        XCTAssertNil(JSONRPC.serverMessage(Array("[1,2,3]".utf8)))
        XCTAssertNil(JSONRPC.serverMessage(Array(#""just a string""#.utf8)))
        XCTAssertNotNil(JSONRPC.serverMessage(Array(#"{"jsonrpc":"2.0","id":2,"result":{}}"#.utf8)))
        XCTAssertEqual(
            refusal("{not json")?.response,
            #"{"error":{"code":-32700,"message":"parse error: the line is not JSON"},"id":null,"jsonrpc":"2.0"}"#)
        XCTAssertEqual(
            refusal(#"{"jsonrpc":"1.0","id":3,"method":"x"}"#),
            JSONRPC.Refusal(
                code: -32600, message: #"invalid request: jsonrpc must be "2.0""#, id: .integer(3)))
        XCTAssertEqual(refusal(#"{"jsonrpc":"2.0","id":"q"}"#)?.id, .string("q"), "no method: the id is answered")
        XCTAssertEqual(refusal(#"{"jsonrpc":"2.0","id":{"x":1},"method":"m"}"#)?.id, .null)
        XCTAssertEqual(refusal("[]")?.code, -32600)
        XCTAssertEqual(refusal("[1]")?.code, -32600)
        XCTAssertEqual(refusal(#""just a string""#)?.code, -32600)
        let huge =
            #"{"jsonrpc":"2.0","id":1,"method":"m","params":""# + String(repeating: "x", count: JSONRPC.maxLineBytes)
            + #""}"#
        XCTAssertEqual(refusal(huge)?.code, -32600)
    }
}
