import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

/// A command's side of the agent (docs/agent.md): one request per
/// connection. Anything short of a proper answer — no agent, a dead socket,
/// another version, another scope, a vault the agent cannot open but this
/// command could — sends the command the direct way, at once.
enum AgentClient {
    /// Seconds a client waits for an answer when it has not read the config
    /// (the agent may be renewing: the config's HTTP timeout, 30 s by default, and some).
    static let defaultTimeout = 45

    /// The commands the agent runs whole for a client (docs/agent.md): they
    /// print, and read neither a terminal nor stdin.
    static let commands = ["get", "header", "status", "list"]

    /// Has the agent run `args` when it is one of `commands` and an agent of
    /// this scope answers: its output printed, its exit status returned. Nil:
    /// run it here. No JSON and no argument parsing on this side: a `get`
    /// costs little more than starting the process.
    static func run(_ args: [String]) -> Int32? {
        guard let first = args.first, commands.contains(first) else { return nil }
        let sources = EnvironmentVariable.passphraseSources
        let settings = Settings.reading(EnvironmentVariable.sentToAgent + sources)
        guard present(settings), let fd = AgentSocket.connect(AgentSocket.path(settings), seconds: defaultTimeout)
        else { return nil }
        defer { close(fd) }
        var environment = settings.environment
        for v in sources { environment[v.name] = nil }
        // A terminal on stdin is a passphrase source too: the prompt (docs/reference.md).
        let stdout = Terminal.ownStdout
        let request = AgentCommandRequest(
            arguments: args, environment: environment,
            hasPassphraseSource: sources.contains { settings[$0] != nil } || isatty(0) == 1,
            terminal: stdout.isTerminal ? stdout.columns ?? 0 : nil)
        guard AgentSocket.sendFrame(fd, request.bytes), let body = AgentSocket.receiveFrame(fd),
            case .ran(let status, let out, let err)? = AgentCommandReply(bytes: body)
        else {
            declined = true  // the command runs here, and does not ask again
            return nil
        }
        Posix.write(1, out)
        Posix.write(2, err)
        return status
    }

    /// The agent did not run this process's command: nothing more is asked of it.
    nonisolated(unsafe) private static var declined = false

    /// An agent's socket is there to try (cheap: one lstat).
    static func present(_ settings: Settings) -> Bool {
        guard settings.agentAllowed, !declined else { return false }
        var st = stat()
        return lstat(AgentSocket.path(settings), &st) == 0 && st.st_mode & S_IFMT == S_IFSOCK
    }

    /// The agent's answer to `request` (an object; version and scope are
    /// added): its `ok` value, or its failure thrown. Nil: go direct.
    static func ask(_ op: String, _ fields: [String: JSONValue], settings: Settings, seconds: Int) throws -> JSONValue?
    {
        guard present(settings), let fd = AgentSocket.connect(AgentSocket.path(settings), seconds: seconds) else {
            return nil
        }
        defer { close(fd) }
        var request = fields
        request["v"] = .integer(AgentSocket.version)
        request["op"] = .string(op)
        request["scope"] = settings.agentScope
        guard AgentSocket.send(fd, .object(request)), let answer = AgentSocket.receive(fd),
            answer["v"] == .integer(AgentSocket.version)
        else { return nil }
        if let error = answer["error"] {
            guard let failure = TokenVaultError(wire: error) else { return nil }
            // The agent cannot open the vault, but this command has a passphrase source of its own.
            if case .permission = failure,
                EnvironmentVariable.passphraseSources.contains(where: { settings[$0] != nil })
            {
                return nil
            }
            Output.stderr(answer["stderr"]?.string ?? "")
            throw failure
        }
        guard let ok = answer["ok"] else { return nil }
        Output.stderr(answer["stderr"]?.string ?? "")
        return ok
    }

    /// A credential from the agent for `op` (`usable` or `stored`), or nil to go direct.
    static func credential(
        _ op: String, _ id: CredentialID, minValid: Int?, refresh: Bool, force: Bool, settings: Settings,
        timeout: Int
    ) throws -> Credential? {
        var fields: [String: JSONValue] = [
            "service": .string(id.service.description), "account": .string(id.account), "refresh": .bool(refresh),
            "force": .bool(force),
        ]
        if let minValid { fields["min_valid"] = .integer(Int64(minValid)) }
        return try ask(op, fields, settings: settings, seconds: timeout).flatMap(Credential.init(wire:))
    }
}
