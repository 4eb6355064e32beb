import Dispatch
import FoundationEssentials
import Glibc
internal import TOMLKit

/// `config.toml` (docs/config.md). Read only by commands that need it.
public struct Config: Sendable, Equatable {
    public var backend: String?
    public var minValid: Int?
    public var timeout: Int?
    /// Seconds before a refresh token dies that `get` starts warning (docs/providers.md; default 7 days, 0: never).
    public var warnBefore: Int?
    public var providers: [String: ProviderConfig] = [:]
    /// The `[etcd]` table (docs/fleet.md).
    public var etcd: EtcdConfig?
    /// Names of providers that came from providers.toml (`login --issuer`).
    public var discoveredProviders: Set<String> = []
    /// Provider tables with a mistake: the error each use of that provider
    /// gets (78); every other command works.
    public var brokenProviders: [String: TokenVaultError] = [:]
    /// The `[etcd]` table's mistake, for the etcd backend (78).
    public var etcdProblem: TokenVaultError?
    /// One line per mistake that does not stop every command (`file:line: …`).
    public var warnings: [String] = []

    public init() {}

    /// `backend`, when set (its value was checked when the file was read).
    public var backendChoice: BackendChoice? { backend.flatMap(BackendChoice.init(rawValue:)) }

    /// `timeout`: seconds for one exchange with a provider (default 30).
    public var httpTimeout: Int { timeout ?? 30 }

    /// `min_valid`: seconds an access token must still be valid to be handed out (default 60).
    public var minValidSeconds: Int64 { Int64(minValid ?? 60) }

    /// `warn_before`: seconds before a refresh token dies that `get` starts
    /// warning (default 7 days; 0: never).
    public var warnBeforeSeconds: Int64 { Int64(warnBefore ?? 7 * 86400) }

    /// Loads the config file; a missing file is an empty config. The first
    /// load of a file that `readAhead` is reading takes that result.
    public static func load(_ settings: Settings) throws -> Config {
        if let ahead = ReadAhead.take(path: settings.configPath) { return try ahead.get() }
        return try loadNow(settings)
    }

    /// Starts reading (and checking) the config on a thread of its own while
    /// the command line is parsed: the `get` hot path. Call on the main
    /// thread, before the command loads the config.
    public static func readAhead(_ settings: Settings) {
        ReadAhead.start(path: settings.configPath) { try loadNow(settings) }
    }

    private static func loadNow(_ settings: Settings) throws -> Config {
        var config = try loadFile(settings.configPath)
        let discovered = try loadFile(settings.discoveredProvidersPath)
        config.discoveredProviders = Set(discovered.providers.keys).union(discovered.brokenProviders.keys)
        for (name, table) in discovered.providers {
            config.providers[name] = table.overlaid(by: config.providers[name])
        }
        config.brokenProviders.merge(discovered.brokenProviders) { own, _ in own }
        config.warnings += discovered.warnings
        return config
    }

