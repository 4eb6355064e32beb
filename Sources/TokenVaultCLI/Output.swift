import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

/// stdout carries only the requested value; everything else goes to
/// stderr. What a command prints goes to the run's `RunOutput`, which its
/// runner handed in: the process's own, or kept for the agent's client.
extension RunOutput {
    func value(_ line: String) { write(stdout: line + "\n") }

    /// Whole lines on stdout from any thread of the command (the MCP bridge's).
    func lineWriter() -> @Sendable (String) -> Void { { self.write(stdout: $0 + "\n") } }

    /// Error lines on stderr from any thread of the command.
    func errorWriter() -> @Sendable (String) -> Void { { self.error($0, hint: nil) } }

    func notice(_ line: String) { write(stderr: Notices.noticeLine(line)) }

    func warning(_ line: String) { write(stderr: Notices.warningLine(line)) }

    /// Prints the warnings left for the end, but not one that says what the
    /// error says (its message or a line shown beneath it).
    func flushLater(except error: [String] = []) {
        for l in takeLater() where !error.contains(where: { !$0.isEmpty && l.hasPrefix($0) }) { warning(l) }
    }

    func error(_ message: String, hint: String?, excerpt: [String] = []) {
        var text = "tokenvault: error: \(Self.oneLine(message))\n"
        for line in excerpt { text += "    \(Self.oneLine(line))\n" }
        if let hint { text += "hint: \(Self.oneLine(hint))\n" }
        write(stderr: text)
    }

    private static func oneLine(_ s: String) -> String {
        String(s.map { $0.isNewline ? " " : $0 })
    }

    /// What a command did: a notice on stderr, or with --json the object on
    /// stdout (the notice then stays unsaid).
    func result(_ notice: String, json: Bool, _ object: @autoclosure () -> [String: JSONValue]) {
        if json { self.json(.object(object())) } else { self.notice(notice) }
    }

    /// Compact in a pipe; indented (keys sorted) on a terminal.
    func json(_ json: JSONValue) {
        if stdout.isTerminal, let pretty = try? JSONValue.prettyEncoder.encode(json) {
            value(String(decoding: pretty, as: UTF8.self))
        } else {
            value(json.text)
        }
    }
}
