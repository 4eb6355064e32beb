import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

/// stdout carries only the requested value; everything else goes to stderr.
enum Output {
    static func value(_ line: String) {
        if let captured = capture.value { captured.add(out: line + "\n") } else { Posix.write(1, line + "\n") }
    }

    /// Whole lines on stdout from any thread of the command running on this
    /// one (the MCP bridge's): captured with its other output when it is.
    static func lineWriter() -> @Sendable (String) -> Void {
        guard let captured = capture.value else { return { Posix.write(1, $0 + "\n") } }
        return { captured.add(out: $0 + "\n") }
    }

    /// Error lines on stderr from any thread of the command running on this one.
    static func errorWriter() -> @Sendable (String) -> Void {
        guard let captured = capture.value else { return { error($0, hint: nil) } }
        return { line in
            captured.add(err: "tokenvault: error: \(String(line.map { $0.isNewline ? " " : $0 }))\n")
        }
    }

    static func notice(_ line: String) {
        stderr(Notices.noticeLine(line))
    }

    static func warning(_ line: String) {
        stderr(Notices.warningLine(line))
    }

    /// What one of the agent's requests prints on stdout and stderr, and the
    /// warnings it leaves for its end: kept to send to its client instead.
    /// Each request's own, on the thread that answers it.
    private final class Captured: @unchecked Sendable {
        /// stdout and stderr, which threads of the command may add to.
        private let streams = Locked<(out: String, err: String)>(("", ""))
        var pending: [String] = []
        /// What the client's stdout is (a terminal, its width).
        var stdout = Terminal.Stdout(isTerminal: false)
        /// Told each whole line added to stdout.
        var onLine: (@Sendable (String) -> Void)?

        func add(out text: String) {
            streams.withLock { $0.out += text }
            if let onLine { for line in text.split(separator: "\n") { onLine(String(line)) } }
        }
        func add(err text: String) { streams.withLock { $0.err += text } }
        var out: String { streams.withLock { $0.out } }
        var err: String { streams.withLock { $0.err } }
    }
    private static let capture = ThreadLocal<Captured>()

    /// The stdout of the command running on this thread, when it is captured (in the agent).
    static var capturedStdout: Terminal.Stdout? { capture.value?.stdout }

    static func stderr(_ text: String) {
        if let captured = capture.value { captured.add(err: text) } else { Posix.write(2, text) }
    }

    /// Runs `body` with stdout and stderr kept, printing as for a `stdout`
    /// like the one given (the agent's client's); returns its result and what
    /// it printed on each.
    static func capturing<T>(
        stdout: Terminal.Stdout = Terminal.Stdout(isTerminal: false), onLine: (@Sendable (String) -> Void)? = nil,
        _ body: () throws -> T
    ) -> (result: Result<T, Error>, stdout: String, stderr: String) {
        let captured = Captured()
        captured.stdout = stdout
        captured.onLine = onLine
        capture.value = captured
        defer { capture.value = nil }
        let result = Result { try body() }
        flushLater()
        return (result, captured.out, captured.err)
    }

    /// The warnings of a command run directly (the process's one command).
    private static let pending = Locked<[String]>([])

    /// Warnings printed when the command ends (`flushLater`), each once.
    static func later(_ lines: [String]) {
        func add(_ pending: inout [String]) { for l in lines where !pending.contains(l) { pending.append(l) } }
        if let captured = capture.value { add(&captured.pending) } else { pending.withLock(add) }
    }

    /// Prints the pending warnings, but not one that says what the error says
    /// (its message or a line shown beneath it).
    static func flushLater(except error: [String] = []) {
        let lines: [String]
        if let captured = capture.value {
            lines = captured.pending
            captured.pending = []
        } else {
            lines = pending.withLock { p in
                defer { p = [] }
                return p
            }
        }
        for l in lines where !error.contains(where: { !$0.isEmpty && l.hasPrefix($0) }) { warning(l) }
    }

    static func error(_ message: String, hint: String?, excerpt: [String] = []) {
        var text = "tokenvault: error: \(oneLine(message))\n"
        for line in excerpt { text += "    \(oneLine(line))\n" }
        if let hint { text += "hint: \(oneLine(hint))\n" }
        stderr(text)
    }

    private static func oneLine(_ s: String) -> String {
        String(s.map { $0.isNewline ? " " : $0 })
    }

    /// What a command did: a notice on stderr, or with --json the object on
    /// stdout (the notice then stays unsaid).
    static func result(_ notice: String, json: Bool, _ object: @autoclosure () -> [String: JSONValue]) {
        if json { Output.json(.object(object())) } else { Output.notice(notice) }
    }

    /// Compact in a pipe; indented (keys sorted) on a terminal.
    static func json(_ json: JSONValue) {
        if Terminal.stdoutIsTerminal, let pretty = try? JSONValue.prettyEncoder.encode(json) {
            value(String(decoding: pretty, as: UTF8.self))
        } else {
            value(json.text)
        }
    }
}