    /// Sets `backend = "VALUE"` in the config file, keeping every other line,
    /// comment and order as it is: the top-level `backend` line is replaced,
    /// or one is put before the first table; a missing file is created (0600).
    /// Throws (the caller prints the line to add) when the file cannot be
    /// read or written, or the edit would not read back as that setting.
    public static func setBackend(_ value: String, _ settings: Settings) throws {
        let path = settings.configPath
        let line = "backend = \"\(value)\""
        var lines = (try text(of: path)).map { $0.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) } ?? []
        if lines.last == "" { lines.removeLast() }
        let firstTable = lines.firstIndex { $0.trimmedSpaces().hasPrefix("[") } ?? lines.endIndex
        let existing = lines[..<firstTable].firstIndex { l in
            let t = l.trimmedSpaces()
            return t.hasPrefix("backend") && t.dropFirst("backend".count).trimmedSpaces().hasPrefix("=")
        }
        if let existing { lines[existing] = line } else { lines.insert(line, at: firstTable) }
        let edited = lines.joined(separator: "\n") + "\n"
        guard try TOMLTable(string: edited)["backend"]?.string == value else {
            throw TokenVaultError.config("\(path): the backend line could not be edited safely")
        }
        try PrivateDirectory.createWithParents(Posix.dirname(path))
        try AtomicFile.replace(path, with: Array(edited.utf8), what: "the config file")
    }

    /// `name` as a TOML key: bare when it can be (letters, digits, `-`, `_`),
    /// else a quoted string, so a hint that shows a table header is valid TOML.
    public static func tableKey(_ name: String) -> String {
        let bare = !name.isEmpty && name.unicodeScalars.allSatisfy {
            ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "-" || $0 == "_"
        }
        return bare ? name : tomlString(name)
    }

    /// `s` as a TOML basic string: quoted, `"` and `\\` escaped, control characters as \\u escapes.
    static func tomlString(_ s: String) -> String {
        var out = "\""
        for c in s.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where c.value < 0x20 || c.value == 0x7F: out += "\\u00" + Hex.encode([UInt8(c.value)]).uppercased()
            default: out.unicodeScalars.append(c)
            }
        }
        return out + "\""
    }

    /// The `backend` setting alone, parsed by TOMLKit without decoding the
    /// rest: the `get` head start decides with it while the command loads
    /// the whole config. nil when not set or not a string (the command's own
    /// load reports a bad file).
    public static func backendSetting(_ settings: Settings) throws -> String? {
        guard let text = try text(of: settings.configPath) else { return nil }
        return try TOMLTable(string: text)["backend"]?.string
    }

    private static func loadFile(_ path: String) throws -> Config {
        guard let text = try text(of: path) else { return Config() }
        return try parse(text, path: path)
    }

    /// A config file's text, checked like every trusted file; nil when there is none.
    private static func text(of path: String) throws -> String? {
        try TrustedFile.check(path, what: "the config file")
        guard let data = FileManager.default.contents(atPath: path) else {
            if FileManager.default.fileExists(atPath: path) {
                throw TokenVaultError.config("cannot read the config file \(path)")
            }
            return nil
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw TokenVaultError.config("the config file \(path) is not UTF-8 text")
        }
        return text
    }

    /// The top-level settings.
    static let settings = ["backend", "min_valid", "timeout", "warn_before", "providers", "etcd"]

    /// Reads a config file's text. A TOML syntax error, or a top-level setting
    /// of the wrong type or value, makes the whole file unusable (78, naming
    /// `file:line`). A `[providers.NAME]` or `[etcd]` table with a mistake (an
    /// unknown key, a wrong type, a bad value) breaks only what uses it: the
    /// error is kept for those, and a one-line warning for every other command
    /// (`warnings`).
    public static func parse(_ text: String, path: String = "config.toml") throws -> Config {
        let located = ConfigText(text, path: path)
        let root: TOMLTable
        do {
            root = try TOMLTable(string: text)
        } catch let e as TOMLParseError {
            throw located.syntaxError(line: e.source.begin.line, column: e.source.begin.column, description: e.description)
        }
        var c = Config()
        // The top level is the table every command reads: a key it does not
        // know (a misspelt `backend` would send tokens elsewhere) stops it.
        for (key, _) in root where !settings.contains(key) {
            let close = Suggestion.closest(to: key, in: settings).map { "did you mean \($0)?" } ?? "settings: " + settings.joined(separator: ", ")
            throw TokenVaultError.config("\(located.location(table: [], key: key)): unknown setting \(key) (\(close))")
        }
        func wrong(_ key: String, _ expected: String) -> TokenVaultError {
            .config("\(located.location(table: [], key: key)): \(key) must be \(expected)")
        }
        func string(_ key: String) throws -> String? {
            guard let v = root[key] else { return nil }
            guard let s = v.string else { throw wrong(key, ConfigType.describe(String.self, key: key) + ", not " + kind(v.type)) }
            return s
        }
        func integer(_ key: String, _ valid: (Int) -> Bool, _ expected: String) throws -> Int? {
            guard let v = root[key] else { return nil }
            guard v.type == .int, let i = v.int, valid(i) else { throw wrong(key, expected + (v.type == .int ? "" : ", not " + kind(v.type))) }
            return i
        }
        c.backend = try string("backend")
        if let b = c.backend, BackendChoice(rawValue: b) == nil {
            let close = Suggestion.closest(to: b, in: BackendChoice.allCases.map(\.rawValue)).map { "did you mean \($0)? " } ?? ""
            throw TokenVaultError.config("\(located.location(table: [], key: "backend")): backend must be \(BackendChoice.spelled), not \(Quoted.text(b))",
                                         hint: close.isEmpty ? nil : close + "fix backend in \(path)")
        }
        c.minValid = try integer("min_valid", { $0 >= 0 }, "a whole number of seconds, 0 or more, e.g. min_valid = 60")
        c.timeout = try integer("timeout", { $0 > 0 }, "a positive whole number of seconds, e.g. timeout = 30")
        c.warnBefore = try integer("warn_before", { $0 >= 0 }, "a whole number of seconds, 0 or more, e.g. warn_before = 604800")
        if let v = root["providers"] {
            guard let providers = v.table else { throw wrong("providers", "a table of providers, e.g. [providers.NAME]") }
            for (name, value) in providers {
                let table = ["providers", name]
                do {
                    guard let t = value.table else {
                        throw TokenVaultError.config("\(located.location(table: ["providers"], key: name)): providers.\(name) must be a table ([providers.\(tableKey(name))])")
                    }
                    let p = try decodeTable(ProviderConfig.self, t, table: table, located: located)
                    for (key, v) in [("refresh_token_lifetime", p.refresh_token_lifetime), ("refresh_token_idle", p.refresh_token_idle)] {
                        if let v, v <= 0 {
                            throw TokenVaultError.config("\(located.location(table: table, key: key)): providers.\(name).\(key) must be a positive number of seconds")
                        }
                    }
                    c.providers[name] = p
                } catch let error as TokenVaultError {
                    c.brokenProviders[name] = error
                    c.warnings.append("\(error.errorText); provider \(name) cannot be used until it is fixed")
                }
            }
        }
        if let v = root["etcd"] {
            do {
                guard let t = v.table else { throw wrong("etcd", "a table, e.g. [etcd]") }
                let e = try decodeTable(EtcdConfig.self, t, table: ["etcd"], located: located)
                try e.check(path: located.location(table: ["etcd"], key: nil))
                c.etcd = e
            } catch let error as TokenVaultError {
                c.etcdProblem = error
                c.warnings.append("\(error.errorText); the etcd backend cannot be used until it is fixed")
            }
        }
        return c
    }

    /// Words for the kind of a TOML value.
    static func kind(_ type: TOMLType) -> String {
        switch type {
        case .string: return "a string"
        case .int: return "a whole number"
        case .double: return "a fractional number"
        case .bool: return "true or false"
        case .array: return "an array"
        case .table: return "a table"
        default: return "a date or time"
        }
    }

    /// One table decoded strictly; its mistake named with `file:line`, the
    /// key, did-you-mean for an unknown key, and the type a value must have.
    static func decodeTable<T: Decodable>(_ type: T.Type, _ table: TOMLTable, table path: [String], located: ConfigText) throws -> T {
        let dotted = path.joined(separator: ".")
        do {
            return try TOMLDecoder(strictDecoding: true).decode(T.self, from: table)
        } catch let e as UnexpectedKeysError {
            let keys = e.keys.keys.sorted()
            let key = keys.first ?? "?"
            let known = knownKeys(of: T.self)
            let close = Suggestion.closest(to: key, in: known).map { "did you mean \($0)?" } ?? "settings here: " + known.joined(separator: ", ")
            throw TokenVaultError.config("\(located.location(table: path, key: key)): unknown setting \(dotted).\(key) (\(close))")
        } catch let DecodingError.typeMismatch(expected, ctx) {
            let key = ctx.codingPath.first?.stringValue ?? "?"
            let found = table[key].map { ", not " + kind($0.type) } ?? ""
            let wanted = ConfigType.describe(declaredType(of: key, in: T.self) ?? expected, key: key)
            throw TokenVaultError.config("\(located.location(table: path, key: key)): \(dotted).\(key) must be \(wanted)\(found)")
        } catch let DecodingError.valueNotFound(expected, ctx) {
            let key = ctx.codingPath.first?.stringValue ?? "?"
            let wanted = ConfigType.describe(declaredType(of: key, in: T.self) ?? expected, key: key)
            throw TokenVaultError.config("\(located.location(table: path, key: key)): \(dotted).\(key) must be \(wanted)")
        } catch {
            throw TokenVaultError.config("\(located.location(table: path, key: nil)): \(dotted): \(error)")
        }
    }

    /// The stored properties of a config table type, each with its declared type.
    static func fields<T>(of type: T.Type) -> [(key: String, type: Any.Type)] {
        let mirror: Mirror
        switch type {
        case is ProviderConfig.Type: mirror = Mirror(reflecting: ProviderConfig())
        case is EtcdConfig.Type: mirror = Mirror(reflecting: EtcdConfig())
        default: return []
        }
        return mirror.children.compactMap { child in child.label.map { ($0, Swift.type(of: child.value)) } }
    }

    /// The keys a config table type knows.
    static func knownKeys<T>(of type: T.Type) -> [String] { fields(of: type).map(\.key).sorted() }

    /// The type `key` is declared with (`Optional<Array<String>>`), for the message.
    static func declaredType<T>(of key: String, in type: T.Type) -> Any.Type? { fields(of: type).first { $0.key == key }?.type }
}

