internal import CTokenVault
import Dispatch
import FoundationEssentials
import Glibc

/// Where the vault passphrase comes from, first found wins (docs/security.md):
/// `TOKENVAULT_PASSPHRASE_FILE`, `TOKENVAULT_PASSPHRASE_COMMAND` (its stdout),
/// `TOKENVAULT_PASSPHRASE`, then a no-echo prompt on the terminal.
public struct PassphraseSource: Sendable {
    /// The first passphrase variable set (an empty one is unset), and what it holds.
    let given: (variable: EnvironmentVariable, source: SecretSource)?
    /// The terminal to prompt on; nil: none.
    public var terminalPath: String?

    public init(settings: Settings, terminalPath: String? = "/dev/tty") {
        given =
            EnvironmentVariable.passphraseSources.lazy.compactMap { v -> (EnvironmentVariable, SecretSource)? in
                guard let value = settings[v] else { return nil }
                switch v {
                case .passphraseFile: return (v, .secretFile(settings.expandingHome(value)))
                case .passphraseCommand: return (v, .command(value, setting: v.name))
                default: return (v, .value(value))
                }
            }.first
        self.terminalPath = terminalPath
    }

    /// "TOKENVAULT_PASSPHRASE_FILE, TOKENVAULT_PASSPHRASE_COMMAND or TOKENVAULT_PASSPHRASE".
    static let sourceNames = Format.list(EnvironmentVariable.passphraseSources.map(\.name), "or")

    static let noSourceHint = "run tokenvault unlock on a terminal (the key is then cached), or set \(sourceNames)"

    /// The hint for a wrong passphrase from a source.
    static let checkSourcesHint = "check \(sourceNames)"

    /// True when a passphrase can be had without asking anyone.
    public var isNonInteractive: Bool { given != nil }

    /// A passphrase from the environment, a file or a command; nil when none is set (77 when it cannot be read).
    private func fromEnvironment() throws -> SecureBytes? {
        guard let (variable, source) = given else { return nil }
        let what = variable == .passphrase ? variable.name : "the passphrase (\(variable.name))"
        var bytes = try source.bytes(what: what) { TokenVaultError.permission($0) }
        defer { Sodium.wipe(&bytes) }
        return try nonEmpty(bytes[...], source: what)
    }

    /// An existing vault that nothing here can open: what `AutoStore` steps past
    /// when the Secret Service answers.
    static let lockedHere = "the vault is locked and there is no passphrase source and no terminal"

    /// A vault to be created: where its first passphrase can come from.
    static let noVaultHint =
        "create it on a terminal (run the same command there: it asks for a new passphrase twice), or put a passphrase in a file only you can read and set \(EnvironmentVariable.passphraseFile.name) to its path"

    private func terminal(creating: Bool = false) throws -> TerminalInput {
        guard let terminalPath, let tty = TerminalInput(path: terminalPath) else {
            if creating {
                throw TokenVaultError.permission(
                    "there is no file vault yet, and no passphrase to create it with (no passphrase source and no terminal)",
                    hint: PassphraseSource.noVaultHint)
            }
            throw TokenVaultError.permission(Self.lockedHere, hint: PassphraseSource.noSourceHint)
        }
        return tty
    }

    /// The passphrase for a new vault. At a terminal it is typed twice; a
    /// confirmation that does not match asks again, and one libpwquality
    /// judges weak is shown with the reason and kept only when confirmed
    /// (three rounds at most). From the environment, a file or a command it
    /// is taken as it is, never judged.
    public func obtain(creating: Bool) throws -> SecureBytes {
        if let given = try fromEnvironment() { return given }
        let tty = try terminal(creating: creating)
        guard creating else {
            return try nonEmpty(tty.readSecret(prompt: "Vault passphrase: ")[...], source: "the passphrase")
        }
        var failure = "no passphrase was chosen"
        for round in 1...3 {
            let first = try nonEmpty(tty.readSecret(prompt: "New vault passphrase: ")[...], source: "the passphrase")
            if let weakness = Self.weakness(first) {
                tty.say("weak passphrase: \(weakness)\n")
                guard tty.readAnswer(prompt: "keep it anyway? [y/N] ").lowercased().hasPrefix("y") else {
                    failure = "no strong enough passphrase was chosen three times"
                    if round < 3 { tty.say("choose another one\n") }
                    continue
                }
            }
            let again = tty.readSecret(prompt: "Repeat passphrase: ")
            if Sodium.equal(first.bytes, again) { return first }
            failure = "the passphrases did not match three times"
            if round < 3 { tty.say("the passphrases do not match; again\n") }
        }
        throw TokenVaultError.permission("\(failure); nothing was stored")
    }

    /// Why libpwquality judges `secret` weak; nil when it does not, or when
    /// libpwquality is not installed (a judge is help, not a requirement).
    static func weakness(_ secret: SecureBytes) -> String? {
        var bytes = secret.bytes + [0]
        defer { Sodium.wipe(&bytes) }
        var reason = [CChar](repeating: 0, count: 256)
        let score = bytes.withUnsafeBufferPointer { b in
            b.baseAddress!.withMemoryRebound(to: CChar.self, capacity: b.count) {
                tv_pwquality_check($0, &reason, reason.count)
            }
        }
        guard score == -1 else { return nil }
        return OutsideText.line(String(nulTerminated: reason), limit: 160)
    }

    /// Opens something locked with the passphrase: `check` returns what the
    /// passphrase opens, or nil when it is the wrong one. A passphrase from the
    /// environment, a file or a command is tried once; at a terminal, a wrong
    /// one may be typed again (three tries).
    public func unlock<T>(_ what: String, check: (SecureBytes) throws -> T?) throws -> T {
        if let given = try fromEnvironment() {
            if let opened = try check(given) { return opened }
            throw TokenVaultError.permission("wrong passphrase for \(what)", hint: PassphraseSource.checkSourcesHint)
        }
        let tty = try terminal()
        for attempt in 1...3 {
            let secret = try nonEmpty(tty.readSecret(prompt: "Vault passphrase: ")[...], source: "the passphrase")
            if let opened = try check(secret) { return opened }
            if attempt < 3 { tty.say("wrong passphrase; try again (\(3 - attempt) left)\n") }
        }
        throw TokenVaultError.permission(
            "wrong passphrase for \(what) (three tries)",
            hint: "it is the passphrase the vault was created with; nothing else opens it")
    }

    private func nonEmpty(_ b: ArraySlice<UInt8>, source: String) throws -> SecureBytes {
        guard !b.isEmpty else { throw TokenVaultError.permission("\(source) is empty") }
        return SecureBytes(b)
    }
}
