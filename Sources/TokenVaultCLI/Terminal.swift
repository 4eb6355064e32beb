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

    /// Whether the run's stdout gets colour, with its settings (NO_COLOR, TERM).
    func enabled(_ context: Session) -> Bool {
        Terminal.colour(color, settings: context.settings, stdout: context.output.stdout)
    }
}

/// What stdout is: a terminal (colour, its width, indented JSON) or a pipe.
enum Terminal {
    static func colour(_ choice: ColorChoice, settings: Settings, stdout: RunOutput.Stdout) -> Bool {
        switch choice {
        case .always: return true
        case .never: return false
        case .auto: return stdout.isTerminal && settings[.noColor] == nil && settings[.term] != "dumb"
        }
    }

    /// Columns of the terminal on stdout (else `COLUMNS` of `settings`); nil in a pipe.
    static func width(_ settings: Settings, stdout: RunOutput.Stdout) -> Int? {
        guard stdout.isTerminal else { return nil }
        return stdout.columns ?? settings[.columns].flatMap(Int.init)
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
