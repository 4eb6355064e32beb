import Glibc

/// A command the agent runs for a client (docs/agent.md, "The socket, and who
/// is answered"): the client's arguments and the environment tokenvault reads, in
/// a frame of NUL-separated fields, so that a `get` answered by the agent
/// parses nothing and encodes no JSON on its own side. A frame that starts
/// with `{` is one of the JSON requests instead.
public struct AgentCommandRequest: Equatable, Sendable {
    public var arguments: [String]
    /// The variables of `EnvironmentVariable.sentToAgent` the client has set.
    public var environment: [String: String]
    /// The client can ask for the vault passphrase itself: a vault the agent
    /// cannot open is then the client's to open.
    public var hasPassphraseSource: Bool
    /// The client's stdout is a terminal this many columns wide (0: of
    /// unknown width); nil: a pipe or a file. Colour and tables follow it.
    public var terminal: Int?
    /// The client's build (`AgentSocket.build`): an agent of another declines.
    public var build = AgentSocket.build
    /// The client's whole environment (but the passphrase variables) and
    /// working directory: where a secret command run for it runs, and where
    /// its relative paths are taken from (docs/agent.md).
    public var child: ChildContext

    public init(
        arguments: [String], environment: [String: String], hasPassphraseSource: Bool, terminal: Int? = nil,
        child: ChildContext = ChildContext()
    ) {
        self.arguments = arguments
        self.environment = environment
        self.hasPassphraseSource = hasPassphraseSource
        self.terminal = terminal
        self.child = child
    }

    /// The command reads its stdin (`header --data`): the client runs it
    /// itself, and an agent declines it — an agent never reads its own stdin
    /// for a client.
    public static func readsStandardInput(_ arguments: [String]) -> Bool {
        arguments.first == "header" && arguments.contains { $0 == "--data" }
    }

    /// A command that keeps nothing past its process (`get --no-store`, or
    /// backend none): no agent runs it, starts for it, or keeps what it fetched.
    public static func keepsNothing(_ arguments: [String], _ settings: Settings) -> Bool {
        (arguments.first == "get" && arguments.contains("--no-store"))
            || settings[.backend]?.trimmedSpaces().lowercased() == BackendChoice.none.rawValue
    }

    /// The fields' first: a tag and the protocol's version; then the build.
    static var tag: String { "C\(AgentSocket.version)" }

    public var bytes: [UInt8] {
        var fields =
            [Self.tag, build, hasPassphraseSource ? "p" : "", terminal.map(String.init) ?? "", String(arguments.count)]
            + arguments
        for (name, value) in environment { fields.append(name + "=" + value) }
        // The child's environment as `+NAME=VALUE`, its directory as `@DIR`.
        for (name, value) in child.environment ?? [:] where !ChildEnvironment.isPrivate(name) {
            fields.append("+" + name + "=" + value)
        }
        if let directory = child.directory { fields.append("@" + directory) }
        var out: [UInt8] = []
        for f in fields {
            out += f.utf8
            out.append(0)
        }
        return out
    }

    /// Nil for anything else, another version included.
    public init?(bytes: [UInt8]) {
        guard bytes.last == 0 else { return nil }
        let fields = bytes.dropLast().split(separator: 0, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        // Every number in a frame is checked before any arithmetic is done on it.
        guard fields.count >= 5, fields[0] == Self.tag, let count = Int(fields[4]), count >= 0,
            count <= fields.count - 5, fields[3].isEmpty || Int(fields[3]).map({ $0 >= 0 }) == true
        else { return nil }
        build = fields[1]
        hasPassphraseSource = fields[2] == "p"
        terminal = Int(fields[3])
        arguments = Array(fields[5..<5 + count])
        var environment: [String: String] = [:]
        var child = ChildContext()
        for entry in fields[(5 + count)...] {
            if entry.hasPrefix("@") {
                child.directory = String(entry.dropFirst())
                continue
            }
            guard let eq = entry.firstIndex(of: "=") else { return nil }
            let (name, value) = (entry[..<eq], String(entry[entry.index(after: eq)...]))
            if name.hasPrefix("+") {
                child.environment = child.environment ?? [:]
                child.environment?[String(name.dropFirst())] = value
            } else {
                environment[String(name)] = value
            }
        }
        self.environment = environment
        self.child = child
    }
}

/// Why the agent left a command to its client (docs/agent.md, "Falling
/// back"). On the wire as its words, which `--verbose` shows; words this
/// build does not know (an agent of a later one) are `.other`.
public enum AgentDecline: Equatable, Sendable {
    /// The request is not of this protocol version.
    case anotherVersion
    /// The client is another build: the agent is stopped, and one of the client's build started.
    case anotherBuild
    /// The agent's session bus has ended: it leaves, and the client starts one of its session.
    case sessionGone
    /// The client's settings differ in what decides the agent's scope (named).
    case anotherSetup([String])
    case notACommand, readsStdin, unknownDirectory
    /// The command is the client's to run (help text, a vault only the client can open).
    case clientsToRun
    /// The client is outside the agent's world (another namespace) and the
    /// request needs more than what the agent holds: a renewal, a secret command.
    case confined
    case other(String)

