import FoundationEssentials
import Glibc

/// Everything tokenvault takes from its environment, resolved in this one
/// place (docs/reference.md, "Environment"): each variable has one default and
/// one check, and an empty variable is an unset one. A value that fails its
/// check is a configuration error (78) naming the variable, raised by the
/// first use of that setting, so one bad variable stops only what needs it.
public struct Settings: Sendable {
    /// The environment as given, for what passes it on (children, `exec`).
    public let environment: [String: String]

    /// The program that starts a command of tokenvault's own (the login the
    /// MCP bridge starts): this binary, unless the caller says otherwise.
    public var executable = "/proc/self/exe"

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// Where this run's secret commands run and a relative `TOKENVAULT_VAULT`
    /// or `TOKENVAULT_CONFIG` is taken from: this process's, or the agent's client's.
    public var child = ChildContext()

    /// The agent runs this for a client that can open a locked file vault itself (docs/agent.md).
    public var clientCanUnlock = false
    /// What decides every expiry and margin of this run: the system's, or a test's.
    public var clock: Clock = SystemClock()
    /// How a passphrase becomes a vault key: Argon2id, or a test's that remembers.
    public var keyDerivation = KeyDerivation.argon2id

    /// This process's environment, copied once: the start-up, the command and
    /// the helpers that need a setting all read this one.
    public static let process = Settings()

    /// These settings with `variable` set to `value` (nil: unset).
    public func with(_ variable: EnvironmentVariable, _ value: String?) -> Settings {
        withEnvironment { $0[variable.name] = value }
    }

    /// These settings with their environment changed by `change`, all else kept.
    func withEnvironment(_ change: (inout [String: String]) -> Void) -> Settings {
        var e = environment
        change(&e)
        var s = Settings(environment: e)
        (s.executable, s.child, s.clock, s.keyDerivation) = (executable, child, clock, keyDerivation)
        return s
    }

    /// The variable's value; nil when unset or empty.
    public subscript(_ variable: EnvironmentVariable) -> String? {
        guard let v = environment[variable.name], !v.isEmpty else { return nil }
        return v
    }

    // MARK: The backend

    /// Who chose the backend in use.
    public enum ChosenBy: Sendable {
        case environment, config, defaultValue

        /// In `doctor`'s and `backend`'s words.
        public var rawValue: String {
            switch self {
            case .environment: EnvironmentVariable.backend.name
            case .config: "config"
            case .defaultValue: "the default"
            }
        }
    }

    /// `TOKENVAULT_BACKEND`; nil when unset or empty.
    public var backendOverride: BackendChoice? {
        get throws {
            guard let v = self[.backend] else { return nil }
            guard let c = BackendChoice(rawValue: v) else {
                throw invalid(.backend, v, "must be \(BackendChoice.spelled)")
            }
            return c
        }
    }

    /// The backend: `TOKENVAULT_BACKEND`, else `backend` in the config (read
    /// only when needed), else auto.
    public func backend(config: () throws -> Config) throws -> (choice: BackendChoice, chosenBy: ChosenBy) {
        if let forced = try backendOverride { return (forced, .environment) }
        if let set = try config().backendChoice { return (set, .config) }
        return (.auto, .defaultValue)
    }

    // MARK: Numbers

    /// Seconds the vault key stays in the kernel keyring: 0 (never cached)
    /// to 30 days; `TOKENVAULT_KEY_TTL`, else `key_ttl` in the config, else 900.
    public var keyTTL: Int {
        get throws {
            if self[.keyTTL] != nil { return try whole(.keyTTL, in: Self.keyTTLRange, default: 900) }
            return try Config.keyTTLSetting(self) ?? 900
        }
    }

    /// Where the key's lifetime was set, for messages: the variable, else the config's key_ttl.
    public var keyTTLSource: String { self[.keyTTL] != nil ? EnvironmentVariable.keyTTL.name : "key_ttl" }

    /// The one wording of a key lifetime of 0.
    public var keyNeverCached: String {
        "\(keyTTLSource) is 0: the key is never cached, so each command opens the vault itself (with the TPM, or a passphrase source)"
    }

    /// What `key_ttl` and `TOKENVAULT_KEY_TTL` may be.
    public static let keyTTLRange = 0...2_592_000

    /// Seconds to wait for the Secret Service: 0.1 to 60; default 3.
    public var dbusTimeout: Double {
        get throws { try seconds(.dbusTimeout, in: 0.1...60, default: 3) }
    }

    /// Seconds to wait for a locked collection to be unlocked: 0 to 3600;
    /// default 60 in a desktop session, else 0.
    public var unlockTimeout: Double {
        get throws { try seconds(.unlockTimeout, in: 0...3600, default: desktop ? 60 : 0) }
    }

