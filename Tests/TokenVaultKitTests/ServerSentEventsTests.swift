import Dispatch
import Foundation
import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// The `text/event-stream` reader, and the streaming transport against a
/// local server whose stream arrives in parts, never ends, or breaks off.
final class ServerSentEventsTests: XCTestCase {
    func parse(_ text: String, in pieces: Int = 1, limit: Int = 1 << 20) throws -> [ServerSentEvent] {
        var parser = ServerSentEventParser(maxEventBytes: limit)
        let bytes = Array(text.utf8)
        let size = max(1, bytes.count / pieces)
        var events: [ServerSentEvent] = []
        for start in stride(from: 0, to: bytes.count, by: size) {
            events += try parser.feed(bytes[start..<min(start + size, bytes.count)])
        }
        return events
    }

    func testEventsAreTheSameHoweverTheBytesArrive() throws {
        let text =
            "\u{FEFF}: comment\r\nid: 7\r\nevent: note\r\ndata: a\r\ndata:  b\r\n\r\ndata: c\rretry: 300\r\rdata\nid: x\0y\n\n"
        let whole = try parse(text)
        XCTAssertEqual(
            whole,
            [
                ServerSentEvent(event: "note", data: "a\n b", id: "7"),
                ServerSentEvent(data: "c", id: "7"),
                ServerSentEvent(data: "", id: "7"),
            ])
        for pieces in [2, 3, 7, text.utf8.count] {
            XCTAssertEqual(try parse(text, in: pieces), whole, "\(pieces) pieces")
        }
        var parser = ServerSentEventParser()
        _ = try parser.feed(Array(text.utf8))
        XCTAssertEqual(parser.retry, 300)
        XCTAssertEqual(parser.lastEventID, "7", "an id with NUL is ignored")
        XCTAssertEqual(try parse("id: 9\n\n"), [], "no data, no event")
        XCTAssertEqual(try parse("data: cut off at the end"), [], "an event without its blank line is none")
    }

    func testAnEventLargerThanTheLimitIsRefused() {
        XCTAssertThrowsError(try parse("data: " + String(repeating: "x", count: 100) + "\n\n", limit: 64)) { error in
            XCTAssertEqual(error as? ServerSentEventParser.TooLarge, ServerSentEventParser.TooLarge(limit: 64))
        }
        XCTAssertEqual(
            try parse(String(repeating: "data: 0123456789\n\n", count: 50), limit: 64).count, 50,
            "the limit is per event")
    }

    // MARK: The transport, streaming

    nonisolated(unsafe) static var server: Process?
    nonisolated(unsafe) static var port = 0

    override class func setUp() {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        (server, port) = FixtureServer.start(root.appendingPathComponent("Fixtures/sse_server.py"))
    }

    override class func tearDown() {
        guard let server, server.isRunning else { return }
        server.terminate()
        server.waitUntilExit()
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(Self.port)\(path)" }

    /// A server that did not start is a failure, never a skip.
    func startedServer() throws {
        guard Self.port > 0 else {
            throw NSError(
                domain: "ServerSentEventsTests", code: 1,
                userInfo: [NSLocalizedDescriptionKey: "sse_server.py did not start"])
        }
    }

    /// Streams `path`, reading events; `onEvent` runs as each one arrives.
    func stream(
        _ path: String, limit: Int = 1 << 20, onEvent: @escaping (ServerSentEvent) -> Void = { _ in }
    )
        -> (events: [ServerSentEvent], result: Result<HTTPResponse, Error>, refused: Bool)
    {
        var parser = ServerSentEventParser(maxEventBytes: limit)
        var events: [ServerSentEvent] = []
        var refused = false
        let result = Result {
            try CurlTransport(timeout: 5).stream(HTTPRequest(method: "GET", url: url(path)), idleSeconds: 15) {
                status, type, bytes in
                XCTAssertEqual(status, 200)
                XCTAssertEqual(type, "text/event-stream")
                do {
                    for event in try parser.feed(bytes) {
                        events.append(event)
                        onEvent(event)
                    }
                    return true
                } catch {
                    refused = true
                    return false
                }
            }
        }
        return (events, result, refused)
    }

    func testEventsAreHandedOverAsTheyArriveWithTheHeaders() throws {
        try startedServer()
        // The server holds event two back until the client has event one: a
        // transport that waited for the whole body would get "late" instead.
        let release = url("/release")
        let (events, result, _) = stream("/events") { event in
            guard event.data == "one" else { return }
            DispatchQueue.global().async {
                _ = try? CurlTransport(timeout: 5).send(HTTPRequest(method: "GET", url: release))
            }
        }
        let response = try result.get()
        XCTAssertEqual(events, [ServerSentEvent(data: "one", id: "1"), ServerSentEvent(data: "two\nlines", id: "1")])
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("MCP-Session-Id"), "s-123")
        XCTAssertTrue(response.body.isEmpty, "a streamed body is not kept")
        let plain = try CurlTransport(timeout: 5).send(HTTPRequest(method: "GET", url: url("/plain")))
        XCTAssertEqual(plain.header("x-test"), "yes")
        XCTAssertEqual(plain.header("content-type"), "application/json")
        XCTAssertNil(plain.header("mcp-session-id"))
    }

    func testAnEndlessEventIsStoppedAndABrokenStreamSaysSo() throws {
        try startedServer()
        let huge = stream("/huge")
        XCTAssertTrue(huge.refused)
        XCTAssertEqual(huge.events, [])
        XCTAssertThrowsError(try huge.result.get()) { error in
            XCTAssertEqual((error as? TokenVaultError)?.exitCode, 65, error.errorText)
        }
        let cut = stream("/cut")
        XCTAssertEqual(
            cut.events, [ServerSentEvent(data: "whole")], "what arrived whole is kept; the half event is not")
        XCTAssertThrowsError(try cut.result.get()) { error in
            XCTAssertEqual((error as? TokenVaultError)?.exitCode, 75, error.errorText)
            XCTAssertTrue(error.errorText.hasPrefix("the exchange with 127.0.0.1:\(Self.port) failed"), error.errorText)
        }
    }
}
