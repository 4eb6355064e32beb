import Foundation
import TokenVaultKit

/// What every command needs, built once per run. The config file and the
/// backends are opened only when a command asks for them.
final class Context {
    let environment: [String: String]
    let clock: Clock
    private var loadedConfig: Config?
    private var openedStore: CredentialStore?

    init(environment: [String: String] = ProcessInfo.processInfo.environment, clock: Clock = SystemClock()) {
        self.environment = environment
        self.clock = clock
    }

    var config: Config {
        get throws {
            if let loadedConfig { return loadedConfig }
            let c = try Config.load(environment: environment)
            loadedConfig = c
            return c
        }
    }

    var providers: ProviderDirectory {
        get throws { ProviderDirectory(config: try config) }
    }

    /// Parses a SERVICE argument; the config is read only for a bare provider name.
    func serviceKey(_ raw: String) throws -> ServiceKey {
        try ServiceKey(parsing: raw) { name in
            (try? self.providers.service(of: name)) ?? ProviderPreset.named(name)?.service
        }
    }

    var backends: Backends { Backends(environment: environment) }

    var backendChoice: BackendChoice {
        get throws { try BackendChoice.resolve(environment: environment) { try self.config } }
    }

    /// The store the configured backend names.
    func store() throws -> CredentialStore {
        if let openedStore { return openedStore }
        let s = try backends.open(try backendChoice)
        openedStore = s
        return s
    }

    /// Prints what the auto backend noticed on the way.
    func flushWarnings() {
        guard let auto = openedStore as? AutoStore else { return }
        for w in Set(auto.warnings).sorted() { Output.warning(w) }
    }

    /// The stored credential, or exit 3 saying what could not be checked.
    func locate(_ id: CredentialID) throws -> StoredCredential {
        let store = try store()
        guard let found = try store.locate(id) else {
            throw TokenVaultError.notFound(service: id.service.description, account: id.account, unchecked: store.uncheckedNote)
        }
        return found
    }

    /// `min_valid`: the option, else the config, else 60 seconds.
    func minValid(_ option: Int?) throws -> Int {
        if let option { return option }
        return try config.minValid ?? 60
    }

    /// Resolves an OAuth 2.0 provider from the presets and the config.
    func oauth2Provider(_ name: String) throws -> OAuth2Provider {
        try OAuth2Provider.resolve(name, config: try config, configPath: Config.path(environment: environment))
    }

    /// Resolves an OAuth 1.0a provider from the presets and the config.
    func oauth1Provider(_ name: String) throws -> OAuth1Provider {
        try OAuth1Provider.resolve(name, config: try config, configPath: Config.path(environment: environment))
    }

    func refresher() throws -> Refresher {
        let timeout = try config.timeout ?? 30
        return Refresher(
            store: try store(), transport: CurlTransport(timeout: timeout), clock: clock,
            provider: { try self.oauth2Provider($0) },
            lockDirectory: PrivateDirectory.runtime(environment: environment),
            warn: { Output.warning($0) })
    }

    /// The credential a command hands out: refreshed first when it has fewer than
    /// `min_valid` seconds left and can be; exit 4 when expired for good, 3 when missing.
    /// The config is read only for a credential that expires.
    func usable(_ id: CredentialID, minValid option: Int?, refresh: Bool = true, force: Bool = false) throws -> Credential {
        var found = try store().load(id)
        if refresh, let first = found, first.expiresAt != nil || force {
            found = try refresher().usable(id, minValid: Int64(try minValid(option)), force: force, loaded: first)
        }
        flushWarnings()
        guard let c = found else {
            throw TokenVaultError.notFound(service: id.service.description, account: id.account, unchecked: try store().uncheckedNote)
        }
        try c.requireUsable(at: clock.now)
        return c
    }
}
