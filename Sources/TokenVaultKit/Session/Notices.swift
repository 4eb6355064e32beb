/// Where what a run notices on the way goes (docs/design.md, "A run: its
/// session and its plan"): the command line prints it on stderr; the agent
/// keeps each request's for its client. The library says; it never prints.
public struct Notices: Sendable {
    /// `tokenvault: warning: LINE`.
    public var warning: @Sendable (String) -> Void
    /// `tokenvault: LINE`.
    public var notice: @Sendable (String) -> Void
    /// Warnings said when the command ends, each once (unless its error says the same).
    public var later: @Sendable ([String]) -> Void
    /// Text another process wrote for this one's stderr, passed on as it is
    /// (what the agent printed while it answered).
    public var passOn: @Sendable (String) -> Void

    public init(
        warning: @escaping @Sendable (String) -> Void, notice: @escaping @Sendable (String) -> Void,
        later: @escaping @Sendable ([String]) -> Void, passOn: @escaping @Sendable (String) -> Void
    ) {
        self.warning = warning
        self.notice = notice
        self.later = later
        self.passOn = passOn
    }

    /// Nothing said anywhere (a run whose notices nobody reads).
    public static let none = Notices(warning: { _ in }, notice: { _ in }, later: { _ in }, passOn: { _ in })
}

extension Notices {
    /// How each kind of line reads on stderr.
    public static func warningLine(_ line: String) -> String { "tokenvault: warning: \(line)\n" }
    public static func noticeLine(_ line: String) -> String { "tokenvault: \(line)\n" }
}

/// Notices kept as the text they would have printed on stderr, the
/// warnings said later at its end (what the agent sends a client with its
/// answer).
public final class NoticeBuffer: Sendable {
    private let said = Locked<(text: String, later: [String])>(("", []))

    public init() {}

    public var notices: Notices {
        Notices(
            warning: { line in self.said.withLock { $0.text += Notices.warningLine(line) } },
            notice: { line in self.said.withLock { $0.text += Notices.noticeLine(line) } },
            later: { lines in
                self.said.withLock { s in for l in lines where !s.later.contains(l) { s.later.append(l) } }
            },
            passOn: { text in self.said.withLock { $0.text += text } })
    }

    /// Everything said, the later warnings last.
    public var text: String {
        said.withLock { s in s.text + s.later.map(Notices.warningLine).joined() }
    }
}
