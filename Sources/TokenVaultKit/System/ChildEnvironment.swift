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

    /// Removes them from this process's own environment, before it execs.
    public static func scrubProcess() {
        for name in ProcessInfo.processInfo.environment.keys where isPrivate(name) { unsetenv(name) }
    }
}
