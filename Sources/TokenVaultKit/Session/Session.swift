import Dispatch
import FoundationEssentials
import Glibc

/// What every command needs, built once per run from the settings of a run
/// or of an agent's request (docs/design.md, "A run: its session and its
/// plan"). The config file and the backends are opened only when a command
/// asks for them; what the run decides once is its `plan`.
public final class Session {
    public let settings: Settings
    public let clock: Clock
    /// What this run decided once: agent, backend, bus, and its head start.
    public let plan: Plan
    /// Where what the run notices goes.
    public let notices: Notices
    /// Where the command's stdout and stderr go: its runner's (the entry
    /// point's, the agent's for a client, a test's); a session nobody
    /// prints from keeps its own.
    public let output: RunOutput
    /// The servers' latest DPoP nonces: this run's, or the agent's.
    public let nonces: DPoPNonces
    private var loadedConfig: Config?
    private var openedStore: CredentialStore?
    private var openedVault: CredentialVault?
    private var printedNotices: [String] = []
    /// False: never prompt on the terminal (kubectl said no one answers;
    /// in the agent, never).
    public var interactive: Bool {
        get { wantsPrompts && !isAgent && !settings.isCI }
        set { wantsPrompts = newValue }
    }
    private var wantsPrompts = true
    /// True in the agent itself: its commands never ask an agent.
    public var isAgent: Bool { plan.isAgent }

    /// In the agent (docs/agent.md): a session for a request it answers, or
    /// for its own renewals. It never asks an agent, never prompts, and
    /// reports each credential it hands out.
    public struct AgentRequest {
        let handedOut: (CredentialID, Credential, Session) -> Void
        /// The agent's: what it keeps across the stores it opens.
        let caches: AgentCaches

        public init(caches: AgentCaches, handedOut: @escaping (CredentialID, Credential, Session) -> Void) {
            self.caches = caches
            self.handedOut = handedOut
        }
    }
    private let agent: AgentRequest?

    /// A session of `settings`: the process's at the entry point, a client's
    /// in the agent; nothing else is read from the air. `plan`: what the
    /// entry point decided already (else decided as the run asks).
    public init(
        settings: Settings, notices: Notices, plan: Plan? = nil, agent: AgentRequest? = nil, output: RunOutput? = nil
    ) {
        self.settings = settings
        self.notices = notices
        self.output = output ?? .kept()
        self.nonces = agent?.caches.dpopNonces ?? DPoPNonces()
        self.agent = agent
        self.clock = settings.clock
        self.plan = plan ?? Plan(settings: settings, isAgent: agent != nil, configCache: agent?.caches.config)
    }

    /// Another session of the same settings and agent, with nothing loaded
    /// yet (the bridge takes a fresh one per request, so a config or a
    /// backend changed meanwhile is read again).
    public func fresh() -> Session {
        Session(
            settings: settings, notices: notices,
            plan: Plan(
                settings: settings, agentFinding: plan.agentFinding, isAgent: plan.isAgent,
                configCache: plan.configCache), agent: agent,
            output: output)
    }

    /// The config, loaded once; its warnings (a provider table with a
    /// mistake, which breaks only that provider) are printed when the command
    /// ends, unless the command's own error says the same.
    public var config: Config {
        get throws {
            if let loadedConfig { return loadedConfig }
            let c = try plan.loadConfig()
            loadedConfig = c
            notices.later(c.warnings)
            return c
        }
    }

    public var providers: ProviderDirectory {
        get throws { ProviderDirectory(config: try config) }
    }

    /// The checked `header` template of the provider `c` is tied to; nil
    /// without one, and for OAuth 1.0a (each request is signed).
    public func headerTemplate(of c: Credential) throws -> String? {
        guard c.type != .oauth1, let name = c.provider else { return nil }
        return try providers.headerTemplate(of: name)
    }

