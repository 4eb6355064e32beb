import Dispatch
import FoundationEssentials
import Glibc

/// What programs tokenvault starts (`exec`'s command, `$BROWSER`, secret and
/// passphrase commands) inherit: the environment minus every
/// `TOKENVAULT_PASSPHRASE*` variable, the key to the whole vault.
public enum ChildEnvironment {
    static func isPrivate(_ name: String) -> Bool { name.hasPrefix(EnvironmentVariable.passphrase.name) }

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
        let session: Set = [
            "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "XAUTHORITY", "SSL_CERT_FILE",
            "SSL_CERT_DIR", "CURL_CA_BUNDLE", "http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
            "no_proxy", "NO_PROXY",
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
