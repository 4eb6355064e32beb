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

    /// What the bridge only passes on from its client is read with
    /// pass-through rules: any RFC 8259 text whose top level is a JSON-RPC
    /// message (an unpaired surrogate escape, an integer beyond a double,
    /// nesting past 64). Strict rules stay for what tokenvault itself
    /// interprets (a token answer, the parts of a server's message it reads).
    func testValidJSONThatIsOnlyPassedOnIsTaken() throws {
        for line in [
            #"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"text":"\ud83d"}}"#,
            #"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"text":"\udc00\ud83dx"}}"#,
            #"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"n":123456789012345678901234567890}}"#,
            #"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"n":1e400,"m":-1e999}}"#,
            #"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":"# + String(repeating: "[", count: 100)
                + String(repeating: "]", count: 100) + "}",
        ] {
            XCTAssertNoThrow(try message(line), line)
        }
        // A server's message is passed on as it came: read for its envelope alone, any depth; what
        // tokenvault interprets of it (its result, its error) only where that reads strictly.
        for (passed, id) in [
            (#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"cut \ud83d"}]}}"#, 1),
            (#"{"jsonrpc":"2.0","id":2,"result":1e400}"#, 2),
            (
                #"{"jsonrpc":"2.0","result":"# + String(repeating: "[", count: 5000)
                    + String(repeating: "]", count: 5000)
                    + #","id":3}"#, 3
            ),
        ] {
            let m = try XCTUnwrap(JSONRPC.serverMessage(Array(passed.utf8)), passed)
            XCTAssertEqual(m["id"], .integer(Int64(id)))
            XCTAssertEqual(m["result"], .null, "present, not interpreted")
        }
        let batch = try XCTUnwrap(
            JSONRPC.serverMessage(
                Array(#"[{"jsonrpc":"2.0","id":4,"result":"\udc00"},{"jsonrpc":"2.0","method":"n"}]"#.utf8)))
        guard case .array(let items) = batch else { return XCTFail("a batch stays a batch: \(batch)") }
        XCTAssertEqual(items.first?["id"], .integer(4))
        for broken in [
            #"{"jsonrpc":"2.0","id":1,"result":[1,]}"#, #"{"jsonrpc":"2.0","id":1,"result":"\x"}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"a\u{1}b\"}", #"{"jsonrpc":"2.0","id":1,"result":[[}"#,
            #"{"jsonrpc":"1.0","id":1,"result":"\ud83d"}"#, #"{"id":1,"result":"\ud83d"} x"#, "[]",
            #"{"jsonrpc":"2.0","id":1,"result":01}"#, #"{"jsonrpc":"2.0","id":1,"result":tru}"#,
        ] {
            XCTAssertNil(JSONRPC.serverMessage(Array(broken.utf8)), broken)
        }
        XCTAssertEqual(try message(#"{"jsonrpc":"2.0","id":"s","method":"m","params":["\ud83d"]}"#)["id"], .string("s"))
        XCTAssertNil(JSONValue.parsed(Array(#"{"access_token":"\ud83d"}"#.utf8)), "strict where tokenvault reads")
        XCTAssertNil(JSONValue.parsed(Array(#"{"expires_in":1e400}"#.utf8)))
    }

    /// A line that is not JSON after all is answered with its id where the
    /// id can still be read at the top level, so the request gets an answer.
    func testAMalformedLineIsAnsweredWithItsIdWhereItCanBeRead() {
        let deep =
            #"{"jsonrpc":"2.0","id":9,"method":"m","params":"# + String(repeating: "[", count: 600)
            + String(repeating: "]", count: 600) + "}"
        let cases: [(String, JSONValue)] = [
            (#"{"jsonrpc":"2.0","id":1,"method":"x",}"#, .integer(1)),
            (#"{"jsonrpc":"2.0","id":"abc","method":"x","params":{"#, .string("abc")),
            (#"{"params":{"id":8},"jsonrpc":"2.0","id":-3,"method":"x" x}"#, .integer(-3)),
            (#"{"jsonrpc":"2.0", "id" : "sp\"q" ,"method":"x",]"#, .string("sp\"q")),
            (deep, .integer(9)),
            (#"{"params":{"id":8},"method":"x",}"#, .null),
            ("{not json", .null),
        ]
        for (line, id) in cases {
            let r = refusal(line)
            XCTAssertEqual(r?.code, -32700, line)
            XCTAssertEqual(r?.id, id, line)
        }
    }
}
