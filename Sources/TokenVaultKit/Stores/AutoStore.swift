import Dispatch
import FoundationEssentials
import Glibc

/// `auto`: the Secret Service when it answers, else the file. Lookups look in
/// both, so a credential stored while the Secret Service was away is still
/// found when it is back; where both hold one, the newer wins.
public final class AutoStore: CredentialStore {
    public let name = "auto"
    private var secretService: CredentialStore?
    let unavailableReason: String?
    let file: FileStore
    /// The file vault's directory: the one store here others may share.
    public var sharedLockDirectory: String? { file.sharedLockDirectory }
    /// Things the user should know that do not stop the command.
    public var warnings: [String] { own + file.warnings }
    private var own: [String] = []
    private var unchecked: [String] = []
    /// The fix for the first backend not checked (`uncheckedFix`).
    private var fixes: [String] = []

    /// What reaches a Secret Service that could not be asked.
    static let keyringFix =
        "if it is stored in a keyring, run this where that keyring answers (with \(EnvironmentVariable.dbusSessionBusAddress.name) set to its session bus); only if it is not: a login here stores a new one in the file vault"

    /// Where there is no session bus at all (a server), the file is simply the
    /// backend: no warnings, though a failed lookup still says what it did not check.
    let quiet: Bool

    /// Whether a locked file vault nobody can open here is looked past (false
    /// for the agent's run of a client that can open it: the client runs it).
    let skipsLockedFile: Bool

    /// Where there is no Secret Service at all, records `backend = "file"`
    /// once the first store created the file vault, and returns the config
    /// file's path (docs/headless.md, "Decided once").
    var recordFileChoice: (() throws -> String)?

    init(
        secretService: CredentialStore?, unavailableReason: String?, quiet: Bool, file: FileStore,
        skipsLockedFile: Bool = true
    ) {
        self.skipsLockedFile = skipsLockedFile
        self.secretService = secretService
        self.unavailableReason = unavailableReason
        self.quiet = quiet
        self.file = file
        if let unavailableReason {
            notChecked("the Secret Service was not checked (\(unavailableReason))", fix: Self.keyringFix)
        }
    }

    private func notChecked(_ note: String, fix: String) {
        if !unchecked.contains(note) { unchecked.append(note) }
        if !fixes.contains(fix) { fixes.append(fix) }
    }

    /// A Secret Service that failed once is not waited on again in this run.
    /// A locked collection (77) is not a failure to work around: the file is
    /// never used in its place, so nothing lands there behind the user's back.
    /// Nor is a Secret Service that is gone from a session bus that is there
    /// (its program quit): it is its own error (69), kept in `gone` for the
    /// command's end (docs/config.md, "A provider that quit").
    private func giveUp(on error: TokenVaultError) throws {
        if case .permission = error { throw error }
        if case .backendUnavailable = error {
            secretService = nil
            // A bus that cannot be reached is no bus: the file vault is auto's answer there.
            if error.errorText.contains(SecretServiceStore.notRunning) { gone = gone ?? Self.gone(error) }
        }
    }

    /// No program owns the Secret Service's name on a bus that answers; nil: one does, or it was not asked.
    private var gone: TokenVaultError?

    /// The error of a Secret Service that quit (or never started) on a bus that answers.
    static func gone(_ error: TokenVaultError) -> TokenVaultError {
        let installed = SecretServiceProvider.installed.map(\.displayName)
        let which =
            installed.count == 1
            ? "\(installed[0]), the Secret Service installed here"
            : installed.isEmpty ? "its program" : Format.list(installed, "or") + " (installed here)"
        return .backendUnavailable(
            error.errorText,
            hint:
                "start the program that keeps your credentials — \(which) — and try again; on a machine without one: tokenvault init (the file vault, recorded as the backend)"
        )
    }

    private func warnUnchecked() {
        if let unavailableReason, !quiet {
            own.append("the Secret Service was not checked (\(unavailableReason))")
        }
    }

    public var uncheckedNote: String? { unchecked.isEmpty ? nil : unchecked.joined(separator: "; ") }
    public var uncheckedFix: String? { fixes.first }

    /// What a command says when it looked past the locked file vault.
    private var lockedNote: String {
        "the file vault \(file.path) is locked (no passphrase source, no terminal), so what it holds was not looked at; tokenvault unlock opens it"
    }

    /// With the Secret Service answering, a file vault nobody can open here
    /// (locked: no passphrase source, no terminal) does not stop the command:
    /// it answers from the Secret Service and says what was not looked at
    /// (docs/config.md). `body` is run; true when the file vault was locked.
    private func fileUnlessLocked(_ body: () throws -> Void) throws -> Bool {
        do {
            try body()
            return false
        } catch TokenVaultError.permission(let message, _)
            where secretService != nil && skipsLockedFile
            && message == PassphraseSource.lockedHere
        {
            let note = lockedNote
            notChecked(
                note,
                fix:
                    "unlock the file vault first: tokenvault unlock (it asks for the passphrase on a terminal), then try again"
            )
            if !own.contains(note) { own.append(note) }
            return true
        }
    }

