import Foundation
import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// The one reader of JSON from outside (docs/design.md): every value read
/// as Foundation reads it, nesting bounded (a hostile server's brackets are
/// that message's error, never a crash), duplicate keys and inexact integers
/// refused where a file is rewritten.
final class JSONSyntaxTests: XCTestCase {
    func testValuesReadAsFoundationReadsThem() throws {
        let texts = [
            #"{"a":1,"b":-2.5,"c":"x\"y\\z\/\n\t\u00e9\ud83d\ude00","d":[true,false,null],"e":{}}"#,
            #"[]"#, #"  "plain"  "#, "0", "-0.0", "1e3", "9223372036854775807", "-9223372036854775808",
            "18446744073709551616", #"{"k":"Zürich"}"#, "1.0", "2.5e-3",
        ]
        for text in texts {
            let ours = try JSONSyntax.parse(Array(text.utf8))
            let theirs = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
            XCTAssertEqual(ours, theirs, text)
        }
        XCTAssertEqual(try JSONSyntax.parse(Array("7".utf8)), .integer(7))
        XCTAssertEqual(try JSONSyntax.parse(Array("7.5".utf8)), .number(7.5))
        XCTAssertEqual(try JSONSyntax.parse(Array(#"{"a":1,"a":2}"#.utf8))["a"], .integer(2), "the last wins")
    }

    func testWhatIsNotJSONIsRefusedWithItsPlace() {
        let bad: [(String, String)] = [
            ("{\"a\":1,}", "a key in double quotes"), ("[1,]", "a value should be here"), ("'x'", "single"),
            (#""\ud800""#, "unpaired surrogate"), (#""\x""#, "unknown escape"), ("\"a\nb\"", "control character"),
            ("[1] 2", "more after the end"), ("{\"a\" 1}", "':' should follow"), ("tru", "a value should be here"),
            ("1e999", "too large"), ("", "ends where a value"),
        ]
        for (text, what) in bad {
            XCTAssertThrowsError(try JSONSyntax.parse(Array(text.utf8)), text) { error in
                XCTAssertTrue((error as? JSONSyntax.Problem)?.what.contains(what) ?? false, "\(text): \(error)")
            }
        }
        XCTAssertNil(JSONValue.parsed([0x22, 0xFF, 0x22]), "a string that is not UTF-8")
        XCTAssertEqual(JSONSyntax.firstProblem("{\n  \"a\": tru\n}")?.line, 2)
    }

    /// 350 levels (2 KB) took a thread's whole 1 MiB stack in JSONDecoder; a
    /// million levels are refused at level 65, at once, on a small stack.
    func testNestingBeyondTheLimitIsAnErrorNotACrash() {
        for depth in [65, 350, 1_000_000] {
            for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
                let text = String(repeating: open, count: depth) + "1" + String(repeating: close, count: depth)
                let result = Locked<JSONSyntax.Problem?>(nil)
                let done = DispatchSemaphore(value: 0)
                Posix.spawnThread(stackSize: 256 << 10) {
                    do {
                        _ = try JSONSyntax.parse(Array(text.utf8))
                    } catch {
                        result.mutate { $0 = error as? JSONSyntax.Problem }
                    }
                    done.signal()
                }
                done.wait()
                XCTAssertEqual(result.value?.what, "nested more than 64 deep", "\(depth) \(open)")
            }
        }
        let deepest = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        XCTAssertNotNil(JSONValue.parsed(Array(deepest.utf8)), "64 deep is read")
    }

    func testAFileToRewriteRefusesDuplicateKeysAndInexactIntegers() {
        var rules = JSONSyntax.Rules()
        (rules.refuseDuplicateKeys, rules.refuseInexactIntegers) = (true, true)
        XCTAssertThrowsError(try JSONSyntax.parse(Array("{\"a\":1,\n \"a\":2}".utf8), rules: rules)) {
            XCTAssertEqual(($0 as? JSONSyntax.Problem)?.line, 2)
        }
        XCTAssertThrowsError(try JSONSyntax.parse(Array(#"{"n":18446744073709551616}"#.utf8), rules: rules))
        XCTAssertNoThrow(try JSONSyntax.parse(Array(#"{"n":9223372036854775807,"x":1.5}"#.utf8), rules: rules))
    }
}