    /// The Argon2id cost of a new vault: interactive, moderate (default) or sensitive.
    public var kdfProfile: KDFParams {
        get throws {
            guard let name = self[.kdfProfile] else { return .moderate }
            guard let params = KDFParams.named(name.trimmedSpaces()) else {
                throw invalid(.kdfProfile, name, "must be interactive, moderate or sensitive")
            }
            return params
        }
    }

    private func whole(_ v: EnvironmentVariable, in range: ClosedRange<Int>, default value: Int) throws -> Int {
        guard let text = self[v] else { return value }
        guard let n = Int(text.trimmedSpaces()), range.contains(n) else {
            throw invalid(v, text, "must be a whole number of seconds from \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }

    private func seconds(
        _ v: EnvironmentVariable, in range: ClosedRange<Double>, default value: Double
    ) throws -> Double {
        guard let text = self[v] else { return value }
        guard let n = Double(text.trimmedSpaces()), n.isFinite, range.contains(n) else {
            throw invalid(
                v, text,
                "must be a number of seconds from \(range.lowerBound.shortText) to \(range.upperBound.shortText)")
        }
        return n
    }

    private func invalid(_ v: EnvironmentVariable, _ value: String, _ rule: String) -> TokenVaultError {
        .config("\(v.name) \(rule), not \(Quoted.text(value))", hint: "fix or unset \(v.name)")
    }

    // MARK: Who and where

    /// `TOKENVAULT_ACCOUNT`; nil when unset or empty.
    public var account: String? { self[.account] }

    /// Whether this process runs in a desktop session (X11 or Wayland), where a
    /// browser or the keyring's unlock prompt can be shown.
    public var desktop: Bool { self[.display] != nil || self[.waylandDisplay] != nil }

    /// `$HOME`, else the password database's home of this user.
    /// `path` with a leading `~/` standing for `home`.
    public func expandingHome(_ path: String) -> String {
        path.hasPrefix("~/") ? home + path.dropFirst() : path
    }

    public var home: String {
        if let home = self[.home] { return home }
        if let pw = getpwuid(geteuid()), let dir = pw.pointee.pw_dir {
            return String(decoding: UnsafeRawBufferPointer(start: dir, count: strlen(dir)), as: UTF8.self)
        }
        return "/"
    }

    /// An XDG base directory: the variable when it is an absolute path, else `fallback` under `$HOME`.
    private func base(_ v: EnvironmentVariable, _ fallback: String) -> String {
        self[v].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? (home + "/" + fallback)
    }

    /// `$XDG_DATA_HOME`, else `~/.local/share`.
    public var dataHome: String { base(.xdgDataHome, ".local/share") }

    /// `TOKENVAULT_CONFIG`, else `$XDG_CONFIG_HOME/tokenvault/config.toml`.
    public var configPath: String {
        self[.config].map(child.absolute) ?? base(.xdgConfigHome, ".config") + "/tokenvault/config.toml"
    }

    /// Providers that `login --issuer` added: `providers.toml` beside the config file.
    public var discoveredProvidersPath: String { Posix.dirname(configPath) + "/providers.toml" }

    /// `TOKENVAULT_VAULT`, else `$XDG_DATA_HOME/tokenvault/vault`.
    public var vaultPath: String {
        self[.vault].map(child.absolute) ?? dataHome + "/tokenvault/vault"
    }

    /// `$XDG_CACHE_HOME/tokenvault` (by default `~/.cache/tokenvault`).
    public var cacheDirectory: String { base(.xdgCacheHome, ".cache") + "/tokenvault" }

    /// Where tokenvault keeps its locks and its spool: `$XDG_RUNTIME_DIR/tokenvault`
    /// (a tmpfs of the user's own), else `$XDG_CACHE_HOME/tokenvault/run` —
    /// never a predictable name in a shared directory such as /tmp, which
    /// another user could create first.
    public var runtimeDirectory: String {
        if let r = self[.xdgRuntimeDir], r.hasPrefix("/"), access(r, W_OK) == 0 { return r + "/tokenvault" }
        return cacheDirectory + "/run"
    }

    /// The session bus address; nil when not set.
    public var sessionBus: String? { self[.dbusSessionBusAddress] }

    /// The session bus as a message names it: its first address without the
    /// guid and other parameters ("unix:path=/run/user/1000/bus").
    public var sessionBusShown: String {
        guard let address = sessionBus else { return runtimeBus }
        let first = address.split(separator: ";").first.map(String.init) ?? address
        return first.split(separator: ",").first.map(String.init) ?? first
    }

    /// The bus a systemd user session keeps in the runtime directory.
    public var runtimeBus: String { (self[.xdgRuntimeDir] ?? "/run/user/\(getuid())") + "/bus" }

    // MARK: etcd

    /// `TOKENVAULT_ETCD_ENDPOINTS`, split at commas; nil when unset or empty.
    public var etcdEndpoints: [String]? {
        self[.etcdEndpoints].map { $0.split(separator: ",").map { $0.trimmedSpaces() }.filter { !$0.isEmpty } }
    }

    /// `TOKENVAULT_ETCD_PREFIX`; nil when unset or empty.
    public var etcdPrefix: String? { self[.etcdPrefix] }

    // MARK: The agent

    /// Whether commands may ask the agent (`TOKENVAULT_AGENT=off`: never).
    public var agentAllowed: Bool { self[.agent]?.lowercased() != "off" }

    /// A command may start the agent on first use (docs/agent.md): not with
    /// `TOKENVAULT_AGENT=off` or `manual` (the config's `agent = false` says
    /// the same), and not in a CI job (`CI=true`), which leaves no process behind.
    public var agentStartsOnUse: Bool { agentAllowed && self[.agent]?.lowercased() != "manual" && !isCI }

    /// A CI job (`CI=true`, as CI systems set it): no agent is started on use,
    /// and nobody is prompted.
    public var isCI: Bool { ["true", "1", "yes"].contains(self[.ci]?.lowercased() ?? "") }

    /// What must be the same for a client and the agent that answers it
    /// (docs/agent.md): the backend, the files and the bus they resolve to.
    /// A client whose scope differs goes to the backend itself.
    /// Values are compared as they resolve, not as spelt: an empty variable
    /// is an unset one, a number is its value (`3` and `3.0`), a backend is
    /// lower case; the agent fills in what the config decides (`AgentServer`).
    public var agentScope: JSONValue {
        func number(_ v: EnvironmentVariable, _ value: Double?) -> JSONValue {
            .string(value.map { $0.shortText } ?? self[v] ?? "")
        }
        return .object([
            "config": .string(configPath), "vault": .string(vaultPath), "cache": .string(cacheDirectory),
            "bus": .string(sessionBus ?? runtimeBus),
            "key_ttl": number(.keyTTL, (try? keyTTL).map(Double.init)),
            EnvironmentVariable.dbusTimeout.name: number(.dbusTimeout, try? dbusTimeout),
            EnvironmentVariable.unlockTimeout.name: number(.unlockTimeout, try? unlockTimeout),
            EnvironmentVariable.backend.name: .string(self[.backend]?.trimmedSpaces().lowercased() ?? ""),
            EnvironmentVariable.etcdEndpoints.name: .string((etcdEndpoints ?? []).joined(separator: ",")),
            EnvironmentVariable.etcdPrefix.name: .string(etcdPrefix ?? ""),
        ])
    }
}

// MARK: The session, found as libsystemd finds it

extension Settings {
    /// The runtime directory a systemd login gives this user, for when
    /// `XDG_RUNTIME_DIR` is unset (an MCP client that passes only HOME, PATH,
    /// SHELL and TERM): `/run/user/UID`, only when it is a directory (not a
    /// link) that this user owns and nobody else can reach — never one
    /// somebody else could have made (docs/reference.md, "The session").
    public static func systemRuntimeDirectory(root: String = "/run/user") -> String? {
        let path = "\(root)/\(getuid())"
        var st = stat()
        guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFDIR, st.st_uid == getuid(), st.st_mode & 0o077 == 0
        else { return nil }
        return path
    }

    /// The session bus a runtime directory holds (`bus`, as libsystemd and
    /// GDBus find it): its address, when it is a socket of this user's.
    public static func busAddress(in runtimeDirectory: String) -> String? {
        let path = runtimeDirectory + "/bus"
        var st = stat()
        guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFSOCK, st.st_uid == getuid() else { return nil }
        return "unix:path=\(path)"
    }

    /// Puts into this process's environment what a login session would have
    /// set and the caller did not pass: `XDG_RUNTIME_DIR` (see
    /// `systemRuntimeDirectory`) and `DBUS_SESSION_BUS_ADDRESS` (the runtime
    /// directory's `bus`). Called first thing, before any thread or library
    /// reads the environment; every command then finds the agent's socket,
    /// its locks and the Secret Service where a login shell would.
    public static func adoptSession() {
        func unset(_ v: EnvironmentVariable) -> Bool { getenv(v.name).map { $0.pointee == 0 } ?? true }
        if unset(.xdgRuntimeDir), let found = systemRuntimeDirectory() {
            setenv(EnvironmentVariable.xdgRuntimeDir.name, found, 1)
        }
        if unset(.dbusSessionBusAddress), let runtime = getenv(EnvironmentVariable.xdgRuntimeDir.name),
            let bus = busAddress(in: String(cString: runtime))
        {
            setenv(EnvironmentVariable.dbusSessionBusAddress.name, bus, 1)
        }
    }
}