    static let fixed: [(AgentDecline, String)] = [
        (.anotherVersion, "another version"), (.anotherBuild, "another build"),
        (.sessionGone, "its session bus is gone"), (.notACommand, "not a command the agent runs"),
        (.readsStdin, "it reads the client's stdin"), (.unknownDirectory, "the client's working directory is unknown"),
        (.clientsToRun, "the client's to run"),
        (.confined, "the client is in another namespace, and it needs more than the agent holds"),
    ]
    static let setupPrefix = "another setup: "

    public var words: String {
        switch self {
        case .anotherSetup(let names):
            return Self.setupPrefix + Format.list(names) + (names.count == 1 ? " differs" : " differ")
        case .other(let words): return words
        default: return Self.fixed.first { $0.0 == self }?.1 ?? ""
        }
    }

    /// The decline these words name; any other (another setup's, a later
    /// build's) is `.other`, shown as it came: a client needs only to know
    /// another build from the rest, and `--verbose` shows the words.
    public init(words: String) {
        self = Self.fixed.first { $0.1 == words }?.0 ?? .other(words)
    }

    /// Another build or protocol version, not another setup: the agent is to be replaced.
    public var isOtherBuild: Bool { self == .anotherBuild || self == .anotherVersion }
}

/// A request as it arrives (docs/agent.md, "The socket, and who is
/// answered"): one frame, of one of two kinds, each carrying the protocol's
/// version. This is the one place that tells them apart (a JSON object
/// starts with `{`, a command with its tag `C` and the version).
public enum AgentRequestFrame: Sendable {
    /// A command to run; nil when it is of another version or not one.
    case command(AgentCommandRequest?)
    /// A JSON request (`usable`, `stored`, `status`, `lock`, `stop`); nil when it is not JSON.
    case query(JSONValue?)

    public init(body: [UInt8]) {
        self =
            body.first == UInt8(ascii: "{")
            ? .query(AgentSocket.json(body)) : .command(AgentCommandRequest(bytes: body))
    }
}

/// The agent's answer to a command: what it printed and its exit status, or
/// "run it yourself" (another scope, help text, a vault only the client can open).
public enum AgentCommandReply: Equatable, Sendable {
    case ran(status: Int32, stdout: [UInt8], stderr: [UInt8])
    case declined(AgentDecline)

    public var bytes: [UInt8] {
        switch self {
        case .ran(let status, let out, let err):
            return [UInt8(ascii: "R"), UInt8(truncatingIfNeeded: status)] + AgentSocket.lengthBytes(out.count) + out
                + err
        case .declined(let why):
            return [UInt8(ascii: "D")] + Array(why.words.utf8)
        }
    }

    /// Nil for anything else (an agent of another version answers in JSON).
    public init?(bytes: [UInt8]) {
        switch bytes.first {
        case UInt8(ascii: "R"):
            guard bytes.count >= 6 else { return nil }
            let n = AgentSocket.length(in: bytes, at: 2)
            guard n <= bytes.count - 6 else { return nil }
            self = .ran(status: Int32(bytes[1]), stdout: Array(bytes[6..<6 + n]), stderr: Array(bytes[(6 + n)...]))
        case UInt8(ascii: "D"):
            self = .declined(AgentDecline(words: String(decoding: bytes.dropFirst(), as: UTF8.self)))
        default:
            return nil
        }
    }
}

extension EnvironmentVariable {
    /// What a client sends with a command for the agent to run: every
    /// variable tokenvault reads, but never a passphrase source, a token
    /// `exec` set, or what systemd or a hook set for that process alone.
    public static var sentToAgent: [EnvironmentVariable] {
        allCases.filter {
            !passphraseVariables.contains($0)
                && ![.accessToken, .tokenSecret, .listenPID, .listenFDs, .service, .reason, .event].contains($0)
        }
    }
}

extension Settings {
    /// The settings from these variables alone, read with getenv: cheaper
    /// than copying the whole environment, for a command the agent answers.
    public static func reading(_ variables: [EnvironmentVariable]) -> Settings {
        var environment: [String: String] = [:]
        for v in variables {
            if let value = getenv(v.name) { environment[v.name] = String(cString: value) }
        }
        return Settings(environment: environment)
    }
}
