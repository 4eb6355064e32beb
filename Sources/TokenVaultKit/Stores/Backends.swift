import Dispatch
import FoundationEssentials
import Glibc

/// `backend = auto | secret-service | file | etcd | none` (config, or `TOKENVAULT_BACKEND`).
public enum BackendChoice: String, Sendable, CaseIterable {
    case auto
    case secretService = "secret-service"
    case file
    case etcd
    /// Keeps nothing past the process (`ProcessOnlyStore`).
    case none

    /// The store a run of this backend reads first: auto is the Secret
    /// Service where there is a session bus, else the file vault. The one
    /// place that says so: the store the run opens (`Backends.open`) and what
    /// is readied ahead for it (`Plan.startHeadStart`) both ask here.
    public func readsFirst(missingBus: String?) -> BackendChoice {
        self == .auto ? (missingBus == nil ? .secretService : .file) : self
    }

    /// "auto, secret-service, file, etcd or none", for messages.
    public static var spelled: String { Format.list(allCases.map(\.rawValue), "or") }
}

/// Builds the stores from the settings, as the run's plan decided (the bus,
/// and what it started ahead).
public struct Backends {
    public var settings: Settings
    public let plan: Plan
    public var keyCache: KeyCache
    /// False: never prompt on the terminal (shell completion).
    public var interactive = true
    /// The config file, read only when a backend needs it (etcd).
    public var config: () throws -> Config = { Config() }
    /// What the agent keeps across the stores it opens (nil in a command).
    public var caches: AgentCaches?

    /// `key_ttl`, resolved once (an invalid one is the error of the store that needs it).
    private let keyTTL: Result<Int, Error>

    /// The kernel keyring caches the vault key unless the key TTL is 0 (or
    /// invalid: the store that needs it reports that).
    public init(settings: Settings, plan: Plan? = nil, keyCache: KeyCache? = nil) {
        self.settings = settings
        self.plan = plan ?? Plan(settings: settings)
        let keyTTL = Result { try settings.keyTTL }
        self.keyTTL = keyTTL
        self.keyCache = keyCache ?? (((try? keyTTL.get()) ?? 0) > 0 ? KernelKeyring() : NoKeyCache())
    }

    public func fileVault() throws -> FileStore {
        let store = FileStore(
            path: settings.vaultPath,
            passphrase: PassphraseSource(settings: settings, terminalPath: interactive ? "/dev/tty" : nil),
            keyCache: keyCache, keyTTL: try keyTTL.get(),
            newVaultParams: try settings.kdfProfile, tpmTCTI: settings[.tpmTCTI], headStart: plan.vaultHeadStart,
            decoded: caches?.decodedRecords, derivation: settings.keyDerivation)
        return store
    }

    public func etcdStore() throws -> EtcdStore {
        let store = EtcdStore(
            settings: try EtcdSettings.resolve(settings, config: try config()),
            passphrase: PassphraseSource(settings: settings, terminalPath: interactive ? "/dev/tty" : nil),
            keyCache: keyCache, keyTTL: try keyTTL.get(),
            newParams: try settings.kdfProfile, clients: caches?.etcdClients, decoded: caches?.decodedRecords,
            derivation: settings.keyDerivation)
        return store
    }

    func secretService() throws -> SecretServiceStore {
        SecretServiceStore(
            timeout: try settings.dbusTimeout, unlock: try .init(settings: settings), bus: settings.sessionBusShown,
            headStart: plan.secretServiceHeadStart, itemPaths: caches?.itemPaths, decoded: caches?.decodedRecords)
    }

    /// The Secret Service to read another application's item from (`import
    /// gh`), whatever backend stores tokenvault's own; 69 without a session bus.
    public func otherApplications() throws -> SecretServiceStore {
        if let missing = plan.missingBus {
            throw TokenVaultError.backendUnavailable("the Secret Service is not available: \(missing)")
        }
        return try secretService()
    }

    public func open(_ choice: BackendChoice) throws -> CredentialStore {
        switch choice {
        case .etcd: return try etcdStore()
        case .file: return try fileVault()
        case .none: return ProcessOnlyStore()
        case .secretService:
            if let missing = plan.missingBus {
                throw TokenVaultError.backendUnavailable(
                    "the Secret Service is not available: \(missing)",
                    hint: "start a Secret Service (e.g. gnome-keyring) or use \(EnvironmentVariable.backend.name)=file")
            }
            return try secretService()
        case .auto:
            // No separate probe: the first real call is the probe (a probe costs a
            // second D-Bus session), and its failure is what auto falls back on.
            if choice.readsFirst(missingBus: plan.missingBus) == .file, let missing = plan.missingBus {
                let store = AutoStore(
                    secretService: nil, unavailableReason: missing, quiet: true, file: try fileVault())
                let settings = settings
                // `TOKENVAULT_BACKEND=auto` asks for auto on every run: nothing to record.
                if (try? settings.backendOverride) == nil {
                    store.recordFileChoice = {
                        try Config.setBackend(BackendChoice.file.rawValue, settings)
                        return settings.configPath
                    }
                }
                return store
            }
            return AutoStore(
                secretService: try secretService(), unavailableReason: nil, quiet: false, file: try fileVault(),
                skipsLockedFile: !settings.clientCanUnlock)
        }
    }
}
