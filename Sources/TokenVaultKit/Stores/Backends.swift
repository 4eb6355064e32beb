import Dispatch
import FoundationEssentials
import Glibc

/// `backend = auto | secret-service | file` (config, or `TOKENVAULT_BACKEND`).
public enum BackendChoice: String, Sendable, CaseIterable {
    case auto
    case secretService = "secret-service"
    case file
    case etcd

    /// "auto, secret-service, file or etcd", for messages.
    public static var spelled: String {
        let names = allCases.map(\.rawValue)
        return names.dropLast().joined(separator: ", ") + " or " + names.last!
    }

    /// `TOKENVAULT_BACKEND` wins over the config file; the config is read only when needed.
    public static func resolve(environment env: [String: String], config: () throws -> Config) throws -> BackendChoice {
        if let v = env["TOKENVAULT_BACKEND"], !v.isEmpty {
            guard let c = BackendChoice(rawValue: v) else {
                throw TokenVaultError.config("TOKENVAULT_BACKEND must be \(spelled), not \(ServiceKey.quoted(v))")
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
    /// The config file, read only when a backend needs it (etcd).
    public var config: () throws -> Config = { Config() }

    public init(environment: [String: String], keyCache: KeyCache? = nil) {
        self.environment = environment
        self.keyCache = keyCache ?? (Backends.keyTTL(environment) > 0 ? KernelKeyring() : NoKeyCache())
    }

    /// Seconds to wait for D-Bus (`TOKENVAULT_DBUS_TIMEOUT`, default 3).
    public var dbusTimeout: Double {
        environment["TOKENVAULT_DBUS_TIMEOUT"].flatMap(Double.init).map { min(max($0, 0.1), 60) } ?? 3
    }

    public static func keyTTL(_ env: [String: String]) -> Int {
        env["TOKENVAULT_KEY_TTL"].flatMap { Int($0) }.map { max($0, 0) } ?? 900
    }

    public func fileVault() throws -> FileVault {
        FileVault(
            path: FileVault.defaultPath(environment: environment),
            passphrase: PassphraseSource(environment: environment, terminalPath: interactive ? "/dev/tty" : nil),
            keyCache: keyCache, keyTTL: Backends.keyTTL(environment),
            newVaultParams: try KDFParams.profile(environment["TOKENVAULT_KDF_PROFILE"]))
    }

    public func etcdStore() throws -> EtcdStore {
        EtcdStore(
            settings: try EtcdSettings.resolve(environment: environment, config: try config(), configPath: Config.path(environment: environment)),
            passphrase: PassphraseSource(environment: environment, terminalPath: interactive ? "/dev/tty" : nil),
            keyCache: keyCache, keyTTL: Backends.keyTTL(environment),
            newParams: try KDFParams.profile(environment["TOKENVAULT_KDF_PROFILE"]))
    }

    public func open(_ choice: BackendChoice) throws -> CredentialStore {
        switch choice {
        case .etcd: return try etcdStore()
        case .file: return try fileVault()
        case .secretService:
            if let missing = SecretServiceStore.missingBus(environment: environment) {
                throw TokenVaultError.backendUnavailable("the Secret Service is not available: \(missing)",
                                                         hint: "start a Secret Service (e.g. gnome-keyring) or use TOKENVAULT_BACKEND=file")
            }
            return SecretServiceStore(timeout: dbusTimeout, unlock: .init(environment: environment))
        case .auto:
            // No separate probe: the first real call is the probe (a probe costs a
            // second D-Bus session), and its failure is what auto falls back on.
            if let missing = SecretServiceStore.missingBus(environment: environment) {
                return AutoStore(secretService: nil, unavailableReason: missing, quiet: true, file: try fileVault())
            }
            return AutoStore(secretService: SecretServiceStore(timeout: dbusTimeout, unlock: .init(environment: environment)), unavailableReason: nil, quiet: false, file: try fileVault())
        }
    }
}
