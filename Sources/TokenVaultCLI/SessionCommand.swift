import ArgumentParser
import TokenVaultKit

/// A command that runs the one way every command runs (docs/design.md, "A
/// run: its session and its plan"): `TokenVaultMain.execute` builds its
/// `Session` once, from the plan it was given (the process's, or the agent's
/// client's), and what the stores and the vault noticed on the way is
/// printed once, when it ends (an error's line comes after it).
protocol SessionCommand: ParsableCommand {
    func run(in context: Session) throws
}

extension SessionCommand {
    /// Never the way in: a command needs the settings it runs with.
    func run() throws { throw TokenVaultError.internal("\(Self.self) runs only with a session") }

    /// Runs the command in a session of `plan`; the warnings follow its output.
    func run(plan: Plan, agent: Session.AgentRequest?) throws {
        let context = Session(settings: plan.settings, notices: .output, plan: plan, agent: agent)
        defer { context.flushWarnings() }
        try run(in: context)
    }
}

extension Session {
    /// What the command did (`Output.result`), after what was noticed on the way.
    func result(_ notice: String, json: Bool, _ object: @autoclosure () -> [String: JSONValue]) {
        flushWarnings()
        Output.result(notice, json: json, object())
    }
}

extension Notices {
    /// The command line's: stderr, or what the agent keeps of a request's.
    static let output = Notices(
        warning: { Output.warning($0) }, notice: { Output.notice($0) }, later: { Output.later($0) },
        passOn: { Output.stderr($0) })
}
