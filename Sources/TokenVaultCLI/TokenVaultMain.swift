import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

/// Runs the command line: hardens the process, parses, runs, and turns every
/// failure into one `tokenvault: error:` line and its documented exit code.
public enum TokenVaultMain {
    public static func run(_ arguments: [String]? = nil) -> Never {
        ProcessHardening.disableCoreDumps()
        // The session a login would have given (an MCP client passes only HOME, PATH, SHELL, TERM).
        Settings.adoptSession()
        let args = arguments ?? completionArguments(Array(CommandLine.arguments.dropFirst()))
        // A command the agent answers is sent to it whole: nothing is parsed here (docs/agent.md).
        let output = RunOutput.process()
        let own = output.stdout
        let finding: Plan.AgentFinding
        switch AgentClient.run(args, terminal: own.isTerminal ? own.columns ?? 0 : nil) {
        case .ran(let status, let stdout, let stderr):
            Posix.write(1, stdout)
            Posix.write(2, stderr)
            exit(status)
        case .direct(let found, let said):
            if let said { output.notice(said) }
            finding = found
        }
        // The one place the process's environment is read: everything below is handed this plan.
        let plan = Plan(settings: Settings.process, agentFinding: finding)
        let status = execute(args, plan: plan, output: output) ?? 1
        AgentClient.startOnFirstUse(args, plan: plan)
        exit(status)
    }

    /// Parses and runs `args` in a session of `plan`, printing to `output`;
    /// the exit status. In the agent (`agent`), `decline` picks the failures
    /// its client must meet itself (help text, a vault only the client can
    /// open): then nothing is printed and nil returned.
    static func execute(
        _ args: [String], plan: Plan, agent: Session.AgentRequest? = nil, output: RunOutput,
        parsed: ParsedCommands? = nil, decline: ((Error) -> Bool)? = nil
    ) -> Int32? {
        // bash's script is the generated one with the words put back together at `:`.
        if args == ["--generate-completion-script", "bash"] || args == ["--generate-completion-script=bash"] {
            output.value(Completions.bashScript)
            return 0
        }
        do {
            // The hot path (docs/reference.md, `get` in every line of a script): the
            // plan starts what the get will wait for while `get` alone is parsed
            // (as the root command: no tree of every command). Anything it does
            // not parse as a plain `get` -- help, an error -- goes through the
            // whole parser, so what the user sees is unchanged.
            if args.first == "get", decline == nil {
                plan.startHeadStart()
                defer { plan.dropHeadStart() }
                if let get = try? TokenVault.Get.parseAsRoot(Array(args.dropFirst())) as? TokenVault.Get {
                    try get.run(plan: plan, agent: agent, output: output)
                    output.flushLater()
                    return 0
                }
            }
            var command = try parsed?.command(args) ?? TokenVault.parseAsRoot(args)
            if let command = command as? any SessionCommand {
                try command.run(plan: plan, agent: agent, output: output)
            } else {
                try command.run()  // help, a group without a command of its own
            }
            output.flushLater()
            return 0
        } catch {
            if let decline, decline(error) { return nil }
            return failed(error, args, output: output)
        }
    }

    /// What the agent hands a client's command to (docs/agent.md): run as
    /// the client would have run it, its output kept in a `RunOutput` of its
    /// own as its client's stdout would take it; nil when the client must run
    /// it itself (help and version text, a vault only the client can open).
    /// The runner owns the commands it parsed.
    static func agentRunner() -> AgentServer.CommandRunner {
        let parsed = ParsedCommands()
        return { request, plan, handedOut in run(request, plan: plan, handedOut: handedOut, parsed: parsed) }
    }

    private static func run(
        _ request: AgentCommandRequest, plan: Plan, handedOut: Session.AgentRequest, parsed: ParsedCommands
    ) -> AgentCommandReply? {
        let output = RunOutput.kept(
            stdout: RunOutput.Stdout(
                isTerminal: request.terminal != nil, columns: request.terminal.flatMap { $0 > 0 ? $0 : nil }))
        let status = execute(request.arguments, plan: plan, agent: handedOut, output: output, parsed: parsed) {
            error in
            if case TokenVaultError.permission = error { return request.hasPassphraseSource }
            return isHelpText(error)
        }
        guard let status else { return nil }
        let (out, err) = output.captured
        return .ran(status: status, stdout: Array(out.utf8), stderr: Array(err.utf8))
    }

