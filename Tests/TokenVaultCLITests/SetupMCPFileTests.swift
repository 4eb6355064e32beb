import Foundation
import XCTest

/// `setup mcp --write` on the client configs people have: a link into their
/// dotfiles, a folder the client has not made yet, and files it cannot
/// rewrite exactly (an array of servers, a key twice, an integer beyond 64
/// bits), which are refused with the entry to add by hand, left as they were.
final class SetupMCPFileTests: XCTestCase {
    let url = "https://mcp.example.com/mcp"

    func testALinkedConfigIsWrittenThroughTheLink() throws {
        let s = Sandbox()
        let dotfiles = s.home + "/dotfiles"
        try FileManager.default.createDirectory(atPath: dotfiles, withIntermediateDirectories: true)
        try #"{"theme":"dark"}"#.write(toFile: dotfiles + "/client.json", atomically: true, encoding: .utf8)
        let config = s.home + "/client.json"
        try FileManager.default.createSymbolicLink(atPath: config, withDestinationPath: "dotfiles/client.json")
        s.expect("setup", "mcp", url, "--write", config, "--name", "work")
        XCTAssertEqual(
            try FileManager.default.destinationOfSymbolicLink(atPath: config), "dotfiles/client.json", "still a link")
        let written = try String(contentsOfFile: dotfiles + "/client.json", encoding: .utf8)
        XCTAssertTrue(written.contains("\"work\"") && written.contains("\"theme\""), written)
    }

    func testAFolderTheClientHasNotMadeYetIsMade() throws {
        let s = Sandbox()
        let config = s.home + "/.config/Claude/claude_desktop_config.json"
        s.expect("setup", "mcp", url, "--write", config)
        XCTAssertTrue(try String(contentsOfFile: config, encoding: .utf8).contains("mcpServers"))
        let mode = try FileManager.default.attributesOfItem(atPath: s.home + "/.config/Claude")[.posixPermissions]
        XCTAssertEqual(mode as? Int, 0o700)
    }

    func testWhatCannotBeKeptExactlyIsRefusedAndLeftAsItWas() throws {
        let s = Sandbox()
        let cases: [(String, String)] = [
            (#"{"mcpServers":[{"name":"mine","command":"x"}]}"#, "mcpServers is an array"),
            ("{\"mcpServers\":{\"a\":{\"command\":\"x\"}},\n\"mcpServers\":{}}", ":2:1: the key"),
            (#"{"mcpServers":{},"quota":18446744073709551616}"#, "beyond 64 bits"),
        ]
        for (text, why) in cases {
            let config = s.home + "/c-\(UUID().uuidString.prefix(6)).json"
            try text.write(toFile: config, atomically: true, encoding: .utf8)
            s.expect("setup", "mcp", url, "--write", config, status: 78, stderr: [why, "hint: add"])
            XCTAssertEqual(try String(contentsOfFile: config, encoding: .utf8), text, "left as it was")
        }
    }
}
