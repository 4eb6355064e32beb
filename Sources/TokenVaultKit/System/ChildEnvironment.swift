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

    public init(environment: [String: String]? = nil, directory: String? = nil) {
        self.environment = environment
        self.directory = directory
    }

    /// What a child is given: `environment` (or this process's) without
    /// what no child may see.
    public var childEnvironment: [String: String] {
        ChildEnvironment.scrubbed(environment ?? ProcessInfo.processInfo.environment)
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
        return String(cString: buffer)
    }
}
