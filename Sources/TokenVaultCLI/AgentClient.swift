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

    /// An agent's socket is there to try (cheap: one lstat).
    static func present(_ settings: Settings) -> Bool {
        guard settings.agentAllowed else { return false }
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
