import FoundationEssentials
import Glibc

/// A program of the PATH, run without a shell; what it printed, and its status.
public enum Tool {
    public static func path(_ name: String, settings: Settings) throws -> String {
        for dir in (settings[.path] ?? "/usr/bin:/bin").split(separator: ":") where !dir.isEmpty {
            let candidate = "\(dir)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        throw TokenVaultError.usage(
            "\(name) is not on the PATH", hint: "install \(name), or set it up by hand (see docs/adapters.md)")
    }

    /// Runs it without the passphrase variables, as every child (docs/security.md).
    @discardableResult
    public static func run(_ argv: [String], settings: Settings) throws -> (status: Int32, output: String) {
        let (status, out) = try Posix.spawn(
            [try path(argv[0], settings: settings)] + argv.dropFirst(),
            env: ChildEnvironment.scrubbed(settings.environment), capture: true, showErrors: true, wait: true)
        return (status, String(decoding: out, as: UTF8.self))
    }

    /// `argv` as one shell line, for --dry-run.
    public static func shown(_ argv: [String]) -> String { argv.map(ShellWord.word).joined(separator: " ") }

    /// This executable's absolute path: what git and kubectl are told to run.
    public static var selfPath: String {
        guard let real = realpath("/proc/self/exe", nil) else { return "tokenvault" }
        defer { free(real) }
        return String(cString: real)
    }
}
