import Foundation
import Glibc
import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// The bridge's two eras driven in-process over a scripted transport
/// (docs/adapters.md, "MCP servers"): what each era sends, and the era of a
/// message decided in one place.
final class MCPBridgeEraTests: XCTestCase {
    final class Host: MCPBridgeHost, @unchecked Sendable {
        func token() throws -> String { "tok" }
        func renewed(after rejected: String) throws -> String { "tok" }
        func stepUp(_ scopes: [String]) throws -> Bool { false }
        func say(_ line: String) {}
    }

    static let initialize =
        #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#
    static let initialized = #"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
    static let call = #"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#
    static let modernCall =
        #"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
    static let discover =
        #"{"jsonrpc":"2.0","id":4,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#

    /// Runs a bridge over `lines` (stdin, then its end) against `server`; what it wrote for the client.
    func run(_ lines: [String], server: ScriptedStreams) throws -> [String] {
        let written = Locked<[String]>([])
        let bridge = try MCPBridge(
            url: "http://127.0.0.1:9/mcp", transport: server, host: Host(), idleSeconds: 5,
            writeLine: { line in written.withLock { $0.append(line) } })
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&ends), 0)
        let text = lines.map { $0 + "\n" }.joined()
        XCTAssertEqual(write(ends[1], text, text.utf8.count), text.utf8.count)
        close(ends[1])
        bridge.run(input: ends[0])
        close(ends[0])
        return written.withLock { $0 }
    }

    func header(_ r: HTTPRequest, _ name: String) -> String? {
        r.headers.first { $0.lowercased().hasPrefix(name.lowercased() + ":") }.map {
            String($0.drop(while: { $0 != ":" }).dropFirst()).trimmingCharacters(in: .whitespaces)
        }
    }

    func posts(_ server: ScriptedStreams, _ method: String) -> [HTTPRequest] {
        server.requests.filter { $0.method == "POST" && String(decoding: $0.body, as: UTF8.self).contains(method) }
    }

    /// A server of the handshake era: a session from initialize's answer on
    /// every request after it, the notification forwarded, the session ended.
    func testTheHandshakeEraCarriesItsSession() throws {
        let server = ScriptedStreams { r in
            if r.method != "POST" { return HTTPResponse(status: r.method == "GET" ? 405 : 200, body: Data()) }
            if String(decoding: r.body, as: UTF8.self).contains("\"initialize\"") {
                return ScriptedStreams.result(
                    #"{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}"#,
                    to: r, headers: [("mcp-session-id", "s-1")])
            }
            if !String(decoding: r.body, as: UTF8.self).contains("\"id\"") {
                return HTTPResponse(status: 202, body: Data())
            }
            return ScriptedStreams.result(#"{"content":[]}"#, to: r)
        }
        let out = try run([Self.initialize, Self.initialized, Self.call], server: server)
        XCTAssertTrue(out.contains { $0.contains(#""id":2"#) && $0.contains("result") }, "\(out)")
        let call = try XCTUnwrap(posts(server, "tools/call").first)
        XCTAssertEqual(header(call, "Mcp-Session-Id"), "s-1")
        XCTAssertEqual(header(call, "MCP-Protocol-Version"), "2025-11-25")
        XCTAssertNil(header(call, "Mcp-Method"), "no routing headers in this era")
        XCTAssertEqual(posts(server, "notifications/initialized").count, 1)
        XCTAssertEqual(server.requests.filter { $0.method == "DELETE" }.count, 1, "the session ends with a DELETE")
    }

    /// A request of the per-request era: its routing headers, no session; a
    /// notification after it (naming no version) is that era's: not sent.
    func testThePerRequestEraRoutesEachRequest() throws {
        let server = ScriptedStreams { r in ScriptedStreams.result(#"{"content":[]}"#, to: r) }
        let listing =
            #"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
        let out = try run([listing, Self.modernCall, Self.initialized], server: server)
        XCTAssertTrue(out.contains { $0.contains(#""id":3"#) }, "\(out)")
        let call = try XCTUnwrap(posts(server, "tools/call").first)
        XCTAssertEqual(header(call, "MCP-Protocol-Version"), "2026-07-28")
        XCTAssertEqual(header(call, "Mcp-Method"), "tools/call")
        XCTAssertEqual(header(call, "Mcp-Name"), "echo")
        XCTAssertNil(header(call, "Mcp-Session-Id"))
        XCTAssertTrue(posts(server, "notifications/initialized").isEmpty, "no client notification in this era")
        XCTAssertTrue(server.requests.allSatisfy { $0.method == "POST" }, "no GET stream, no DELETE")
    }

    /// A client that probes with server/discover, is refused by a server of
    /// the handshake era that keeps no session, and falls back to initialize:
    /// it is back in the handshake era, so its notifications are sent.
    func testAProbeThenAFallbackIsTheHandshakeEraAgain() throws {
        let server = ScriptedStreams { r in
            let body = String(decoding: r.body, as: UTF8.self)
            if body.contains("server/discover") {
                return HTTPResponse(
                    status: 400, contentType: "application/json",
                    body: Data(#"{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found"}}"#.utf8))
            }
            if !body.contains("\"id\"") { return HTTPResponse(status: 202, body: Data()) }
            return ScriptedStreams.result(#"{"protocolVersion":"2025-11-25","capabilities":{}}"#, to: r)
        }
        let out = try run([Self.discover, Self.initialize, Self.initialized, Self.call], server: server)
        XCTAssertTrue(
            out.contains { $0.contains(#""id":4"#) && $0.contains("-32601") }, "the refusal is passed on: \(out)")
        XCTAssertEqual(posts(server, "notifications/initialized").count, 1, "\(server.requests.map(\.method))")
        XCTAssertTrue(out.contains { $0.contains(#""id":2"#) && $0.contains("result") }, "\(out)")
    }

    /// The rule itself, message by message.
    func testTheEraOfEachMessage() throws {
        let bridge = try MCPBridge(
            url: "http://127.0.0.1:9/mcp",
            transport: ScriptedStreams { _ in
                HTTPResponse(status: 500, body: Data())
            }, host: Host(), writeLine: { _ in })
        func message(_ s: String) throws -> JSONValue { try JSONRPC.message(Array(s.utf8)[...]) }
        let note = try message(Self.initialized)
        XCTAssertEqual(bridge.era(of: note, isRequest: false), .handshake, "no request yet: the handshake era")
        XCTAssertEqual(
            bridge.era(of: try message(Self.modernCall), isRequest: true), .perRequest(version: "2026-07-28"))
        XCTAssertEqual(bridge.era(of: note, isRequest: false), .perRequest(version: "2026-07-28"))
        XCTAssertEqual(bridge.era(of: try message(Self.initialize), isRequest: true), .handshake)
        XCTAssertEqual(bridge.era(of: note, isRequest: false), .handshake)
    }
}
