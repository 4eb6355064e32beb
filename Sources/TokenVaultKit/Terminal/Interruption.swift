import FoundationEssentials
import Glibc

/// What Ctrl-C says (docs/security.md, "Interrupted"): one line on stderr
/// naming what was and was not stored, then exit 130. A command that stores
/// something keeps the line true as it goes (`say`), and holds Ctrl-C back
/// while the store itself is written (`holding`), so the line is never a
/// guess. A prompt with echo off gets its terminal back first.
///
/// The handler only writes prepared bytes and exits: nothing in it
/// allocates or locks. Its statics are written by the command's own thread
/// (one at a time: a command stores on one thread) and only read by the handler.
public enum Interruption {
    nonisolated(unsafe) private static var line: UnsafeMutablePointer<CChar>? = strdup(text("nothing was stored"))
    nonisolated(unsafe) private static var terminal: (fd: Int32, saved: termios)?
    nonisolated(unsafe) private static var held: Int32 = 0
    nonisolated(unsafe) private static var pending: Int32 = 0
    nonisolated(unsafe) private static var installed = false
    nonisolated(unsafe) private static var claimed = false
    nonisolated(unsafe) private static var newline: UnsafeMutablePointer<CChar>?
    nonisolated(unsafe) private static var clearLine: UnsafeMutablePointer<CChar>?

    private static func text(_ what: String) -> String { "tokenvault: interrupted; \(what)\n" }

    /// From now on Ctrl-C says "tokenvault: interrupted; `what`".
    public static func say(_ what: String) {
        install()
        claimed = true
        // The old line is kept: the handler may be reading it right now.
        line = strdup(text(OutsideText.line(what, limit: 300)))
    }

    /// Runs `body` with Ctrl-C held back; one pressed meanwhile ends the
    /// process right after, with the line `body` left (`say`).
    public static func holding<T>(_ body: () throws -> T) rethrows -> T {
        install()
        held += 1
        defer {
            held -= 1
            if held == 0, pending != 0 { finish() }
        }
        return try body()
    }

    /// While a prompt waits for an answer: Ctrl-C is never held back (nothing
    /// is being written meanwhile), and puts `saved` back on `fd` first (echo
    /// off for a secret). Outside a command that `say`s what it stores, the
    /// line is "nothing was stored", and only while the prompt waits.
    public static func prompting<T>(_ fd: Int32, _ saved: termios, _ body: () throws -> T) rethrows -> T {
        let mine = !installed
        install()
        terminal = (fd, saved)
        defer {
            terminal = nil
            if mine, !claimed {
                signal(SIGINT, SIG_DFL)
                installed = false
            }
        }
        return try body()
    }

    private static func install() {
        guard !installed else { return }
        installed = true
        newline = strdup("\n")
        clearLine = strdup("\r\u{1B}[K")
        _ = line
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in
            if Interruption.held > 0, Interruption.terminal == nil {
                Interruption.pending = 1
                return
            }
            Interruption.finish()
        }
        sigemptyset(&action.sa_mask)
        sigaction(SIGINT, &action, nil)
    }

    /// Async-signal-safe: the terminal back, the wait line (and the echoed
    /// ^C) cleared, the prepared line, exit 130.
    private static func finish() -> Never {
        if let (fd, saved) = terminal {
            var t = saved
            tcsetattr(fd, TCSANOW, &t)
            if let newline { _ = write(2, newline, 1) }
        } else if isatty(2) == 1, let clearLine {
            _ = write(2, clearLine, strlen(clearLine))
        }
        if let line { _ = write(2, line, strlen(line)) }
        _exit(130)
    }
}
