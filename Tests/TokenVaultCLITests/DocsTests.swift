import Foundation
import TokenVaultKit
import XCTest

/// The README and docs/ link to each other: every relative link names a file
/// that exists, and every #anchor a heading of that file.
final class DocsTests: XCTestCase {
    /// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as '-'.
    func anchor(_ heading: String) -> String {
        String(
            heading.lowercased().compactMap { c -> Character? in
                if c == " " { return "-" }
                return c.isLetter || c.isNumber || c == "-" || c == "_" ? c : nil
            })
    }

    func testEveryRelativeLinkResolves() throws {
        let root = Paths.root
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        var checked = 0
        for file in ["README.md"] + docs {
            let url = root.appendingPathComponent(file)
            let text = try String(contentsOf: url, encoding: .utf8)
            let link = try NSRegularExpression(pattern: #"\]\(([^)\s]+)\)"#)
            for m in link.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let target = String(text[Range(m.range(at: 1), in: text)!])
                if target.hasPrefix("http://") || target.hasPrefix("https://") || target.hasPrefix("mailto:") {
                    continue
                }
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(
                    String.init)
                let path = parts[0].isEmpty ? url : url.deletingLastPathComponent().appendingPathComponent(parts[0])
                XCTAssertTrue(FileManager.default.fileExists(atPath: path.path), "\(file): \(target) names no file")
                if parts.count == 2, let linked = try? String(contentsOf: path, encoding: .utf8) {
                    let headings = linked.split(separator: "\n").filter { $0.hasPrefix("#") }
                        .map { anchor($0.drop(while: { $0 == "#" }).trimmingCharacters(in: .whitespaces)) }
                    XCTAssertTrue(headings.contains(parts[1]), "\(file): \(target): no heading \(parts[1])")
                }
                checked += 1
            }
        }
        XCTAssertGreaterThan(checked, 10)
    }

    func testTheReadmeIsForUsersAndShort() throws {
        let readme = try String(contentsOf: Paths.root.appendingPathComponent("README.md"), encoding: .utf8)
        XCTAssertLessThan(readme.split(separator: "\n", omittingEmptySubsequences: false).count, 300)
        for first in ["make demo", "make test", "make install", "tokenvault set", "tokenvault get", "tokenvault login"]
        {
            XCTAssertTrue(readme.contains(first), first)
        }
    }

    /// docs/reference.md's agent row names the commands the agent runs, as the code lists them.
    func testTheAgentsCommandsAreTheOnesTheDocsName() throws {
        let commands = AgentClient.commands
        XCTAssertEqual(commands, ["get", "header", "status", "list"])
        let named = commands.dropLast().map { "`\($0)`" }.joined(separator: ", ") + " and `\(commands.last!)`"
        let reference = try String(contentsOf: Paths.root.appendingPathComponent("docs/reference.md"), encoding: .utf8)
        XCTAssertTrue(reference.contains("runs \(named) for their clients"), named)
        let agent = try String(contentsOf: Paths.root.appendingPathComponent("docs/agent.md"), encoding: .utf8)
        XCTAssertTrue(agent.contains("it runs \(named)"), named)
    }

    /// Every TOML example of the docs and the README reads as written: no
    /// mistake, no table refused (two tables of one service, a key misspelt).
    func testEveryTOMLExampleOfTheDocsReads() throws {
        let root = Paths.root
        let docs =
            try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.map { "docs/" + $0 } + ["README.md"]
        var examples = 0
        for file in docs {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            for m in text.matches(of: /```toml\n((?:.|\n)*?)```/) {
                examples += 1
                let toml = String(m.1)
                do {
                    let c = try Config.parse(toml, path: file)
                    XCTAssertEqual(c.warnings, [], "\(file):\n\(toml)")
                    XCTAssertEqual(Array(c.brokenProviders.keys), [], "\(file):\n\(toml)")
                } catch {
                    XCTFail("\(file): \(error.errorText)\n\(toml)")
                }
            }
        }
        XCTAssertGreaterThan(examples, 5)
    }

    /// Every `docs/FILE.md, "Heading"` a source comment cites names a heading of that file.
    func testEverySectionASourceCommentCitesExists() throws {
        let root = Paths.root
        let sources = try XCTUnwrap(FileManager.default.enumerator(atPath: root.appendingPathComponent("Sources").path))
        var cited = 0
        for case let file as String in sources
        where file.hasSuffix(".swift") || file.hasSuffix(".c") || file.hasSuffix(".h") {
            let text = try String(contentsOf: root.appendingPathComponent("Sources/" + file), encoding: .utf8)
            // A citation may run over two comment lines.
            let joined = text.replacing(/\n\s*(\/\/\/|\/\/|\*)\s*/, with: " ")
            for m in joined.matches(of: /(docs\/[A-Za-z]+\.md), "([^"]+)"/) {
                let doc = try String(contentsOf: root.appendingPathComponent(String(m.1)), encoding: .utf8)
                let headings = doc.split(separator: "\n").filter { $0.hasPrefix("#") }.map {
                    $0.drop(while: { $0 == "#" }).trimmingCharacters(in: .whitespaces)
                }
                XCTAssertTrue(
                    headings.contains(String(m.2)), "\(file) cites \(m.1), \"\(m.2)\", which has no such heading")
                cited += 1
            }
        }
        XCTAssertGreaterThan(cited, 10)
    }
}
