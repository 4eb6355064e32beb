import Foundation
import XCTest

/// man/tokenvault.1: what the generator writes from the parser, complete,
/// clean for man(1) and mandoc(1), and safe to copy from.
final class ManualPageTests: XCTestCase {
    static let page = Paths.root.appendingPathComponent("man/tokenvault.1").path
    static let manEnvironment = ["PATH": "/usr/bin:/bin", "MANPAGER": "cat", "PAGER": "cat", "LANG": "C.UTF-8"]

    /// The page as man(1) shows it; wide, so a paragraph is one line.
    static let rendered: String = {
        var env = manEnvironment
        env["MANWIDTH"] = "1000"
        return runProcess("/usr/bin/man", ["-l", page], env: env).stdout
    }()

    /// The lines of one rendered section, up to the next heading.
    func section(_ title: String) -> [Substring] {
        let lines = Self.rendered.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: Substring(title)) else { return [] }
        let rest = lines[(start + 1)...]
        let end = rest.firstIndex { !$0.isEmpty && $0.first != " " } ?? rest.endIndex
        return Array(rest[..<end])
    }

    func testCommittedPageIsWhatTheGeneratorWrites() throws {
        let r = runProcess(Paths.product("tokenvault-manual"), [], env: [:])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.hasPrefix(".Dd "))
        let committed = try String(contentsOfFile: Self.page, encoding: .utf8)
        XCTAssertEqual(r.stdout, committed, "man/tokenvault.1 is stale: run make docs")
    }

    func testManRendersItWithoutWarnings() {
        for width in ["60", "80", "1000"] {
            var env = Self.manEnvironment
            env["MANWIDTH"] = width
            let r = runProcess("/usr/bin/man", ["--warnings=all", "-l", Self.page], env: env)
            XCTAssertEqual(r.status, 0, "width \(width)")
            XCTAssertEqual(r.stderr, "", "width \(width)")
            XCTAssertTrue(r.stdout.contains("tokenvault"), "width \(width)")
        }
    }

    func testMandocLintFindsNothing() {
        let r = runProcess("/usr/bin/mandoc", ["-T", "lint", "-W", "warning", Self.page], env: Self.manEnvironment)
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertEqual(r.stdout + r.stderr, "")
    }

    func testSectionsAndTheExitStatusTable() {
        for title in [
            "NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "ENVIRONMENT", "FILES", "EXIT STATUS", "EXAMPLES",
            "SEE ALSO",
        ] {
            XCTAssertFalse(section(title).isEmpty, "no \(title) section")
        }
        // docs/reference.md, written out here rather than taken from the table the page is made from.
        let spec: [Int: String] = [
            0: "success", 1: "bug", 3: "no credential stored", 4: "login required", 64: "usage error",
            65: "bad input", 69: "backend is unavailable", 74: "tampered", 75: "temporary failure",
            76: "provider refused", 77: "no permission", 78: "configuration error",
        ]
        let rows = section("EXIT STATUS").map { $0.trimmingCharacters(in: .whitespaces) }
        for (code, words) in spec {
            XCTAssertTrue(rows.contains { $0.hasPrefix("\(code) ") && $0.contains(words) }, "exit \(code) undocumented")
        }
        XCTAssertTrue(rows.joined(separator: " ").contains("127"), "exec's 127")
    }

    /// The README's exit-status table says what the man page says.
    func testReadmeExitTableMatchesThePage() throws {
        let readme = try String(contentsOf: Paths.root.appendingPathComponent("README.md"), encoding: .utf8)
        let table = try XCTUnwrap(readme.components(separatedBy: "## Exit status").dropFirst().first)
            .components(separatedBy: "\n## ")[0]
        var fromReadme: [String: String] = [:]
        for row in table.split(separator: "\n") where row.hasPrefix("| ") {
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            if cells.count == 2, Int(cells[0]) != nil {
                fromReadme[cells[0]] = cells[1].replacingOccurrences(of: "`", with: "")
            }
        }
        var fromPage: [String: String] = [:]
        for row in section("EXIT STATUS") {
            let words = row.split(separator: " ", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if words.count == 2, Int(words[0]) != nil { fromPage[words[0]] = squeezed(words[1]) }
        }
        XCTAssertEqual(fromPage.count, 14, "0 to 78, and 130 for Ctrl-C")
        XCTAssertEqual(fromReadme, fromPage)
    }

    func testEveryCommandAndOptionIsDocumented() throws {
        let dump = runProcess(Paths.binary, ["--experimental-dump-help"], env: [:])
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        let root = try XCTUnwrap(json["command"] as? [String: Any])
        let commands = try XCTUnwrap(root["subcommands"] as? [[String: Any]])
        XCTAssertGreaterThan(commands.count, 10)
        let synopsis = section("SYNOPSIS").joined(separator: "\n")
        let described = section("COMMANDS")
        // The help topics (help environment, help exit-codes) are the man page's own sections.
        for command in commands where command["shouldDisplay"] as? Bool != false {
            let name = try XCTUnwrap(command["commandName"] as? String)
            XCTAssertTrue(synopsis.contains("tokenvault \(name)"), "\(name) not in SYNOPSIS")
            // The command's item, up to the next item at the same indent.
            guard let start = described.firstIndex(where: { $0.hasPrefix("     \(name)") }) else {
                XCTFail("\(name) not in COMMANDS")
                continue
            }
            let end =
                described[(start + 1)...].firstIndex { $0.hasPrefix("     ") && !$0.hasPrefix("      ") }
                ?? described.endIndex
            // Words only: roff puts two spaces after a sentence.
            let item = squeezed(described[start..<end].joined(separator: " "))
            if let abstract = command["abstract"] as? String {
                XCTAssertTrue(item.contains(squeezed(abstract)), "\(name)'s abstract")
            }
            for argument in command["arguments"] as? [[String: Any]] ?? [] {
                let names = (argument["names"] as? [[String: String]] ?? []).map {
                    ($0["kind"] == "long" ? "--" : "-") + $0["name"]!
                }
                if names.contains("--help") || names.contains("--version") { continue }
                for option in names { XCTAssertTrue(item.contains(option), "\(name) \(option) undocumented") }
                if let abstract = argument["abstract"] as? String, !abstract.isEmpty {
                    XCTAssertTrue(item.contains(squeezed(abstract)), "\(name): \(abstract)")
                }
            }
            // Subcommands (setup git, agent stop, …) are listed beneath theirs, with their options.
            for sub in command["subcommands"] as? [[String: Any]] ?? [] where sub["shouldDisplay"] as? Bool != false {
                let subName = try XCTUnwrap(sub["commandName"] as? String)
                if subName == "help" { continue }
                XCTAssertTrue(item.contains("\(name) \(subName)"), "\(name) \(subName) not in COMMANDS")
                for argument in sub["arguments"] as? [[String: Any]] ?? []
                where argument["shouldDisplay"] as? Bool != false {
                    for option in (argument["names"] as? [[String: String]] ?? []).map({
                        ($0["kind"] == "long" ? "--" : "-") + $0["name"]!
                    }) where !["--help", "-h", "--version"].contains(option) {
                        XCTAssertTrue(item.contains(option), "\(name) \(subName) \(option) undocumented")
                    }
                }
            }
        }
    }

    private func squeezed(_ s: String) -> String {
        s.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    func testEveryVariableTheSourcesReadIsInEnvironment() throws {
        let environment = section("ENVIRONMENT").joined(separator: "\n")
        let sources = Paths.root.appendingPathComponent("Sources")
        let files = try XCTUnwrap(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") && !$0.hasPrefix("tokenvault-manual/") }
        let pattern = try NSRegularExpression(
            pattern: #""((TOKENVAULT|XDG)_[A-Z_]+|BROWSER|DBUS_SESSION_BUS_ADDRESS|KUBERNETES_EXEC_INFO)""#)
        var names = Set<String>()
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                names.insert(String(text[Range(match.range(at: 1), in: text)!]))
            }
        }
        XCTAssertTrue(names.contains("TOKENVAULT_PASSPHRASE_COMMAND"), "the scan found \(names)")
        for name in names {
            XCTAssertTrue(environment.contains(name), "\(name) is read but not in ENVIRONMENT")
        }
    }

    /// What a reader copies from the page is what they can type: ASCII
    /// hyphen-minus and quotes, not their typographic look-alikes.
    func testRenderedTextIsSafeToCopy() {
        let lookAlikes: [Character] = [
            "\u{2010}", "\u{2011}", "\u{2212}", "\u{2018}", "\u{2019}", "\u{201C}", "\u{201D}", "\u{02DC}", "\u{02C6}",
        ]
        for c in lookAlikes {
            XCTAssertFalse(
                Self.rendered.contains(c), "U+\(String(c.unicodeScalars.first!.value, radix: 16)) in the rendered page")
        }
        XCTAssertTrue(Self.rendered.contains("tokenvault exec api.weibo.com -- ./upload.sh"))
        XCTAssertTrue(Self.rendered.contains("export TOKENVAULT_PASSPHRASE_COMMAND='pass show tokenvault'"))
    }

    /// The CONFIGURATION example, copied from the rendered page, is a config
    /// tokenvault accepts, with the providers it defines.
    func testTheConfigurationExampleIsValid() throws {
        let lines = section("CONFIGURATION")
        let textIndent = lines.first { !$0.isEmpty }.map { $0.prefix { $0 == " " }.count } ?? 0
        let literal = lines.filter { $0.prefix { $0 == " " }.count > textIndent || $0.isEmpty }
        let blockIndent = literal.filter { !$0.isEmpty }.map { $0.prefix { $0 == " " }.count }.min() ?? 0
        let toml = literal.map { String($0.dropFirst(min(blockIndent, $0.count))) }.joined(separator: "\n")
        XCTAssertTrue(toml.contains("[providers.localtw]"), toml)
        let s = Sandbox()
        try toml.write(toFile: s.home + "/config.toml", atomically: true, encoding: .utf8)
        let r = s.tv("providers", "--json", env: ["TOKENVAULT_CONFIG": s.home + "/config.toml"])
        XCTAssertEqual(r.status, 0, r.stderr)
        for name in ["\"local\"", "\"localtw\"", "\"weibo\"", "127.0.0.1:9000", "127.0.0.1:9001"] {
            XCTAssertTrue(r.stdout.contains(name), "\(name) in \(r.stdout)")
        }
    }

    /// `tokenvault --help` is for people: a screen, the commands first;
    /// the reference tables are help topics made from the man page's sources.
    func testHelpFitsAScreenAndItsTopicsHoldTheTables() throws {
        let env = ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory(), "COLUMNS": "80"]
        let help = runProcess(Paths.binary, ["--help"], env: env)
        XCTAssertEqual(help.status, 0)
        let lines = help.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertLessThanOrEqual(lines.count, 80, help.stdout)
        let commands = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("SUBCOMMANDS") }, help.stdout)
        XCTAssertLessThan(commands, 20, "the commands come first")
        XCTAssertFalse(help.stdout.contains("TOKENVAULT_PASSPHRASE_FILE"), "no environment table")
        XCTAssertTrue(help.stdout.contains("tokenvault help environment"), help.stdout)
        XCTAssertFalse(help.stdout.contains("environment   "), "the topics are not listed as commands")
        let environment = runProcess(Paths.binary, ["help", "environment"], env: env)
        XCTAssertEqual(environment.status, 0)
        for name in ["TOKENVAULT_BACKEND", "TOKENVAULT_PASSPHRASE_FILE", "XDG_RUNTIME_DIR", "TOKENVAULT_AGENT"] {
            XCTAssertTrue(environment.stdout.contains(name), name)
        }
        let codes = runProcess(Paths.binary, ["help", "exit-codes"], env: env)
        for code in ["0 ", "3 ", "4 ", "64 ", "75 ", "77 ", "78 ", "130 "] {
            XCTAssertTrue(codes.stdout.contains("\n  " + code), code)
        }
        XCTAssertTrue(
            runProcess(Paths.binary, ["exit-codes"], env: env).stdout.contains("\n  77 "), "run as a command too")
    }
}
