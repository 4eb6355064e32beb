import Foundation
import XCTest

@testable import TokenVaultKit

/// A command and its output on the agent's socket (docs/agent.md): what is
/// sent comes back the same, and anything else is not taken for one.
final class AgentCommandTests: XCTestCase {
    func testARequestSurvivesTheTrip() {
        let request = AgentCommandRequest(
            arguments: ["get", "", "api.example.com", "--field", "a=b"],
            environment: ["HOME": "/home/a b", "TOKENVAULT_ACCOUNT": "", "XDG_RUNTIME_DIR": "/run/user/0=x"],
            hasPassphraseSource: true, terminal: 132)
        XCTAssertEqual(AgentCommandRequest(bytes: request.bytes), request)
        let bare = AgentCommandRequest(arguments: [], environment: [:], hasPassphraseSource: false)
        XCTAssertEqual(AgentCommandRequest(bytes: bare.bytes), bare)
        // The build travels: an agent of another one declines (docs/agent.md).
        var other = bare
        other.build = "0123abcd"
        XCTAssertEqual(AgentCommandRequest(bytes: other.bytes)?.build, "0123abcd")
        XCTAssertFalse(AgentSocket.build.isEmpty)
        XCTAssertNotEqual(AgentSocket.build, "version-\(AgentSocket.version)", "this build has an ELF build ID")
    }

    func testWhatIsNotARequestIsRefused() {
        let good = AgentCommandRequest(
            arguments: ["get", "x"], environment: ["HOME": "/h"], hasPassphraseSource: false
        )
        .bytes
        let hostile: [[UInt8]] = [
            [], Array(good.dropLast()),  // not NUL-terminated
            Array("C2\0\0\0002\0get\0x\0".utf8),  // another version
            Array("C3\0b\0\0\0005\0get\0x\0".utf8),  // more arguments announced than sent
            Array("C3\0b\0\0\0-1\0".utf8), Array("C3\0b\0\0\0two\0".utf8),
            Array("C3\0b\0\0-80\0000\0".utf8), Array("C3\0b\0\0wide\0000\0".utf8),  // a terminal width that is none
            Array("C3\0b\0\0\0001\0get\0NOEQUALS\0".utf8),  // an environment entry without '='
            Array(#"{"v":2,"op":"status"}"#.utf8),
        ]
        for bytes in hostile { XCTAssertNil(AgentCommandRequest(bytes: bytes), String(decoding: bytes, as: UTF8.self)) }
    }

    func testAReplySurvivesTheTrip() {
        for reply in [
            AgentCommandReply.ran(status: 0, stdout: Array("tok\n".utf8), stderr: []),
            .ran(status: 77, stdout: [], stderr: Array("tokenvault: error: locked\n".utf8)),
            .ran(status: 255, stdout: [0, 1, 2], stderr: [3]), .declined(.other("another scope")),
            .declined(.anotherBuild), .declined(.sessionGone), .declined(.clientsToRun), .declined(.anotherVersion),
        ] {
            XCTAssertEqual(AgentCommandReply(bytes: reply.bytes), reply)
        }
        // Another setup's decline reaches the client as its words (what --verbose shows).
        for names in [["bus"], ["TOKENVAULT_CONFIG", "bus", "HOME"]] {
            let words = AgentDecline.anotherSetup(names).words
            XCTAssertEqual(
                AgentCommandReply(bytes: AgentCommandReply.declined(.anotherSetup(names)).bytes),
                .declined(.other(words)))
            XCTAssertFalse(AgentDecline(words: words).isOtherBuild)
        }
        XCTAssertEqual(AgentDecline.anotherSetup(["bus", "HOME"]).words, "another setup: bus and HOME differ")
        XCTAssertNil(AgentCommandReply(bytes: []))
        XCTAssertNil(AgentCommandReply(bytes: Array(#"{"v":1,"refused":"x"}"#.utf8)), "an agent of version 1")
        XCTAssertNil(AgentCommandReply(bytes: [UInt8(ascii: "R"), 0, 0, 0, 0, 9, 1]), "stdout cut short")
    }

    func testEachFrameIsToldApartOnce() {
        let command = AgentCommandRequest(arguments: ["get", "x"], environment: [:], hasPassphraseSource: false)
        guard case .command(let parsed?) = AgentRequestFrame(body: command.bytes) else { return XCTFail("a command") }
        XCTAssertEqual(parsed.arguments, ["get", "x"])
        guard case .command(nil) = AgentRequestFrame(body: Array("C2\0b\0\0\0000\0".utf8)) else {
            return XCTFail("another version's command")
        }
        guard case .query(let q?) = AgentRequestFrame(body: Array(#"{"v":3,"op":"status"}"#.utf8)) else {
            return XCTFail("a JSON request")
        }
        XCTAssertEqual(q["op"]?.string, "status")
        guard case .query(nil) = AgentRequestFrame(body: Array("{not json".utf8)) else { return XCTFail("not JSON") }
    }

    func testNoPassphraseSourceIsEverSent() {
        let sent = Set(EnvironmentVariable.sentToAgent)
        for v in EnvironmentVariable.passphraseSources + [.accessToken, .tokenSecret] {
            XCTAssertFalse(sent.contains(v))
        }
        XCTAssertTrue(sent.isSuperset(of: [.account, .backend, .home, .xdgRuntimeDir, .kubernetesExecInfo, .noColor]))
    }
}
