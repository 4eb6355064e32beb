import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

/// `--color auto|always|never`.
enum ColorChoice: String, Choice {
    case auto, always, never
}

/// `--color` for the commands that print states (`list`, `status`, `doctor`).
struct ColorOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Colour the states: auto (on a terminal, unless NO_COLOR or TERM=dumb), always or never.", valueName: "when"
        ),
        completion: .list(ColorChoice.names), transform: ColorChoice.parse)
    var color: ColorChoice = .auto

    /// Whether stdout gets colour, with `settings` (NO_COLOR, TERM).
    func enabled(_ settings: Settings) -> Bool { Terminal.colour(color, settings: settings) }
}

/// What stdout is: a terminal (colour, its width, indented JSON) or a pipe.
enum Terminal {
    struct Stdout {
        var isTerminal: Bool
        /// Its width, when it is a terminal that says.
        var columns: Int?
    }

    /// This process's stdout.
    static var ownStdout: Stdout {
        guard isatty(1) == 1 else { return Stdout(isTerminal: false) }
        var size = winsize()
        let known = ioctl(1, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0
        return Stdout(isTerminal: true, columns: known ? Int(size.ws_col) : nil)
    }

    /// The stdout of the command running now: in the agent, its client's.
    static var stdout: Stdout { Output.capturedStdout ?? ownStdout }

    static var stdoutIsTerminal: Bool { stdout.isTerminal }

    static func colour(_ choice: ColorChoice, settings: Settings) -> Bool {
        switch choice {
        case .always: return true
        case .never: return false
        case .auto: return stdoutIsTerminal && settings[.noColor] == nil && settings[.term] != "dumb"
        }
    }

    /// Columns of the terminal on stdout (else `COLUMNS` of `settings`); nil in a pipe.
    static func width(_ settings: Settings) -> Int? {
        let out = stdout
        guard out.isTerminal else { return nil }
        return out.columns ?? settings[.columns].flatMap(Int.init)
    }

    enum Paint: String {
        case green = "32", yellow = "33", cyan = "36", red = "31", bold = "1"
    }

    static func paint(_ text: String, _ paint: Paint?, on: Bool) -> String {
        guard on, let paint else { return text }
        return "\u{1B}[\(paint.rawValue)m\(text)\u{1B}[0m"
    }

    /// The colour of a credential state.
    static func paint(for state: CredentialState) -> Paint {
        switch state {
        case .valid: return .green
        case .expiring: return .yellow
        case .refreshable: return .cyan
        case .loginRequired: return .red
        }
    }
}