    /// Only the locked file vault may hold `id`: that is the answer (77), not
    /// "not stored"; the note that it was locked is in the error alone.
    private func lockedMayHold(_ id: CredentialID) -> TokenVaultError {
        own.removeAll { $0 == lockedNote }
        return .permission(
            "\(id.service) is not in the Secret Service, and the file vault \(file.path), which may hold it, is locked (no passphrase source, no terminal)",
            hint:
                "unlock the file vault first: tokenvault unlock (it asks for the passphrase on a terminal), then try again"
        )
    }

    /// Where new credentials go.
    public var primary: CredentialStore { secretService ?? file }

    public var writesTo: String { primary.name }

    public func load(_ id: CredentialID) throws -> Credential? { try locate(id)?.credential }

    public func locate(_ id: CredentialID) throws -> StoredCredential? {
        var found: [StoredCredential] = []
        if let secretService {
            do {
                if let c = try secretService.locate(id) { found.append(c) }
            } catch let e as TokenVaultError {
                try giveUp(on: e)
                notChecked("the Secret Service was not checked (\(e.errorText))", fix: Self.keyringFix)
            }
        }
        // The file is read when it may hold the only copy, or when that costs no prompt.
        if file.exists, found.isEmpty || file.canOpenQuietly {
            var locked = false
            do {
                locked = try fileUnlessLocked { if let c = try file.locate(id) { found.append(c) } }
            } catch {
                if found.isEmpty { throw error }
            }
            // Only the locked vault may hold it: that is the answer, not "not stored".
            if locked, found.isEmpty { throw lockedMayHold(id) }
        }
        // A copy in the file vault may be older than the one the missing provider keeps.
        if let gone { throw gone }
        return found.max { $1.credential.isNewer(than: $0.credential) }
    }

    public func save(_ credential: Credential) throws {
        if let secretService {
            do {
                try secretService.save(credential)
                return
            } catch let e as TokenVaultError {
                try giveUp(on: e)
                // A provider that quit: never the file vault behind the user's back.
                if let gone { throw gone }
                own.append("\(e.errorText); stored in the file vault instead")
            }
        }
        if let gone { throw gone }
        let creating = !file.exists
        try file.save(credential)
        if creating, secretService == nil, let recordFileChoice, let unavailableReason {
            do {
                let config = try recordFileChoice()
                own.append(
                    "no Secret Service here (\(unavailableReason)): created the file vault \(file.path) and recorded backend = \"file\" in \(config), so a keyring that appears later does not take over; to use one: tokenvault migrate --to secret-service"
                )
            } catch {
                own.append(
                    "created the file vault \(file.path), but backend = \"file\" could not be recorded (\((error as? TokenVaultError)?.errorText ?? "\(error)")): set it in the config so that a keyring that appears later does not take over"
                )
            }
        }
    }

    @discardableResult
    public func delete(_ id: CredentialID) throws -> Bool {
        var removed = false
        if let secretService {
            do {
                removed = try secretService.delete(id)
            } catch let e as TokenVaultError {
                try giveUp(on: e)
                own.append("the Secret Service was not checked (\(e.errorText))")
            }
        }
        if file.exists, try fileUnlessLocked({ removed = try file.delete(id) || removed }), !removed {
            throw lockedMayHold(id)
        }
        if !removed, let gone { throw gone }
        warnUnchecked()
        return removed
    }

    public func list() throws -> [Credential] { try listLocated().map(\.credential) }

    public func foreignNote(_ id: CredentialID) -> String? { secretService?.foreignNote(id) }

    public func prepareToWrite() throws {
        if secretService != nil { return }
        try file.prepareToWrite()
    }

    public func listIDs() throws -> [CredentialID] {
        var ids = Set<CredentialID>()
        if let secretService { ids.formUnion((try? secretService.listIDs()) ?? []) }
        if file.exists { _ = try fileUnlessLocked { ids.formUnion(try file.listIDs()) } }
        return ids.sorted()
    }

    public func listLocated() throws -> [StoredCredential] {
        var all: [CredentialID: StoredCredential] = [:]
        func add(_ items: [StoredCredential]) {
            for s in items where all[s.credential.id].map({ s.credential.isNewer(than: $0.credential) }) ?? true {
                all[s.credential.id] = s
            }
        }
        if let secretService {
            do {
                add(try secretService.listLocated())
            } catch let e as TokenVaultError {
                try giveUp(on: e)
                own.append("the Secret Service was not checked (\(e.errorText))")
            }
        }
        // A list says what it could not look at, even where no bus is the rule (a server).
        if let unavailableReason {
            let note = "the Secret Service was not checked (\(unavailableReason)), so what it may hold is not listed"
            if !own.contains(note) { own.append(note) }
        }
        if let gone { throw gone }
        if file.exists { _ = try fileUnlessLocked { add(try file.listLocated()) } }
        return all.values.sorted { $0.credential.id < $1.credential.id }
    }
}