/// A `[providers.NAME]` table: every field optional, as it extends a preset.
public struct ProviderConfig: Codable, Sendable, Equatable {
    public var type: String?
    public var service: String?
    public var authorize_url: String?
    public var token_url: String?
    public var revoke_url: String?
    public var device_authorization_url: String?
    public var userinfo_url: String?
    public var grant: String?
    public var scopes: [String]?
    public var client_id: String?
    public var client_secret: String?
    public var client_secret_file: String?
    public var client_secret_command: String?
    public var client_auth: String?
    public var redirect_uri: String?
    public var pkce: Bool?
    public var auth_params: [String: String]?
    public var header: String?
    public var request_token_url: String?
    public var access_token_url: String?
    public var consumer_key: String?
    public var consumer_secret: String?
    public var consumer_secret_file: String?
    public var consumer_secret_command: String?
    public var perms: String?
    /// Hosts whose git remotes use this provider's token (docs/adapters.md): `github.com`,
    /// `git.example.com:8443`, or `http://127.0.0.1:PORT` (plain http: loopback only).
    public var git_hosts: [String]?
    /// The username `git-credential` answers when git sends none.
    public var git_username: String?
    /// Fills `{tenant}` in the endpoints (the microsoft preset: `common` by default).
    public var tenant: String?
    /// An OpenID Connect issuer (or RFC 8414 authorization server): the
    /// endpoints not set here come from its discovery document (docs/providers.md).
    public var issuer: String?
    /// A PEM private key (RS256 or ES256) for jwt_bearer and private_key_jwt.
    public var private_key_file: String?
    /// A Google service-account key (JSON) for jwt_bearer.
    public var credentials_file: String?
    /// jwt_bearer: the assertion's `aud` (default: the token URL) and `sub` (default: the issuer of it).
    public var audience: String?
    public var subject: String?
    /// Seconds a refresh token lives from its issue, when the provider does not say.
    public var refresh_token_lifetime: Int?
    /// Seconds a refresh token lives unused (Entra ID: 90 days).
    public var refresh_token_idle: Int?

