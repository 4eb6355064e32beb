import Dispatch
import FoundationEssentials
import Glibc

/// What programs tokenvault starts (`exec`'s command, `$BROWSER`, secret and
/// passphrase commands) inherit: the environment minus every
/// `TOKENVAULT_PASSPHRASE*` variable, the key to the whole vault.
public enum ChildEnvironment {
    public static func isPrivate(_ name: String) -> Bool { name.hasPrefix(EnvironmentVariable.passphrase.name) }

    /// `environment` without the variables no child may see.
    public static func scrubbed(_ environment: [String: String]) -> [String: String] {
        environment.filter { !isPrivate($0.key) }
    }

    /// What an agent started on first use is given (docs/agent.md): what it
    /// needs to reach the session, its settings and the network's, nothing
    /// else of the command that started it — no token `exec` set, no
    /// `LISTEN_*` of systemd, no hook's variables, no passphrase source.
    public static func forAgent(_ environment: [String: String]) -> [String: String] {
        let settings = Set(EnvironmentVariable.sentToAgent.map(\.name))
        // The proxies are settings (EnvironmentVariable) already.
        let session: Set = [
            "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "XAUTHORITY", "SSL_CERT_FILE",
            "SSL_CERT_DIR", "CURL_CA_BUNDLE",
        ]
        return environment.filter {
            (settings.contains($0.key) || session.contains($0.key) || $0.key.hasPrefix("LC_")) && !isPrivate($0.key)
        }
    }

    /// What makes a program load or run code of the environment's choosing
    /// rather than its own: the dynamic loader's variables, glibc's, and the
    /// shells' and interpreters' start-up files, paths and options (docs/agent.md,
    /// "What a command the agent runs sees"). The agent never passes them on from a
    /// client: a client less trusted than the agent (a sandbox sharing its
    /// runtime directory) would have its code run outside its confinement.
    public static func injects(_ name: String) -> Bool {
        if name.hasPrefix("LD_") || name.hasPrefix("BASH_FUNC_") || name.hasPrefix("LUA_") { return true }
        return injectionVariables.contains(name)
    }

    static let injectionVariables: Set<String> = [
        // glibc: its tunables, and what it refuses from the environment of a setuid program.
        "GLIBC_TUNABLES", "GCONV_PATH", "GETCONF_DIR", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH", "MALLOC_TRACE",
        "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TZDIR",
        // Shells: start-up files and options.
        "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "CDPATH", "IFS",
        // Interpreters: where they load code from, and options that run code.
        "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONUSERBASE", "PYTHONBREAKPOINT",
        "PERL5LIB", "PERLLIB", "PERL5OPT", "PERL5DB", "RUBYLIB", "RUBYOPT", "NODE_OPTIONS", "NODE_PATH",
        "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "TCLLIBPATH", "GIT_EXEC_PATH",
        "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_SSH_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS",
    ]

    /// `environment` as the agent passes a client's on: without the
    /// variables no child may see, and without those that inject code.
    public static func fromClient(_ environment: [String: String]) -> [String: String] {
        environment.filter { !isPrivate($0.key) && !injects($0.key) }
    }

    /// Removes them from this process's own environment, before it execs.
    public static func scrubProcess() {
        for name in ProcessInfo.processInfo.environment.keys where isPrivate(name) { unsetenv(name) }
    }
}

/// Where a command tokenvault runs for a setting (a `*_command` secret
/// source, the etcd password command) runs: the environment it sees and its
/// working directory, where a relative path of the settings is taken from
/// too. A command runs in its own process's (nil, nil); the agent runs its
/// client's command in the client's (docs/agent.md, "What a command the agent
/// runs sees"), which the request carries.
public struct ChildContext: Sendable, Equatable {
    /// The environment (nil: this process's), before the passphrase
    /// variables are taken out of it.
    public var environment: [String: String]?
    /// The working directory, absolute (nil: this process's).
    public var directory: String?
    /// Set in the agent for a client outside its world (another mount or
    /// user namespace): nothing is run or sent on its behalf (docs/security.md).
    public var confined: Confinement?
    /// Set in the agent for each request and renewal: `lock` and `agent stop`
    /// close it (docs/agent.md, "Locked").
    public var gate: RequestGate?
    /// Seconds a secret command may run (`command_timeout`, docs/config.md).
    public var timeLimit: Double = ChildContext.defaultTimeLimit

    /// `command_timeout`'s default.
    public static let defaultTimeLimit = 30.0
    /// What a secret command may print: a secret is one line.
    public static let outputLimit = 64 * 1024

    public init(environment: [String: String]? = nil, directory: String? = nil) {
        self.environment = environment
        self.directory = directory
    }

    public static func == (a: ChildContext, b: ChildContext) -> Bool {
        a.environment == b.environment && a.directory == b.directory && (a.confined == nil) == (b.confined == nil)
    }

    /// What a child is given: this process's environment without what no
    /// child may see; a client's (the agent runs its command) without what
    /// injects code too.
    public var childEnvironment: [String: String] {
        guard let environment else { return ChildEnvironment.scrubbed(ProcessInfo.processInfo.environment) }
        return ChildEnvironment.fromClient(environment)
    }

    /// `path` taken from `directory` (or this process's working directory)
    /// when it is relative: a path handed to another process, or kept by a
    /// process that moves to /, still names the same file.
    public func absolute(_ path: String) -> String {
        guard !path.hasPrefix("/"), !path.isEmpty, let directory = directory ?? Self.currentDirectory else {
            return path
        }
        return directory.hasSuffix("/") ? directory + path : directory + "/" + path
    }

    /// This process's working directory, absolute; nil when it cannot be read.
    public static var currentDirectory: String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return nil }
        return String(nulTerminated: buffer)
    }
}

/// A client of the agent outside the agent's world: in another mount or user
/// namespace (a sandbox or container that shares the runtime directory). It
/// is handed what the agent holds and nothing more: no command runs and no
/// request is sent for it (docs/security.md, "Clients less trusted than the
/// agent"). What was refused is noted, and the agent then declines the whole
/// request: the client runs it itself, in its own world.
public final class Confinement: @unchecked Sendable {
    /// Why the client is confined ("another mount namespace").
    public let why: String
    private let refusedFlag = Locked(false)

    public init(why: String) { self.why = why }

    /// True once something was refused for this client.
    public var refused: Bool { refusedFlag.withLock { $0 } }

    /// Notes the refusal of `what`, and the error that stops it.
    public func refuse(_ what: String) -> TokenVaultError {
        refusedFlag.withLock { $0 = true }
        return .permission("the agent does not \(what) for a client in \(why); the client does it itself")
    }
}
