import XCTest

@testable import TokenVaultKit

/// What an agent's request says on the way is kept as the client's stderr
/// would have shown it: the later warnings once each, at the end.
final class NoticeBufferTests: XCTestCase {
    func testItKeepsTheLinesAsStderrWouldShowThemTheLaterOnesLastAndOnce() {
        let buffer = NoticeBuffer()
        let n = buffer.notices
        n.later(["the table q has a mistake"])
        n.warning("a copy in two collections")
        n.notice("renewed")
        n.later(["the table q has a mistake"])
        n.passOn("tokenvault: from the agent\n")
        XCTAssertEqual(
            buffer.text,
            "tokenvault: warning: a copy in two collections\ntokenvault: renewed\ntokenvault: from the agent\n"
                + "tokenvault: warning: the table q has a mistake\n")
    }
}
