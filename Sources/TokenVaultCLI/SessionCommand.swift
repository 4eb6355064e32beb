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

    /// Runs the command in a session of `plan`, printing to `output`; the
    /// warnings follow its output.
    func run(plan: Plan, agent: Session.AgentRequest?, output: RunOutput) throws {
        let context = Session(
            settings: plan.settings, notices: output.notices, plan: plan, agent: agent, output: output)
        defer { context.flushWarnings() }
        try run(in: context)
    }
}

extension Session {
    /// What the command did (`RunOutput.result`), after what was noticed on the way.
    func result(_ notice: String, json: Bool, _ object: @autoclosure () -> [String: JSONValue]) {
        flushWarnings()
        output.result(notice, json: json, object())
    }
}
