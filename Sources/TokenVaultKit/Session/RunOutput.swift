import Glibc

/// Where one run's stdout and stderr go (docs/design.md, "A run: its
/// session and its plan"): the process's own, or, for a command the agent
/// runs for a client, kept to be sent to that client. Whoever runs the
/// command makes it and hands it in (the entry point, the agent, a test),
/// and so owns what it keeps: the text captured, and the warnings said
/// when the command ends.
public final class RunOutput: Sendable {
    /// What stdout is: a terminal (and its width, when it says), or not.
    public struct Stdout: Sendable, Equatable {
        public var isTerminal: Bool
        public var columns: Int?

        public init(isTerminal: Bool, columns: Int? = nil) {
            self.isTerminal = isTerminal
            self.columns = columns
        }

        /// This process's stdout.
        public static var process: Stdout {
            guard isatty(1) == 1 else { return Stdout(isTerminal: false) }
            var size = winsize()
            let known = ioctl(1, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0
            return Stdout(isTerminal: true, columns: known ? Int(size.ws_col) : nil)
        }
    }

    /// The stdout the command writes for (the client's, in the agent).
    public let stdout: Stdout
    /// Nil: written to the process's descriptors as it comes.
    private let kept: Locked<(out: String, err: String)>?
    /// Told each whole line added to a kept stdout.
    private let onLine: (@Sendable (String) -> Void)?
    /// Warnings said when the command ends, each once.
    private let pending = Locked<[String]>([])

    private init(stdout: Stdout, keeps: Bool, onLine: (@Sendable (String) -> Void)?) {
        self.stdout = stdout
        self.kept = keeps ? Locked(("", "")) : nil
        self.onLine = onLine
    }

    /// The process's stdout and stderr.
    public static func process() -> RunOutput { RunOutput(stdout: .process, keeps: false, onLine: nil) }

    /// Kept, for a stdout like `stdout` (the agent's client's); `onLine` is
    /// told each whole line written to it.
    public static func kept(
        stdout: Stdout = Stdout(isTerminal: false), onLine: (@Sendable (String) -> Void)? = nil
    ) -> RunOutput {
        RunOutput(stdout: stdout, keeps: true, onLine: onLine)
    }

    public func write(stdout text: String) {
        guard let kept else { return Posix.write(1, text) }
        kept.withLock { $0.out += text }
        if let onLine { for line in text.split(separator: "\n") { onLine(String(line)) } }
    }

    public func write(stderr text: String) {
        guard let kept else { return Posix.write(2, text) }
        kept.withLock { $0.err += text }
    }

    /// What was kept on each (empty for the process's).
    public var captured: (stdout: String, stderr: String) { kept?.withLock { ($0.out, $0.err) } ?? ("", "") }

    /// Warnings to say when the command ends (`takeLater`), each once.
    public func later(_ lines: [String]) {
        pending.withLock { p in for l in lines where !p.contains(l) { p.append(l) } }
    }

    /// The warnings left for the end, taken.
    public func takeLater() -> [String] {
        pending.withLock { p in
            defer { p = [] }
            return p
        }
    }

    /// What a run says, on this output's stderr.
    public var notices: Notices {
        Notices(
            warning: { self.write(stderr: Notices.warningLine($0)) },
            notice: { self.write(stderr: Notices.noticeLine($0)) }, later: { self.later($0) },
            passOn: { self.write(stderr: $0) })
    }
}
