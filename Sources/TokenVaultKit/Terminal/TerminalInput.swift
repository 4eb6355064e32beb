import FoundationEssentials
import Glibc

/// Lines typed at a terminal: an answer with echo on, a secret with echo
/// off. Ctrl-C at either puts the terminal back and says what was stored
/// (`Interruption`).
public final class TerminalInput {
    let fd: Int32
    /// Where prompts go: the terminal itself, or stderr.
    let promptFD: Int32
    private let owned: Bool

    /// The terminal at `path` (`/dev/tty`), opened for this; nil when it is none.
    public init?(path: String) {
        let fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        guard isatty(fd) == 1 else {
            close(fd)
            return nil
        }
        (self.fd, promptFD, owned) = (fd, fd, true)
    }

    /// Standard input when it is a terminal, prompting on stderr; nil in a pipe.
    public static func standardInput() -> TerminalInput? {
        isatty(0) == 1 ? TerminalInput(fd: 0, promptFD: 2) : nil
    }

    private init(fd: Int32, promptFD: Int32) { (self.fd, self.promptFD, owned) = (fd, promptFD, false) }

    deinit { if owned { close(fd) } }

    func say(_ text: String) {
        Posix.write(promptFD, text)
    }

    /// One line typed with echo on (a yes or no).
    func readAnswer(prompt: String) -> String {
        var saved = termios()
        tcgetattr(fd, &saved)
        // Ctrl-C is ours before the prompt shows: typed at once, it still says what was stored.
        let line = Interruption.prompting(fd, saved) {
            say(prompt)
            return readLine(limit: 256)
        }
        return String(decoding: line, as: UTF8.self).trimmedWhitespace()
    }

    /// One line typed with echo off, at most `limit` bytes kept.
    public func readSecret(prompt: String, limit: Int = 4096) -> [UInt8] {
        var saved = termios()
        tcgetattr(fd, &saved)
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        quiet.c_lflag |= tcflag_t(ECHONL)
        // Echo off and Ctrl-C ours before the prompt shows: nothing typed at once is echoed or lost.
        return Interruption.prompting(fd, saved) {
            tcsetattr(fd, TCSAFLUSH, &quiet)
            defer { tcsetattr(fd, TCSAFLUSH, &saved) }
            say(prompt)
            return readLine(limit: limit)
        }
    }

    /// One line, without its end, at most `limit` bytes kept.
    private func readLine(limit: Int) -> [UInt8] {
        var line = [UInt8]()
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1, byte != 0x0A {
            if line.count < limit { line.append(byte) }
        }
        if line.last == 0x0D { line.removeLast() }
        return line
    }
}
