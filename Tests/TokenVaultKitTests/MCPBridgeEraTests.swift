import Foundation
import Glibc
import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// The bridge's two eras driven in-process over a scripted transport
/// (docs/adapters.md, "MCP servers"): what each era sends, and the era of a
/// message decided in one place.
final class MCPBridgeEraTests: XCTestCase {
    final class Host: BridgeTokenSource, @unchecked Sendable {
        let said = Locked<[String]>([])
        var key: DPoPKey?
        func token() throws -> PresentedToken { PresentedToken("tok", key: key) }
        func renewed(after rejected: PresentedToken) throws -> PresentedToken { PresentedToken("tok", key: key) }
        func stepUp(_ scopes: [String]) throws -> Bool { false }
        func say(_ line: String) { said.withLock { $0.append(line) } }
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
    /// It writes `lines` to the bridge's stdin and runs it until that ends.
    /// With `until`, stdin stays open until what the bridge wrote meets it
    /// (or 10 s pass): what arrives on a stream of its own (the server's GET
    /// stream) is then waited for, not raced by the end of input.
    func run(
        _ lines: [String], server: ScriptedStreams, tokens: any BridgeTokenSource = Host(),
        until: (@Sendable ([String]) -> Bool)? = nil
    ) throws -> [String] {
        let written = Locked<[String]>([])
        let arrived = DispatchSemaphore(value: 0)
        let bridge = try MCPBridge(
            url: "http://127.0.0.1:9/mcp", transport: server, tokens: tokens, idleSeconds: 5,
            writeLine: { line in
                let all = written.withLock {
                    $0.append(line)
                    return $0
                }
                if until?(all) == true { arrived.signal() }
            })
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&ends), 0)
        let text = lines.map { $0 + "\n" }.joined()
        XCTAssertEqual(write(ends[1], text, text.utf8.count), text.utf8.count)
        let input = ends[1]
        if until == nil {
            close(input)
        } else {
            DispatchQueue.global().async {
                _ = arrived.wait(timeout: .now() + 10)
                close(input)
            }
        }
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
            }, tokens: Host(), writeLine: { _ in })
        func message(_ s: String) throws -> JSONValue { try JSONRPC.message(Array(s.utf8)[...]) }
        let note = try message(Self.initialized)
        XCTAssertEqual(bridge.era(of: note, isRequest: false), .handshake, "no request yet: the handshake era")
        XCTAssertEqual(
            bridge.era(of: try message(Self.modernCall), isRequest: true), .perRequest(version: "2026-07-28"))
        XCTAssertEqual(bridge.era(of: note, isRequest: false), .perRequest(version: "2026-07-28"))
        XCTAssertEqual(bridge.era(of: try message(Self.initialize), isRequest: true), .handshake)
        XCTAssertEqual(bridge.era(of: note, isRequest: false), .handshake)
        XCTAssertEqual(
            bridge.exchange(for: try message(Self.discover), isRequest: true).era, .perRequest(version: "2026-07-28"))
        XCTAssertEqual(bridge.exchange(for: try message(Self.call), isRequest: true).era, .handshake)
    }

    static func modern(_ id: Int, _ method: String, _ params: String = "") -> String {
        #"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":{\#(params)\#(params.isEmpty ? "" : ",")"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
    }

    /// Handshake era: a 404 for the session means the server forgot it. The
    /// bridge sets up a new one with the client's own initialize (under an
    /// id of its own, its answer passed on to nobody) and its
    /// notification, and sends the request once more; the client sees only
    /// its answer.
    func testTheHandshakeEraSetsUpAForgottenSessionAgain() throws {
        let sessions = Locked(0)
        let server = ScriptedStreams { r in
            let body = String(decoding: r.body, as: UTF8.self)
            if r.method != "POST" { return HTTPResponse(status: 405, body: Data()) }
            if body.contains("\"initialize\"") {
                let n = sessions.withLock { n -> Int in
                    n += 1
                    return n
                }
                return ScriptedStreams.result(
                    #"{"protocolVersion":"2025-11-25","capabilities":{}}"#, to: r,
                    headers: [("mcp-session-id", "s-\(n)")])
            }
            if body.contains("notifications/initialized") { return HTTPResponse(status: 202, body: Data()) }
            // The first session is forgotten by the time of the call (a restart); the second one is known.
            if r.headers.contains("Mcp-Session-Id: s-1") { return HTTPResponse(status: 404, body: Data()) }
            return ScriptedStreams.result(#"{"content":[]}"#, to: r)
        }
        let out = try run([Self.initialize, Self.initialized, Self.call], server: server)
        XCTAssertEqual(out.count, 2, "the client's two answers alone: \(out)")
        XCTAssertTrue(out.contains { $0.contains(#""id":2"#) && $0.contains("result") }, "\(out)")
        let initializes = posts(server, "\"initialize\"")
        XCTAssertEqual(initializes.count, 2)
        XCTAssertTrue(
            String(decoding: initializes[1].body, as: UTF8.self).contains("tokenvault-initialize-1"),
            "the client's initialize, under an id of the bridge's own")
        XCTAssertNil(header(initializes[1], "Mcp-Session-Id"))
        XCTAssertEqual(
            posts(server, "notifications/initialized").compactMap { header($0, "Mcp-Session-Id") }, ["s-1", "s-2"])
        XCTAssertEqual(posts(server, "tools/call").compactMap { header($0, "Mcp-Session-Id") }, ["s-1", "s-2"])
    }

    /// A server that answers 404 even to the new session: that request's
    /// error, naming the server, for each request; never a loop.
    func testTheHandshakeEraGivesUpOnASessionForgottenAgain() throws {
        let server = ScriptedStreams { r in
            let body = String(decoding: r.body, as: UTF8.self)
            if r.method != "POST" { return HTTPResponse(status: 405, body: Data()) }
            if body.contains("\"initialize\"") {
                return ScriptedStreams.result(
                    #"{"protocolVersion":"2025-11-25","capabilities":{}}"#, to: r, headers: [("mcp-session-id", "s-9")])
            }
            return HTTPResponse(status: 404, body: Data())
        }
        let ping = #"{"jsonrpc":"2.0","id":7,"method":"ping"}"#
        let out = try run([Self.initialize, Self.call, ping], server: server)
        for id in [2, 7] {
            XCTAssertTrue(
                out.contains { $0.contains(#""id":\#(id)"#) && $0.contains("no longer knows the MCP session") },
                "\(out)")
        }
        XCTAssertLessThanOrEqual(posts(server, "\"initialize\"").count, 3, "one new session per request at most")
    }

    /// Handshake era: events that come before the answer to initialize are
    /// held and passed on with it, in the server's order; then the server's
    /// own stream (GET, with the session) is opened and its messages passed on.
    func testTheHandshakeEraHoldsInitializeAndListens() throws {
        let listened = DispatchSemaphore(value: 0)
        let server = ScriptedStreams { r in
            if r.method == "GET" {
                listened.signal()
                return HTTPResponse(
                    status: 200, contentType: "text/event-stream",
                    body: Data("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"own/news\"}\n\n".utf8))
            }
            if r.method == "DELETE" { return HTTPResponse(status: 200, body: Data()) }
            if String(decoding: r.body, as: UTF8.self).contains("\"initialize\"") {
                let sse =
                    "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n"
                    + "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-11-25\"}}\n\n"
                var response = HTTPResponse(status: 200, contentType: "text/event-stream", body: Data(sse.utf8))
                response.headers = [("mcp-session-id", "s-2")]
                return response
            }
            _ = listened.wait(timeout: .now() + 5)  // the call is answered once the stream was opened
            return ScriptedStreams.result(#"{"content":[]}"#, to: r)
        }
        let out = try run([Self.initialize, Self.call], server: server) { $0.contains { $0.contains("own/news") } }
        let notice = try XCTUnwrap(out.firstIndex { $0.contains("notifications/message") }, "\(out)")
        let answer = try XCTUnwrap(out.firstIndex { $0.contains(#""id":1"#) }, "\(out)")
        XCTAssertLessThan(notice, answer, "held, then passed on in order")
        XCTAssertTrue(out.contains { $0.contains("own/news") }, "the server's own stream: \(out)")
        let get = try XCTUnwrap(server.requests.first { $0.method == "GET" })
        XCTAssertEqual(header(get, "Mcp-Session-Id"), "s-2")
    }

    /// Per-request era: a refusal whose body is a JSON-RPC error is the
    /// answer, with nothing on stderr; one with no such body is the bridge's
    /// error, said on stderr too; a method no header can carry is never sent.
    func testThePerRequestEraTakesAJSONRPCRefusalAsTheAnswer() throws {
        let server = ScriptedStreams { r in
            let body = String(decoding: r.body, as: UTF8.self)
            if body.contains("resources/read") {
                return HTTPResponse(
                    status: 400, contentType: "application/json",
                    body: Data(#"{"jsonrpc":"2.0","id":11,"error":{"code":-32602,"message":"Header mismatch"}}"#.utf8))
            }
            return HTTPResponse(status: 500, body: Data("down".utf8))
        }
        let host = Host()
        let out = try run(
            [
                Self.modern(11, "resources/read", #""uri":"a://b""#), Self.modern(12, "prompts/list"),
                Self.modern(13, "bad method"),
            ], server: server, tokens: host)
        XCTAssertTrue(
            out.contains { $0.contains(#""id":11"#) && $0.contains("-32602") && $0.contains("Header mismatch") },
            "\(out)")
        XCTAssertTrue(out.contains { $0.contains(#""id":12"#) && $0.contains("HTTP 500: down") }, "\(out)")
        XCTAssertTrue(out.contains { $0.contains(#""id":13"#) && $0.contains("-32600") }, "\(out)")
        XCTAssertTrue(posts(server, "bad method").isEmpty, "never sent")
        let said = host.said.withLock { $0 }
        XCTAssertFalse(said.contains { $0.contains("Header mismatch") }, "\(said)")
        XCTAssertTrue(said.contains { $0.contains("HTTP 500") }, "\(said)")
        let read = try XCTUnwrap(posts(server, "resources/read").first)
        XCTAssertEqual(header(read, "Mcp-Name"), "a://b")
    }

    /// Per-request era: a call of a tool no listing showed lists the tools
    /// first (every page), so the call carries its argument headers.
    func testThePerRequestEraListsToolsBeforeAnUnknownCall() throws {
        let server = ScriptedStreams { r in
            let body = String(decoding: r.body, as: UTF8.self)
            guard body.contains("tools/list") else { return ScriptedStreams.result(#"{"content":[]}"#, to: r) }
            if !body.contains("cursor") {
                return ScriptedStreams.result(
                    #"{"tools":[{"name":"other","inputSchema":{}}],"nextCursor":"p2"}"#, to: r)
            }
            return ScriptedStreams.result(
                #"{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}]}"#,
                to: r)
        }
        let call = Self.modern(21, "tools/call", #""name":"echo","arguments":{"region":"eu-west"}"#)
        let out = try run([call, call.replacingOccurrences(of: #""id":21"#, with: #""id":22"#)], server: server)
        XCTAssertEqual(out.filter { $0.contains(#""content""#) }.count, 2, "\(out)")
        XCTAssertEqual(posts(server, "tools/list").count, 2, "two pages, listed once")
        for sent in posts(server, "tools/call") { XCTAssertEqual(header(sent, "Mcp-Param-Region"), "eu-west") }
    }

    /// Per-request era: a cancellation closes its request's exchange and
    /// goes no further; a subscription's stream is not closed for idling.
    func testThePerRequestEraCancelsAndListens() throws {
        let server = ScriptedStreams(cancellable: { r, cancel in
            if String(decoding: r.body, as: UTF8.self).contains("tools/call") {
                for _ in 0..<500 where cancel?.isCancelled != true { usleep(10_000) }
            }
            return ScriptedStreams.result(#"{"content":[]}"#, to: r)
        })
        let cancelled =
            #"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":31}}"#
        let out = try run(
            [
                Self.modern(31, "tools/call", #""name":"slow","arguments":{}"#), cancelled,
                Self.modern(32, "subscriptions/listen"),
            ], server: server)
        XCTAssertFalse(out.contains { $0.contains(#""id":31"#) }, "no answer after the cancellation: \(out)")
        XCTAssertTrue(posts(server, "notifications/cancelled").isEmpty)
        XCTAssertTrue(out.contains { $0.contains(#""id":32"#) }, "\(out)")
        let listen = try XCTUnwrap(
            server.requests.firstIndex { String(decoding: $0.body, as: UTF8.self).contains("subscriptions/listen") })
        XCTAssertEqual(server.idleSeconds[listen], 86400)
    }

    /// A DPoP-bound token: the DPoP scheme and a fresh proof of each request
    /// (never Bearer); a resource's `use_dpop_nonce` is answered once, with
    /// a proof that carries its nonce.
    func testABoundTokenGoesWithAProofAndTheResourcesNonce() throws {
        let server = ScriptedStreams { r in
            let proof = r.headers.first { $0.hasPrefix("DPoP: ") }.map { String($0.dropFirst(6)) }
            guard proof.flatMap({ JWT.claims(of: $0)?["nonce"]?.string }) == "rs-1" else {
                var refused = HTTPResponse(status: 401, body: Data())
                refused.headers = [("www-authenticate", #"DPoP error="use_dpop_nonce""#), ("dpop-nonce", "rs-1")]
                return refused
            }
            return ScriptedStreams.result(#"{"content":[]}"#, to: r)
        }
        let host = Host()
        host.key = try DPoPKey(pem: SecureBytes(Array(DPoPKeyTests.pem.utf8)))
        // The call of a tool never listed: the bridge's own listing first, refused for
        // the nonce and sent again with it; then the call, with the nonce it now knows.
        let out = try run(
            [Self.modern(41, "tools/call", #""name":"echo","arguments":{}"#)], server: server, tokens: host)
        XCTAssertTrue(out.contains { $0.contains(#""id":41"#) && $0.contains("result") }, "\(out)")
        let sent = server.requests.filter { $0.method == "POST" }
        XCTAssertEqual(sent.count, 3, "the listing, again with the nonce, then the call: \(out)")
        var jtis: Set<String> = []
        for r in sent {
            XCTAssertEqual(header(r, "Authorization"), "DPoP tok")
            let claims = try XCTUnwrap(header(r, "DPoP").flatMap(JWT.claims(of:)))
            XCTAssertEqual(claims["htm"]?.string, "POST")
            XCTAssertEqual(claims["htu"]?.string, "http://127.0.0.1:9/mcp")
            XCTAssertNotNil(claims["ath"])
            jtis.insert(claims["jti"]?.string ?? "")
        }
        XCTAssertEqual(jtis.count, 3, "a fresh proof each time")
    }

    /// The token and its key travel together: whatever happens to the
    /// credential the host holds meanwhile (another thread's renewal failed
    /// and dropped it), a bound token goes with its own key and proof, on
    /// the message, the tool listing, the server's own stream and the end
    /// of the session alike; never as Bearer.
    func testABoundTokenKeepsItsKeyWhateverTheHostHoldsMeanwhile() throws {
        final class Dropping: BridgeTokenSource, @unchecked Sendable {
            /// What the host holds now: each token is handed out bound, and
            /// the next moment the host holds no credential (another thread's
            /// renewal failed). Nothing the bridge sends may depend on it.
            let held = Locked<DPoPKey?>(nil)
            func token() throws -> PresentedToken {
                let key = try DPoPKey(pem: SecureBytes(Array(DPoPKeyTests.pem.utf8)))
                held.withLock { $0 = nil }
                return PresentedToken("tok", key: key)
            }
            func renewed(after rejected: PresentedToken) throws -> PresentedToken { rejected }
            func stepUp(_ scopes: [String]) throws -> Bool { false }
            func say(_ line: String) {}
        }
        let server = ScriptedStreams { r in
            if r.method == "GET" { return HTTPResponse(status: 405, body: Data()) }
            if r.method == "DELETE" { return HTTPResponse(status: 200, body: Data()) }
            if String(decoding: r.body, as: UTF8.self).contains("\"initialize\"") {
                return ScriptedStreams.result(
                    #"{"protocolVersion":"2025-11-25","capabilities":{}}"#, to: r, headers: [("mcp-session-id", "s-3")])
            }
            return ScriptedStreams.result(#"{"content":[]}"#, to: r)
        }
        let out = try run(
            [Self.initialize, Self.call, Self.modern(43, "tools/call", #""name":"echo","arguments":{}"#)],
            server: server, tokens: Dropping())
        XCTAssertTrue(out.contains { $0.contains(#""id":43"#) }, "\(out)")
        XCTAssertGreaterThanOrEqual(server.requests.count, 4, "\(server.requests.map(\.method))")
        for r in server.requests {
            XCTAssertEqual(header(r, "Authorization"), "DPoP tok", "\(r.method): never Bearer")
            XCTAssertNotNil(header(r, "DPoP"), "\(r.method): with its proof")
        }
    }
}
