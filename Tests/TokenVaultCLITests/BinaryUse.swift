import Foundation
import XCTest

/// Which tests start the built binary (docs/hacking.md, "Tests"): a test
/// that runs it, or runs something that runs it (a pty, a git or MCP client
/// given its path), is noted in `$TV_TEST_BINARY_LOG`, one `Class.test` a
/// line, for `scripts/run-tests.sh` to count. Every place the tests spawn a
/// process tells `note` what it runs.
final class BinaryUse: NSObject, XCTestObservation, @unchecked Sendable {
    private static let shared = BinaryUse()
    private static let registered: Bool = {
        XCTestObservationCenter.shared.addTestObserver(shared)
        return true
    }()
    private let lock = NSLock()
    private var started = false
    private let log = ProcessInfo.processInfo.environment["TV_TEST_BINARY_LOG"]

    /// A child about to run `argv` with `env`: the binary when any of its
    /// words, or any value of its environment, names it.
    static func note(_ argv: [String], env: [String: String] = [:]) {
        _ = registered
        let binary = Paths.binary
        guard argv.contains(where: { $0.contains(binary) }) || env.values.contains(binary) else { return }
        shared.lock.withLock { shared.started = true }
    }

    /// The test process itself runs a command (`InProcess`).
    static func noteInProcess() { _ = registered }

    func testCaseWillStart(_ testCase: XCTestCase) { lock.withLock { started = false } }

    func testCaseDidFinish(_ testCase: XCTestCase) {
        let ran = lock.withLock { () -> Bool in
            defer { started = false }
            return started
        }
        guard ran, let log, let handle = FileHandle(forWritingAtPath: log) ?? create(log) else { return }
        handle.seekToEndOfFile()
        handle.write(Data((testCase.name + "\n").utf8))
        try? handle.close()
    }

    private func create(_ path: String) -> FileHandle? {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        return FileHandle(forWritingAtPath: path)
    }
}

extension Process {
    /// `run()`, noted in `BinaryUse` when it starts the binary.
    func runNoted() throws {
        BinaryUse.note(
            [executableURL?.path ?? ""] + (arguments ?? []), env: environment ?? [:])
        try run()
    }
}
