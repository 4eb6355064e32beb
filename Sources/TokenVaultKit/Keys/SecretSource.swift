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
    /// A shell command, run where `ChildContext` says.
    case command(String, ChildContext = ChildContext())

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
        case .command(let command, let child):
            let status: Int32
            (status, bytes) = try ShellCommand.run(command, in: child, failure: failure)
            guard status == 0 else {
                Sodium.wipe(&bytes)
                throw failure("the command giving \(what) failed (exit \(status))")
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
/// (`ChildEnvironment`); never for a confined client of the agent.
enum ShellCommand {
    static func run(
        _ command: String, in child: ChildContext = ChildContext(),
        failure: (String) -> TokenVaultError = { .config($0) }
    ) throws -> (Int32, [UInt8]) {
        if let confined = child.confined { throw confined.refuse("run a secret command") }
        do {
            return try Posix.spawn(
                ["/bin/sh", "-c", command], env: child.childEnvironment, capture: true, showErrors: true,
                wait: true, directory: child.directory)
        } catch {
            throw failure("cannot run /bin/sh")
        }
    }
}
