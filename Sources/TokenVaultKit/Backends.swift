import Foundation

/// `backend = auto | secret-service | file` (config, or `TOKENVAULT_BACKEND`).
public enum BackendChoice: String, Sendable, CaseIterable {
    case auto
    case secretService = "secret-service"
    case file

    /// `TOKENVAULT_BACKEND` wins over the config file; the config is read only when needed.
    public static func resolve(environment env: [String: String], config: () throws -> Config) throws -> BackendChoice {
        if let v = env["TOKENVAULT_BACKEND"], !v.isEmpty {
            guard let c = BackendChoice(rawValue: v) else {
                throw TokenVaultError.config("TOKENVAULT_BACKEND must be auto, secret-service or file, not \(ServiceKey.quoted(v))")
            }
            return c
        }
        return try config().backend.flatMap(BackendChoice.init(rawValue:)) ?? .auto
    }
}

/// Builds the stores from the environment.
public struct Backends {
    public var environment: [String: String]
    public var keyCache: KeyCache
    /// False: never prompt on the terminal (shell completion).
    public var interactive = true

    public init(environment: [String: String], keyCache: KeyCache? = nil) {
        self.environment = environment
        self.keyCache = keyCache ?? (Backends.keyTTL(environment) > 0 ? KernelKeyring() : NoKeyCache())
    }

    /// Seconds to wait for D-Bus (`TOKENVAULT_DBUS_TIMEOUT`, default 3).
    public var dbusTimeout: Double {
        environment["TOKENVAULT_DBUS_TIMEOUT"].flatMap(Double.init).map { min(max($0, 0.1), 60) } ?? 3
    }

    static func keyTTL(_ env: [String: String]) -> Int {
        env["TOKENVAULT_KEY_TTL"].flatMap { Int($0) }.map { max($0, 0) } ?? 900
    }

    public func fileVault() throws -> FileVault {
        FileVault(
            path: FileVault.defaultPath(environment: environment),
            passphrase: PassphraseSource(environment: environment, terminalPath: interactive ? "/dev/tty" : nil),
            keyCache: keyCache, keyTTL: Backends.keyTTL(environment),
            newVaultParams: try KDFParams.profile(environment["TOKENVAULT_KDF_PROFILE"]))
    }

    public func open(_ choice: BackendChoice) throws -> CredentialStore {
        switch choice {
        case .file: return try fileVault()
        case .secretService:
            if let missing = SecretServiceStore.missingBus(environment: environment) {
                throw TokenVaultError.backendUnavailable("the Secret Service is not available: \(missing)",
                                                         hint: "start a Secret Service (e.g. gnome-keyring) or use TOKENVAULT_BACKEND=file")
            }
            return SecretServiceStore(timeout: dbusTimeout)
        case .auto:
            // No separate probe: the first real call is the probe (a probe costs a
            // second D-Bus session), and its failure is what auto falls back on.
            if let missing = SecretServiceStore.missingBus(environment: environment) {
                return AutoStore(secretService: nil, unavailableReason: missing, quiet: true, file: try fileVault())
            }
            return AutoStore(secretService: SecretServiceStore(timeout: dbusTimeout), unavailableReason: nil, quiet: false, file: try fileVault())
        }
    }
}

/// `auto`: the Secret Service when it answers, else the file. Lookups look in
/// both, so a credential stored while the Secret Service was away is still
/// found when it is back; where both hold one, the newer wins.
public final class AutoStore: CredentialStore {
    public let name = "auto"
    private var secretService: CredentialStore?
    let unavailableReason: String?
    let file: FileVault
    /// Things the user should know that do not stop the command.
    public private(set) var warnings: [String] = []
    private var unchecked: [String] = []

    /// Where there is no session bus at all (a server), the file is simply the
    /// backend: no warnings, though a failed lookup still says what it did not check.
    let quiet: Bool

    init(secretService: CredentialStore?, unavailableReason: String?, quiet: Bool, file: FileVault) {
        self.secretService = secretService
        self.unavailableReason = unavailableReason
        self.quiet = quiet
        self.file = file
        if let unavailableReason { unchecked.append("the Secret Service was not checked (\(unavailableReason))") }
    }

    /// A Secret Service that failed once is not waited on again in this run.
    private func giveUp(on error: TokenVaultError) {
        if case .backendUnavailable = error { secretService = nil }
    }

    private func warnUnchecked() {
        if let unavailableReason, !quiet { warnings.append("the Secret Service was not checked (\(unavailableReason))") }
    }

    public var uncheckedNote: String? { unchecked.isEmpty ? nil : unchecked.joined(separator: "; ") }

    /// Where new credentials go.
    public var primary: CredentialStore { secretService ?? file }

    public func load(_ id: CredentialID) throws -> Credential? { try locate(id)?.credential }

    public func locate(_ id: CredentialID) throws -> StoredCredential? {
        var found: [StoredCredential] = []
        if let secretService {
            do {
                if let c = try secretService.locate(id) { found.append(c) }
            } catch let e as TokenVaultError {
                giveUp(on: e)
                unchecked.append("the Secret Service was not checked (\(e.localizedDescription))")
            }
        }
        // The file is read when it may hold the only copy, or when that costs no prompt.
        if file.exists, found.isEmpty || file.canOpenQuietly {
            do {
                if let c = try file.locate(id) { found.append(c) }
            } catch {
                if found.isEmpty { throw error }
            }
        }
        return found.max { $0.credential.updatedAt < $1.credential.updatedAt }
    }

    public func save(_ credential: Credential) throws {
        if let secretService {
            do {
                try secretService.save(credential)
                return
            } catch let e as TokenVaultError {
                giveUp(on: e)
                warnings.append("\(e.localizedDescription); stored in the file vault instead")
            }
        }
        try file.save(credential)
    }

    @discardableResult
    public func delete(_ id: CredentialID) throws -> Bool {
        var removed = false
        if let secretService {
            do {
                removed = try secretService.delete(id)
            } catch let e as TokenVaultError {
                giveUp(on: e)
                warnings.append("the Secret Service was not checked (\(e.localizedDescription))")
            }
        }
        if file.exists { removed = try file.delete(id) || removed }
        warnUnchecked()
        return removed
    }

    public func list() throws -> [Credential] { try listLocated().map(\.credential) }

    public func listIDs() throws -> [CredentialID] {
        var ids = Set<CredentialID>()
        if let secretService { ids.formUnion((try? secretService.listIDs()) ?? []) }
        if file.exists { ids.formUnion(try file.listIDs()) }
        return ids.sorted()
    }

    public func listLocated() throws -> [StoredCredential] {
        var all: [CredentialID: StoredCredential] = [:]
        func add(_ items: [StoredCredential]) {
            for s in items where (all[s.credential.id]?.credential.updatedAt ?? .min) < s.credential.updatedAt {
                all[s.credential.id] = s
            }
        }
        if let secretService {
            do {
                add(try secretService.listLocated())
            } catch let e as TokenVaultError {
                giveUp(on: e)
                warnings.append("the Secret Service was not checked (\(e.localizedDescription))")
            }
        }
        warnUnchecked()
        if file.exists { add(try file.listLocated()) }
        return all.values.sorted { $0.credential.id < $1.credential.id }
    }
}