    /// Parses a SERVICE argument; the config is read only for a bare provider name.
    public func serviceKey(_ raw: String) throws -> ServiceKey {
        // A config file that cannot be read is reported (78), not taken for "no such provider".
        var configError: Error?
        let key = try ServiceKey(parsing: raw) { name in
            do {
                // A provider whose table has a mistake stands for no service: say what is wrong with it.
                if let broken = try self.config.brokenProviders[name] { throw broken }
                return try self.providers.service(of: name) ?? ProviderPreset.named(name)?.service
            } catch {
                configError = error
                return nil
            }
        }
        if let configError { throw configError }
        // A URL with a path names the resource stored for it or its longest
        // parent, else its host (docs/reference.md).
        if raw.contains("://"), let resource = try? ServiceKey(resource: raw), resource.path != nil {
            let onHost = try vault().listIDs().map(\.service).filter { $0.host == key.host && $0.path != nil }
            return resource.closest(among: onHost)
        }
        return key
    }

    public var backends: Backends {
        var b = Backends(settings: settings, plan: plan)
        b.interactive = interactive
        b.config = { try self.config }
        b.caches = agent?.caches
        return b
    }

    /// The backend and who chose it.
    public var backend: (choice: BackendChoice, chosenBy: Settings.ChosenBy) {
        get throws { try plan.backend { try self.config } }
    }

    public var backendChoice: BackendChoice {
        get throws { try backend.choice }
    }

    /// The store the configured backend names.
    public func store() throws -> CredentialStore {
        if let openedStore { return openedStore }
        let s = try backends.open(try backendChoice)
        openedStore = s
        return s
    }

    /// Every read and write of credentials goes through this (docs/reference.md).
    public func vault() throws -> CredentialVault {
        if let openedVault { return openedVault }
        let v = CredentialVault(store: try store(), runtimeDirectory: settings.runtimeDirectory)
        openedVault = v
        return v
    }

    /// Prints what the store and the vault noticed on the way, each once:
    /// called when the command ends, and before a result that should follow them.
    public func flushWarnings() {
        if let openedStore {
            for w in Set(openedStore.warnings).sorted() where !printedNotices.contains(w) {
                printedNotices.append(w)
                notices.warning(w)
            }
        }
        if let openedVault {
            for n in openedVault.notices where !printedNotices.contains(n) {
                printedNotices.append(n)
                notices.notice(n)
            }
        }
    }

    /// The stored credential, or exit 3 saying what could not be checked.
    public func locate(_ id: CredentialID) throws -> StoredCredential {
        guard let found = try vault().locate(id) else { throw try notFound(id) }
        return found
    }

    /// Exit 3, with the next step: a login for a provider's service, the
    /// accounts that exist, or `set` (`NextStep.missing`).
    public func notFound(_ id: CredentialID) throws -> TokenVaultError { try notFound(id, deleting: false) }

    public func notFound(_ id: CredentialID, deleting: Bool) throws -> TokenVaultError {
        let stored = (try? vault().listIDs()) ?? []
        let directory = (try? providers) ?? ProviderDirectory(config: Config())
        let next = NextStep.missing(
            id, stored: stored, owners: directory.owners(of: id.service), providers: directory.names,
            deleting: deleting)
        // What was not looked at comes first: it may hold the credential (never a second login for it).
        // Said in the error, it is not said again as a warning.
        let unchecked = try store().uncheckedNote
        if let unchecked {
            for w in try store().warnings where unchecked.contains(w) && !printedNotices.contains(w) {
                printedNotices.append(w)
            }
        }
        return .notFound(
            service: id.service.description, account: id.account, unchecked: unchecked,
            hint: try store().uncheckedFix.map { "\($0) (\(next))" } ?? next)
    }

    /// `min_valid`: the option, else the config, else 60 seconds.
    public func minValid(_ option: Int?) throws -> Int64 {
        if let option { return Int64(option) }
        return try config.minValidSeconds
    }