    public init() {}

    /// Who issues this provider's tokens (docs/security.md): its `issuer`, else
    /// the origin of its token endpoint. A credential keeps it, and its refresh
    /// token is sent to no provider that names another.
    public var issuedBy: String? { issuer ?? token_url.flatMap(Self.origin(of:)) }

    /// `scheme://host[:port]` of a URL, lower-cased; nil when it has no host.
    static func origin(of url: String) -> String? {
        guard let c = URLComponents(string: url), let scheme = c.scheme, let host = c.host, !host.isEmpty else { return nil }
        return scheme.lowercased() + "://" + host.lowercased() + (c.port.map { ":\($0)" } ?? "")
    }

    /// A provider's table: its preset, if any, overlaid by its `[providers.NAME]`
    /// table; an unknown name is a configuration error (78).
    public static func table(for name: String, config: Config, configPath: String) throws -> ProviderConfig {
        if let broken = config.brokenProviders[name] { throw broken }
        let preset = ProviderPreset.named(name)
        let own = config.providers[name]
        guard preset != nil || own != nil else {
            let names = ProviderDirectory(config: config).names
            let define = "or define [providers.\(Config.tableKey(name))] in \(configPath)"
            throw TokenVaultError.config("unknown provider \(Quoted.text(name))",
                                         hint: Suggestion.text(for: name, in: names, listName: "providers") + "; " + define)
        }
        return try (preset?.config ?? ProviderConfig()).overlaid(by: own).withTenant(provider: name, configPath: configPath)
    }

    /// The OAuth 2.0 endpoints, by config key: what `{tenant}` fills in and
    /// what an issuer's discovery document may supply.
    static var endpoints: [(key: String, field: WritableKeyPath<ProviderConfig, String?>)] {
        [("authorize_url", \.authorize_url), ("token_url", \.token_url), ("revoke_url", \.revoke_url),
         ("device_authorization_url", \.device_authorization_url), ("userinfo_url", \.userinfo_url)]
    }