    /// The parser's way of answering --help, --version or a completion script: not a failure.
    static func isHelpText(_ error: Error) -> Bool {
        !(error is TokenVaultError) && !(error is ExitCode) && TokenVault.exitCode(for: error) == .success
    }

    /// Says what went wrong, on one line, and gives its exit status.
    private static func failed(_ error: Error, _ args: [String], output: RunOutput) -> Int32 {
        if let error = error as? TokenVaultError {
            output.flushLater(except: [error.errorText] + error.excerpt)
            output.error(error.errorText, hint: error.hint, excerpt: error.excerpt)
            return error.exitCode
        }
        if let code = error as? ExitCode {
            output.flushLater()
            return code.rawValue
        }
        if isHelpText(error) { TokenVault.exit(withError: error) }
        let code = TokenVault.exitCode(for: error)
        if let first = args.first, !first.hasPrefix("-"), !TokenVault.commandNames.contains(first) {
            output.error(
                "unknown command \(Quoted.text(first))",
                hint: Suggestion.text(for: first, in: TokenVault.commandNames, listName: "commands"))
            return ExitCode.validationFailure.rawValue
        }
        // The parser's message, whole, on one line (a list of valid values is never cut).
        let lines = TokenVault.message(for: error).split(separator: "\n").map { $0.trimmingSpacesAndDashes() }
            .filter { !$0.isEmpty }
        output.error(lines.isEmpty ? "\(error)" : lines.joined(separator: " "), hint: helpHint(for: args))
        return code.rawValue
    }

    /// `see: tokenvault help get` (or `help setup git`): the help of the command the arguments name.
    static func helpHint(for args: [String]) -> String {
        var path: [String] = []
        var command: ParsableCommand.Type = TokenVault.self
        for word in args {
            guard
                let sub = command.configuration.subcommands.first(where: {
                    $0.configuration.commandName == word || $0.configuration.aliases.contains(word)
                }), let name = sub.configuration.commandName
            else { break }
            path.append(name)
            command = sub
        }
        return "see: tokenvault help" + path.map { " " + $0 }.joined()
    }
}

extension TokenVault {
    /// Every command name and alias the parser knows, `help` included.
    static var commandNames: [String] {
        configuration.subcommands.filter { $0.configuration.shouldDisplay }.flatMap {
            [$0.configuration.commandName ?? ""] + $0.configuration.aliases
        }.filter { !$0.isEmpty } + ["help"]
    }
}

extension Substring {
    /// A line of the parser's message without its list markers ("  - raw").
    fileprivate func trimmingSpacesAndDashes() -> String {
        String(drop { $0 == " " || $0 == "-" }).trimmedSpaces()
    }
}

/// The dynamic-completion callback is `---completion SUBCOMMAND -- KEY COUNT CURSOR WORDS…`.
/// fish 3 prints nothing for `commandline -tC` when the current word is empty,
/// so swift-argument-parser's fish script then omits CURSOR and the parser
/// refuses the call; the cursor of an empty word is 0, so put it back.
func completionArguments(_ args: [String]) -> [String] {
    guard args.first == "---completion", let dashes = args.firstIndex(of: "--"), args.count > dashes + 3,
        Int(args[dashes + 2]) != nil, Int(args[dashes + 3]) == nil
    else { return args }
    var fixed = args
    fixed.insert("0", at: dashes + 3)
    return fixed
}

/// The commands the agent parsed so far: the same arguments parse to the
/// same command, so a `get` asked in a loop is parsed once. The agent's
/// command runner owns one (`TokenVaultMain.agentRunner`).
final class ParsedCommands: @unchecked Sendable {
    private let parsed = Locked<[[String]: ParsableCommand]>([:])

    func command(_ args: [String]) throws -> ParsableCommand {
        if let command = parsed.withLock({ $0[args] }) { return command }
        let command = try TokenVault.parseAsRoot(args)
        parsed.withLock { known in
            if known.count >= 256 { known = [:] }
            known[args] = command
        }
        return command
    }
}
