import FoundationEssentials
import Glibc

/// Where a secret comes from: a value, a file of the user's own
/// (`TrustedFile`; a `~/` in the config was expanded when it was loaded), or a command's stdout. Client secrets,
/// the etcd password and the vault passphrase are all read through it.
enum SecretSource: Sendable {
    case value(String)
    case file(String)
    /// A file only its owner may read (the vault passphrase's).
    case secretFile(String)
    /// A shell command, run where `ChildContext` says; `setting` names it in
    /// messages ("client_secret_command of [providers.q]").
    case command(String, ChildContext = ChildContext(), setting: String)
    /// A source that cannot be read, and why (a setting that names nothing usable).
    case failing(String)

    /// What the source holds, with one trailing newline (LF or CR LF)
    /// removed; the caller wipes it. `failure` words the error for a file
    /// that cannot be read or a command that fails.
    func bytes(what: String, failure: (String) -> TokenVaultError) throws -> [UInt8] {
        var bytes: [UInt8]
        switch self {
        case .value(let v):
            bytes = Array(v.utf8)
        case .file(let path), .secretFile(let path):
            guard let data = try TrustedFile.read(path, what: "the file holding \(what)", secret: isSecretFile) else {
                throw failure("cannot read \(what) from \(path)")
            }
            bytes = data
        case .failing(let why):
            throw failure(why)
        case .command(let command, let child, let setting):
            let status: Int32
            (status, bytes) = try ShellCommand.run(command, in: child, setting: setting, failure: failure)
            guard status == 0 else {
                Sodium.wipe(&bytes)
                throw failure("the command giving \(what) failed (exit \(status)): \(setting)")
            }
        }
        if bytes.last == 0x0A { bytes.removeLast() }
        if bytes.last == 0x0D { bytes.removeLast() }
        return bytes
    }

    private var isSecretFile: Bool {
        if case .secretFile = self { return true }
        return false
    }

    /// The first line of what the source holds (a config secret: 78 when it cannot be read).
    func read(what: String) throws -> String {
        var bytes = try self.bytes(what: what) { TokenVaultError.config($0) }
        defer { Sodium.wipe(&bytes) }
        return String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
    }
}

/// `/bin/sh -c COMMAND`, its stdout captured, stdin from /dev/null, in the
/// environment and directory `child` gives, without the passphrase variables
/// (`ChildEnvironment`); never for a confined client of the agent. Bounded:
/// 64 KiB of output and `command_timeout` seconds (docs/config.md), and, in
/// the agent, ended by `lock` and `agent stop` (`RequestGate`).
enum ShellCommand {
    /// Without a controlling terminal nothing a command does needs the
    /// terminal's foreground group: it runs in a group of its own. So does a
    /// command of an agent's request or renewal (its `gate` is set), ended
    /// whole; a terminal's commands stay in its foreground group.
    static let noTerminal = !Posix.hasControllingTerminal

    static func run(
        _ command: String, in child: ChildContext = ChildContext(), setting: String,
        failure: (String) -> TokenVaultError = { .config($0) }
    ) throws -> (Int32, [UInt8]) {
        if let confined = child.confined { throw confined.refuse("run a secret command") }
        try child.gate?.check()
        var started: pid_t = 0
        var result: (end: Posix.BoundedEnd, output: [UInt8])
        let newGroup = child.gate != nil || noTerminal
        do {
            result = try Posix.spawnBounded(
                ["/bin/sh", "-c", command], env: child.childEnvironment, directory: child.directory,
                newGroup: newGroup, maxOutput: ChildContext.outputLimit, seconds: child.timeLimit
            ) { pid in
                started = pid
                return child.gate?.started(pid, group: newGroup) ?? true
            }
        } catch {
            throw failure("cannot run /bin/sh")
        }
        child.gate?.ended(started)
        switch result.end {
        case .exited(let status):
            // Ended by `lock` or `agent stop`: that is the answer, not its exit status.
            if child.gate?.closed != nil { Sodium.wipe(&result.output) }
            try child.gate?.check()
            return (status, result.output)
        case .tooLarge:
            Sodium.wipe(&result.output)
            throw failure(
                "\(setting) printed more than \(ChildContext.outputLimit / 1024) KiB; a secret is one line, and nothing was sent"
            )
        case .tooSlow:
            Sodium.wipe(&result.output)
            throw failure(
                "\(setting) did not finish within \(child.timeLimit.shortText) s (command_timeout in config.toml); it was ended, and nothing was sent"
            )
        }
    }
}