    /// Resolves an OAuth 2.0 provider from the presets and the config; an
    /// `issuer` is discovered through the on-disk cache (docs/providers.md).
    /// A resource logged in to by its URL gets its client here: the provider
    /// configured for its issuer, else the registration kept in the backend.
    public func oauth2Provider(_ name: String) throws -> OAuth2Provider {
        var c = try config
        var registered = false
        if let table = c.providers[name], c.discoveredProviders.contains(name) {
            c.providers[name] = try ResourceClient.filled(table, config: c) { issuer, clientID in
                registered = true
                return try clientID.map { try self.vault().registration(for: issuer, clientID: $0) }
                    ?? self.vault().registrations(for: issuer).first
            }
        }
        var p = try OAuth2Provider.resolve(name, config: c, configPath: settings.configPath) { issuer, provider in
            try self.discovery().endpoints(issuer: issuer, provider: provider)
        }
        p.registeredClient = registered
        if c.discoveredProviders.contains(name) {
            // Its client from a provider of config.toml: that table is where a refused client is fixed.
            if !registered, let issuer = c.providers[name]?.issuer, let resource = c.providers[name]?.resource,
                let (own, _) = ResourceClient.configured(issuer: issuer, resource: resource, config: c)
            {
                p.clientTable = own
            } else {
                p.configPath = settings.discoveredProvidersPath
            }
        }
        return p
    }

    public func discovery() throws -> Discovery {
        Discovery(
            cacheDirectory: Discovery.defaultDirectory(settings), transport: try transport(), now: clock.now,
            warn: { [notices] in notices.later([$0]) })
    }

    /// The transport of this run's requests: libcurl with its proxies; for
    /// a confined client of the agent, one that sends nothing (docs/security.md).
    func transport() throws -> HTTPTransport {
        if let confined = settings.child.confined { return RefusedTransport(confinement: confined) }
        let curl = CurlTransport(timeout: try httpTimeout, proxies: proxies)
        // In the agent: `lock` and `agent stop` stop what has not been sent (docs/agent.md, "Locked").
        if let gate = settings.child.gate { return GatedTransport(inner: curl, gate: gate) }
        return curl
    }

    /// A provider's grant from its table alone (the hot path of `get`).
    public func grant(of name: String) -> OAuth2Provider.Grant? { (try? providers)?.grant(of: name) }

    /// A provider added for this run only (`login --issuer` or `login URL`
    /// before it is kept); `kept`: it stands for a table of providers.toml.
    public func addProvider(_ name: String, _ table: ProviderConfig, kept: Bool = false) throws {
        var c = try config
        c.providers[name] = table
        if kept { c.discoveredProviders.insert(name) }
        loadedConfig = c
    }

    /// Resolves an OAuth 1.0a provider from the presets and the config.
    public func oauth1Provider(_ name: String) throws -> OAuth1Provider {
        try OAuth1Provider.resolve(name, config: try config, configPath: settings.configPath)
    }

    /// The proxies this run's requests go through (its settings': for the
    /// agent, its client's).
    public var proxies: ProxySettings { ProxySettings(settings: settings) }

    public var httpTimeout: Int {
        get throws { try config.httpTimeout }
    }

    public func refresher() throws -> Refresher {
        var r = Refresher(
            vault: try vault(), transport: try transport(), clock: clock, providers: self, warn: notices.warning)
        r.nonces = nonces
        // A confined client's refused renewal is no event: the client renews it itself.
        if settings.child.confined == nil {
            r.events = { event, id, reason in self.events.emit(event, id, reason: reason) }
        }
        return r
    }

    /// Where events go: the `[hooks]` commands and a desktop notification (docs/agent.md).
    public var events: EventSink {
        EventSink(settings: settings, hooks: (try? config)?.hooks, runtimeDirectory: settings.runtimeDirectory)
    }

    /// After an endpoint of a discovered provider failed on the network, its
    /// document is fetched again by the next run (it may have moved).
    public func forgetDiscovery(after error: Error, provider name: String?) {
        guard let error = error as? TokenVaultError, case .temporary = error, let name,
            let issuer = (try? providers)?.table(name)?.issuer
        else { return }
        try? discovery().forget(issuer: issuer)
    }

