import Dispatch
import FoundationEssentials
import Glibc

/// A wait a person can see (README, "Exit status"): on a terminal (stderr a
/// tty), a wait longer than a second says what it waits for on one line of
/// stderr, updated every second and cleared when the wait ends. Nothing of it
/// when stderr is not a terminal.
public final class WaitLine: @unchecked Sendable {
    /// Whether waits are shown: stderr is a terminal.
    public static let enabled = isatty(2) == 1

    /// Where no line can be drawn (a pipe, a log), a wait that may be long is
    /// said once, before it starts: `tokenvault: LINE` on stderr.
    public static func announce(_ line: String) {
        if !enabled { Posix.write(2, "tokenvault: \(line)\n") }
    }

    private let describe: @Sendable (_ elapsed: Int) -> String
    private let note: (after: Int, text: String)?
    private let done = DispatchSemaphore(value: 0)
    private let cleared = DispatchSemaphore(value: 0)

    private init(_ describe: @escaping @Sendable (Int) -> String, note: (after: Int, text: String)?) {
        self.describe = describe
        self.note = note
    }

    /// Runs `body`; when it takes longer than a second, `describe(seconds
    /// waited)` is shown until it returns. `note`: a line of its own, printed
    /// above the wait's line once the wait has lasted `after` seconds (what to
    /// check when nothing comes).
    public static func during<T>(
        _ describe: @escaping @Sendable (_ elapsed: Int) -> String, note: (after: Int, text: String)? = nil,
        _ body: () throws -> T
    ) rethrows -> T {
        guard enabled else { return try body() }
        let line = WaitLine(describe, note: note)
        Posix.spawnThread { [line] in line.show() }
        defer {
            line.done.signal()
            line.cleared.wait()
        }
        return try body()
    }

    private func show() {
        var elapsed = 0
        while done.wait(timeout: .now() + 1) == .timedOut {
            elapsed += 1
            if let note, elapsed == note.after {
                Posix.write(2, "\r\u{1B}[K" + OutsideText.line("tokenvault: " + note.text, limit: 1000) + "\n")
            }
            Self.draw(describe(elapsed))
        }
        if elapsed > 0 { Self.clear() }
        cleared.signal()
    }

    /// The wait's line, drawn over the one before; cut to the terminal's
    /// width, since a line that wraps cannot be drawn over.
    static func draw(_ text: String) {
        var size = winsize()
        let columns = ioctl(2, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 1 ? Int(size.ws_col) : 80
        Posix.write(2, "\r\u{1B}[K" + OutsideText.line("tokenvault: " + text, limit: min(160, columns - 2)))
    }

    /// Clears the line once the wait is over.
    static func clear() { Posix.write(2, "\r\u{1B}[K") }

    /// "N s left" of a wait bounded by `bound` seconds, after `elapsed`.
    public static func left(_ bound: Double, _ elapsed: Int) -> String { "\(max(0, Int(bound) - elapsed)) s left" }
}
