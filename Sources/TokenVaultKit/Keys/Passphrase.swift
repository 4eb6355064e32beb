internal import CTokenVault
import Dispatch
import FoundationEssentials
import Glibc

/// Where the vault passphrase comes from, first found wins (docs/security.md):
/// `TOKENVAULT_PASSPHRASE_FILE`, `TOKENVAULT_PASSPHRASE_COMMAND` (its stdout),
/// a systemd credential (`TOKENVAULT_PASSPHRASE_CREDENTIAL`, or
/// `tokenvault-passphrase` when `CREDENTIALS_DIRECTORY` holds one),
/// `TOKENVAULT_PASSPHRASE`, then a no-echo prompt on the terminal.
public struct PassphraseSource: Sendable {
    /// The first passphrase variable set (an empty one is unset), and what it holds.
    let given: (variable: EnvironmentVariable, source: SecretSource)?
    /// The terminal to prompt on; nil: none.
    public var terminalPath: String?

    public init(settings: Settings, terminalPath: String? = "/dev/tty") {
        given =
            EnvironmentVariable.passphraseSources.lazy.compactMap { v -> (EnvironmentVariable, SecretSource)? in
                if v == .passphraseCredential { return Self.credential(settings).map { (v, $0) } }
                guard let value = settings[v] else { return nil }
                switch v {
                case .passphraseFile: return (v, .secretFile(settings.expandingHome(value)))
                case .passphraseCommand: return (v, .command(value, setting: v.name))
                default: return (v, .value(value))
                }
            }.first
        self.terminalPath = terminalPath
    }

    /// The name a systemd credential holding the passphrase has when
    /// `TOKENVAULT_PASSPHRASE_CREDENTIAL` does not name one.
    public static let defaultCredentialName = "tokenvault-passphrase"

    /// The systemd credential (docs/headless.md): `$CREDENTIALS_DIRECTORY/NAME`
    /// for the NAME the variable gives, or the default name where the unit
    /// passed one. A named credential with no `CREDENTIALS_DIRECTORY` (a
    /// command run outside its unit), or a NAME that is not one, is a
    /// source that fails to read, with the reason.
    static func credential(_ settings: Settings) -> SecretSource? {
        let named = settings[.passphraseCredential]
        let name = named ?? defaultCredentialName
        guard let directory = settings[.credentialsDirectory] else {
            guard let named else { return nil }
            return .failing(
                "\(EnvironmentVariable.passphraseCredential.name) names the systemd credential \(Quoted.text(named)), but \(EnvironmentVariable.credentialsDirectory.name) is not set: systemd sets it only in a unit that loads credentials (LoadCredentialEncrypted=\(named):…)"
            )
        }
        guard !name.contains("/"), name != ".", name != ".." else {
            return .failing(
                "\(EnvironmentVariable.passphraseCredential.name) must be a credential's name, not a path: \(Quoted.text(name))"
            )
        }
        let path = directory + "/" + name
        guard named != nil || access(path, F_OK) == 0 else { return nil }
        return .secretFile(path)
    }

    /// "TOKENVAULT_PASSPHRASE_FILE, TOKENVAULT_PASSPHRASE_COMMAND or TOKENVAULT_PASSPHRASE".
    static let sourceNames = Format.list(EnvironmentVariable.passphraseSources.map(\.name), "or")

    static let noSourceHint =
        "run tokenvault unlock on a terminal (the key is then cached), or set \(sourceNames) (docs/headless.md)"

    /// The hint for a wrong passphrase from a source.
    static let checkSourcesHint = "check \(sourceNames)"

    /// The variable the passphrase comes from; nil: the terminal.
    public var sourceName: String? { given?.variable.name }

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
    public func obtain(creating: Bool, vault: String? = nil) throws -> SecureBytes {
        if let given = try fromEnvironment() { return given }
        let tty = try terminal(creating: creating)
        guard creating else {
            return try nonEmpty(tty.readSecret(prompt: "Vault passphrase: ")[...], source: "the passphrase")
        }
        if let vault { tty.say(Self.newVaultLine(vault)) }
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

    /// The line before the first prompt for a new vault's passphrase: which
    /// file it protects, and what opens it when nobody is there to type it.
    static func newVaultLine(_ vault: String) -> String {
        "tokenvault keeps credentials encrypted in \(vault), with the passphrase you choose now; "
            + "unattended use (cron, services, the agent once key_ttl has passed) needs the TPM (tokenvault init --key tpm), "
            + "a systemd credential, or tokenvault unlock (docs/headless.md)\n"
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
    /// `preface` is said on the terminal before the first prompt; `noSource`
    /// is the error when there is neither a source nor a terminal.
    public func unlock<T>(
        _ what: String, preface: String? = nil, noSource: TokenVaultError? = nil, check: (SecureBytes) throws -> T?
    ) throws -> T {
        if let given = try fromEnvironment() {
            if let opened = try check(given) { return opened }
            throw TokenVaultError.permission("wrong passphrase for \(what)", hint: PassphraseSource.checkSourcesHint)
        }
        if let noSource, terminalPath.flatMap(TerminalInput.init(path:)) == nil { throw noSource }
        let tty = try terminal()
        if let preface { tty.say(preface) }
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