    /// The state of a credential now (docs/reference.md), for `status` and `list`.
    public func status(of c: Credential) -> CredentialStatus {
        CredentialStatus(
            of: c, now: clock.now, minValid: (try? minValid(nil)) ?? 60,
            grant: { self.grant(of: $0) })
    }

    /// The credential policy (`CredentialAccess`) on this command's vault,
    /// for this run; `minValid` is the option, else the config's.
    public func access(minValid option: Int?) throws -> CredentialAccess {
        CredentialAccess(vault: try vault(), clock: clock, run: self, minValid: option)
    }

    /// The credential whose access token a command hands out
    /// (`CredentialAccess.usable`): from the agent when one answers.
    public func usable(
        _ id: CredentialID, minValid option: Int?, refresh: Bool = true, force: Bool = false
    ) throws -> Credential {
        if let c = try fromAgent("usable", id, minValid: option, refresh: refresh, force: force) { return c }
        let c = try access(minValid: option).usable(id, refresh: refresh, force: force)
        agent?.handedOut(id, c, self)
        return c
    }

    /// The record stored under `id` as it is (no renewal), or nil: through the
    /// agent when one answers, else from the backend.
    public func load(_ id: CredentialID) throws -> Credential? {
        do {
            if let c = try fromAgent("stored", id, minValid: nil, refresh: false, force: false) { return c }
        } catch TokenVaultError.notFound {
            return nil
        }
        return try vault().load(id)
    }

    /// The agent's answer, when one runs for this scope (docs/agent.md);
    /// nil: the command goes to the backend itself.
    private func fromAgent(
        _ op: String, _ id: CredentialID, minValid: Int?, refresh: Bool, force: Bool
    ) throws -> Credential? {
        guard !isAgent, openedStore == nil, plan.agentAnswers else { return nil }
        // No config read here: the agent reads it (min_valid, the timeout of a renewal).
        let timeout = loadedConfig.map { $0.httpTimeout + 10 } ?? AgentClient.defaultTimeout
        return try AgentClient.credential(
            op, id, minValid: minValid, refresh: refresh, force: force, plan: plan, timeout: timeout, notices: notices)
    }

    /// The stored record as it is, for `get --format json` and `--field`
    /// (`CredentialAccess.stored`): from the agent when one answers.
    public func stored(_ id: CredentialID, minValid option: Int?, refresh: Bool) throws -> Credential {
        if let c = try fromAgent("stored", id, minValid: option, refresh: refresh, force: false) { return c }
        let c = try access(minValid: option).stored(id, refresh: refresh)
        agent?.handedOut(id, c, self)
        return c
    }
}

extension Session: ProviderLookup {}

extension Session: AccessRun {
    public var warnBeforeSeconds: Int64 { (try? config.warnBeforeSeconds) ?? Config().warnBeforeSeconds }

    public func emit(_ event: Event, _ id: CredentialID, reason: String) {
        events.emit(event, id, reason: reason)
    }

    /// After an endpoint of a discovered provider failed on the network, its
    /// document is fetched again by the next run (it may have moved).
    public func renewalFailed(_ error: Error, _ c: Credential) {
        forgetDiscovery(after: error, provider: c.provider)
    }

    /// A service whose one provider's grant needs no person gets its first
    /// token from `get` itself: a CI job runs one command (docs/providers.md,
    /// "Credentials from an identity"). The store is made ready first, so
    /// nothing is sent whose answer could not be kept.
    public func firstToken(_ id: CredentialID) throws -> Credential? {
        let directory = try providers
        let owners = directory.owners(of: id.service)
        guard owners.count == 1, directory.grant(of: owners[0])?.fetchesAgain == true else { return nil }
        // A table that serves resources by their URLs (`resources`) logs in to each with `login URL`.
        if let listed = try config.providers[owners[0]]?.resources, !listed.isEmpty { return nil }
        let p = try oauth2Provider(owners[0])
        try vault().prepareToWrite()
        return try refresher().firstToken(of: p, id: id)
    }
}