    /// Endpoints with `{tenant}` filled in: the `tenant` key, else `common`.
    func withTenant(provider name: String, configPath: String) throws -> ProviderConfig {
        let fields = ProviderConfig.endpoints.map(\.field)
        guard fields.contains(where: { self[keyPath: $0]?.contains("{tenant}") == true }) else { return self }
        let tenant = self.tenant ?? "common"
        guard !tenant.isEmpty, tenant.utf8.count <= 64,
              tenant.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) || $0 == "-" || $0 == "." })
        else {
            throw TokenVaultError.config("provider \(name): tenant must be a tenant id or domain (letters, digits, '-', '.'), not \(Quoted.text(tenant))",
                                         hint: "fix tenant in [providers.\(Config.tableKey(name))] of \(configPath)")
        }
        var m = self
        for f in fields { m[keyPath: f] = m[keyPath: f]?.replacing("{tenant}", with: tenant) }
        return m
    }

    /// This table (a preset) with every field `own` sets taking its place. A
    /// secret given in any of its three forms replaces all three.
    func overlaid(by own: ProviderConfig?) -> ProviderConfig {
        guard let own else { return self }
        var m = self
        func take<T>(_ field: WritableKeyPath<ProviderConfig, T?>) {
            if let v = own[keyPath: field] { m[keyPath: field] = v }
        }
        for field in [\ProviderConfig.type, \.service, \.authorize_url, \.token_url, \.revoke_url, \.device_authorization_url,
                      \.userinfo_url, \.grant, \.client_id, \.client_auth, \.redirect_uri, \.header,
                      \.request_token_url, \.access_token_url, \.consumer_key, \.perms, \.git_username, \.tenant,
                      \.issuer, \.private_key_file, \.credentials_file, \.audience, \.subject] {
            take(field)
        }
        take(\.scopes)
        take(\.git_hosts)
        take(\.refresh_token_lifetime)
        take(\.refresh_token_idle)
        take(\.pkce)
        if let v = own.auth_params { m.auth_params = (m.auth_params ?? [:]).merging(v) { $1 } }
        for group in [[\ProviderConfig.client_secret, \.client_secret_file, \.client_secret_command],
                      [\ProviderConfig.consumer_secret, \.consumer_secret_file, \.consumer_secret_command]]
        where group.contains(where: { own[keyPath: $0] != nil }) {
            for field in group { m[keyPath: field] = own[keyPath: field] }
        }
        return m
    }
}

/// `[etcd]`: where the fleet backend's cluster is and how to reach it.
public struct EtcdConfig: Codable, Sendable, Equatable {
    public var endpoints: [String]?
    public var prefix: String?
    public var username: String?
    public var password_file: String?
    public var password_command: String?
    public var ca_file: String?
    public var cert_file: String?
    public var key_file: String?
    public var lease_ttl: Int?
    /// Seconds for any one etcd call (default 5).
    public var timeout: Int?

    public init() {}

    func check(path: String) throws {
        if let t = lease_ttl, !(2...3600).contains(t) {
            throw TokenVaultError.config("\(path): etcd.lease_ttl must be between 2 and 3600 seconds")
        }
        if let t = timeout, !(1...300).contains(t) {
            throw TokenVaultError.config("\(path): etcd.timeout must be between 1 and 300 seconds")
        }
        if password_file != nil, password_command != nil {
            throw TokenVaultError.config("\(path): set one of etcd.password_file and etcd.password_command, not both")
        }
        if (cert_file == nil) != (key_file == nil) {
            throw TokenVaultError.config("\(path): etcd.cert_file and etcd.key_file go together")
        }
    }
}

/// The config read ahead of its first `load`.
private final class ReadAhead: @unchecked Sendable {
    nonisolated(unsafe) private static var pending: ReadAhead?
    private static let lock = PosixLock()
    private let path: String
    private var result: Result<Config, Error>?
    private let done = DispatchSemaphore(value: 0)

    private init(path: String) { self.path = path }

    static func start(path: String, _ read: @escaping @Sendable () throws -> Config) {
        let ahead = ReadAhead(path: path)
        lock.withLock { pending = ahead }
        Posix.spawnThread(stackSize: 1 << 22) {
            ahead.result = Result { try read() }
            ahead.done.signal()
        }
    }

    /// What was read ahead for `path`, waited for, once (a later load reads
    /// the file again); nil when nothing was.
    static func take(path: String) -> Result<Config, Error>? {
        guard let ahead = lock.withLock({ () -> ReadAhead? in
            guard let p = pending, p.path == path else { return nil }
            pending = nil
            return p
        }) else { return nil }
        ahead.done.wait()
        return ahead.result
    }
}
