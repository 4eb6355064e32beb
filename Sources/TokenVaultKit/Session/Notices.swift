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
