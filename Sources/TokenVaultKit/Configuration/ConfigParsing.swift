import FoundationEssentials
internal import TOMLKit

/// Reading config.toml (docs/config.md): the top level strictly, each table
/// on its own, every mistake named with `file:line`.
extension Config {
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
            throw located.syntaxError(
                line: e.source.begin.line, column: e.source.begin.column, description: e.description)
        }
        var c = Config()
        var fatal = c.readTopLevel(root, located: located)
        if let v = root["providers"] {
            if let providers = v.table {
                for (name, value) in providers { c.readProvider(name, value, located: located) }
                c.refuseSharedServices(located: located)
            } else {
                fatal.append(
                    (
                        located.line(table: [], key: "providers") ?? 0,
                        .config(
                            "\(located.location(table: [], key: "providers")): providers must be a table of providers, e.g. [providers.NAME]"
                        )
                    ))
            }
        }
        if let v = root["etcd"] { c.readEtcd(v, located: located) }
        if let v = root["hooks"] { c.readHooks(v, located: located) }
        // The mistakes that stop every command are the error; those of the tables are said beneath them.
        if !fatal.isEmpty {
            let top = ConfigMistakes(fatal).all
            let all = top + c.warnings.map { TokenVaultError.config($0) }
            throw ConfigMistakes(all.enumerated().map { ($0.offset, $0.element) }).error(
                hint: "fix \(all.count == 1 ? "it" : "them") in \(located.path)")
        }
        return c
    }

    /// `backend`, `min_valid`, `timeout`, `warn_before`, …: a key the top
    /// level does not know (a misspelt `backend` would send tokens elsewhere),
    /// or a wrong value, stops every command. Every such mistake is returned,
    /// in the order of its line.
    private mutating func readTopLevel(_ root: TOMLTable, located: ConfigText) -> [(line: Int, error: TokenVaultError)]
    {
        let settings = Config.settings
        var found: [(line: Int, error: TokenVaultError)] = []
        func add(_ key: String, _ error: TokenVaultError) {
            found.append((located.line(table: [], key: key) ?? 0, error))
        }
        for (key, _) in root where !settings.contains(key) {
            let close =
                Suggestion.closest(to: key, in: settings).map { "did you mean \($0)?" } ?? "settings: "
                + settings.joined(separator: ", ")
            add(key, .config("\(located.location(table: [], key: key)): unknown setting \(key) (\(close))"))
        }
        func wrong(_ key: String, _ expected: String) {
            add(key, .config("\(located.location(table: [], key: key)): \(key) must be \(expected)"))
        }
        func integer(_ key: String, _ valid: (Int) -> Bool, _ expected: String) -> Int? {
            guard let v = root[key] else { return nil }
            guard v.type == .int, let i = v.int, valid(i) else {
                wrong(key, expected + (v.type == .int ? "" : ", not " + Config.kind(v.type)))
                return nil
            }
            return i
        }
        if let v = root["backend"] {
            if let b = v.string, BackendChoice(rawValue: b) != nil {
                backend = b
            } else {
                wrong("backend", Self.notABackend(v))
            }
        }
        minValid = integer("min_valid", { $0 >= 0 }, "a whole number of seconds, 0 or more, e.g. min_valid = 60")
        timeout = integer("timeout", { $0 > 0 }, "a positive whole number of seconds, e.g. timeout = 30")
        warnBefore = integer(
            "warn_before", { $0 >= 0 }, "a whole number of seconds, 0 or more, e.g. warn_before = 604800")
        agentKeep = integer(
            "agent_keep", { (0...8760).contains($0) }, "a whole number of hours from 0 to 8760, e.g. agent_keep = 24")
        agentIdle = integer(
            "agent_idle", { $0 >= 0 }, "a whole number of seconds, 0 (never) or more, e.g. agent_idle = 3600")
        commandTimeout = integer(
            "command_timeout", { (1...3600).contains($0) },
            "a whole number of seconds from 1 to 3600, e.g. command_timeout = 30")
        keyTTL = integer(
            "key_ttl", { Settings.keyTTLRange.contains($0) },
            "a whole number of seconds from 0 (never cached) to 2592000, e.g. key_ttl = 900")
        if let v = root["client_metadata_url"] {
            if let s = v.string {
                clientMetadataURL = s
            } else {
                wrong("client_metadata_url", "an https URL, not " + Config.kind(v.type))
            }
        }
        if let v = root["agent"] {
            if v.type == .bool, let b = v.bool {
                agent = b
            } else {
                wrong("agent", "true or false, not " + Config.kind(v.type))
            }
        }
        return found
    }

    /// What a `backend` that names none must be instead, with the closest one.
    private static func notABackend(_ v: TOMLValueConvertible) -> String {
        guard let b = v.string else {
            return ConfigType.describe(String.self, key: "backend") + ", not " + Config.kind(v.type)
        }
        let close =
            Suggestion.closest(to: b, in: BackendChoice.allCases.map(\.rawValue)).map { " (did you mean \($0)?)" } ?? ""
        return "\(BackendChoice.spelled), not \(Quoted.text(b))\(close)"
    }

    /// A table whose subject (`subject_provider`, `idp`) is a table of its
    /// own `service` would trade its own stored token, and keep renewing on it
    /// once its real subject is gone: both are refused, each naming the line
    /// of both; other commands work. (Two tables of one service are otherwise
    /// two owners, kept apart by their accounts: docs/reference.md.)
    private mutating func refuseSharedServices(located: ConfigText) {
        func service(_ name: String) -> String? {
            providers[name]?.service.flatMap { try? ServiceKey(parsing: $0) }?.description
        }
        var byService: [String: [String]] = [:]
        for (name, p) in providers {
            guard let own = service(name) else { continue }
            for subject in [p.subject_provider, p.idp].compactMap({ $0 })
            where subject != name && service(subject) == own {
                byService[own, default: []] += [name, subject].filter { !(byService[own] ?? []).contains($0) }
            }
        }
        for (service, names) in byService where names.count > 1 {
            let sorted = names.sorted()
            let places = sorted.map {
                "[providers.\(Config.tableKey($0))] at \(located.location(table: ["providers", $0], key: "service"))"
            }
            for name in sorted {
                let error = TokenVaultError.config(
                    "providers \(Format.list(sorted, "and")) name one service, \(service), and one is the other's subject: \(Format.list(places, "and")); the exchange would trade its own token",
                    hint: "give each table a service of its own in \(located.path)")
                providers[name] = nil
                brokenProviders[name] = error
                warnings.append("\(error.errorText); provider \(name) cannot be used until it is fixed")
            }
        }
    }

    /// One `[providers.NAME]` table; a mistake in it breaks only that
    /// provider. Every mistake of the table is a warning line of its own; using
    /// the provider is the first one's error, with the others beneath it.
    private mutating func readProvider(_ name: String, _ value: TOMLValueConvertible, located: ConfigText) {
        let table = ["providers", name]
        var found: [(line: Int, error: TokenVaultError)] = []
        func at(_ key: String) -> Int { located.line(table: table, key: key) ?? 0 }
        guard let t = value.table else {
            let error = TokenVaultError.config(
                "\(located.location(table: ["providers"], key: name)): providers.\(name) must be a table ([providers.\(Config.tableKey(name))])"
            )
            brokenProviders[name] = error
            warnings.append("\(error.errorText); provider \(name) cannot be used until it is fixed")
            return
        }
        var decoded: ProviderConfig?
        do {
            decoded = try Config.decodeTable(ProviderConfig.self, t, table: table, located: located)
        } catch let error as ConfigMistakes {
            found = error.found
        } catch {
            found = [(0, .config("\(located.path): providers.\(name): \(error.errorText)"))]
        }
        // Values, read from the table as written: said with the type mistakes above, each at its line.
        for key in ["refresh_token_lifetime", "refresh_token_idle"] {
            if let v = t[key]?.int, v <= 0 {
                found.append(
                    (
                        at(key),
                        .config(
                            "\(located.location(table: table, key: key)): providers.\(name).\(key) must be a positive number of seconds"
                        )
                    ))
            }
        }
        for (key, valid) in [
            ("type", ["oauth2", "oauth1"]), ("grant", OAuth2Provider.Grant.allCases.map(\.rawValue)),
            ("client_auth", OAuth2Provider.ClientAuth.allCases.map(\.rawValue)),
        ] {
            guard let v = t[key]?.string, !valid.contains(v) else { continue }
            let close = Suggestion.closest(to: v, in: valid).map { " (did you mean \($0)?)" } ?? ""
            found.append(
                (
                    at(key),
                    .config(
                        "\(located.location(table: table, key: key)): providers.\(name).\(key) must be \(Format.list(valid, "or")), not \(Quoted.text(v))\(close)"
                    )
                ))
        }
        if found.isEmpty { providers[name] = decoded }
        guard !found.isEmpty else { return }
        let mistakes = ConfigMistakes(found)
        brokenProviders[name] = mistakes.error(hint: "fix [providers.\(Config.tableKey(name))] in \(located.path)")
        for mistake in mistakes.all {
            warnings.append("\(mistake.errorText); provider \(name) cannot be used until it is fixed")
        }
    }

    /// The `[hooks]` table; a mistake in it turns the hooks off, with a warning.
    private mutating func readHooks(_ value: TOMLValueConvertible, located: ConfigText) {
        do {
            guard let t = value.table else {
                throw TokenVaultError.config(
                    "\(located.location(table: [], key: "hooks")): hooks must be a table, e.g. [hooks]")
            }
            hooks = try Config.decodeTable(HooksConfig.self, t, table: ["hooks"], located: located)
        } catch let error as ConfigMistakes {
            warnings += error.all.map { "\($0.errorText); no hook runs until it is fixed" }
        } catch {
            warnings.append("\(error.errorText); no hook runs until it is fixed")
        }
    }

    /// The `[etcd]` table; a mistake in it breaks only the etcd backend.
    private mutating func readEtcd(_ value: TOMLValueConvertible, located: ConfigText) {
        do {
            guard let t = value.table else {
                throw TokenVaultError.config(
                    "\(located.location(table: [], key: "etcd")): etcd must be a table, e.g. [etcd]")
            }
            let e = try Config.decodeTable(EtcdConfig.self, t, table: ["etcd"], located: located)
            try e.check(path: located.location(table: ["etcd"], key: nil))
            etcd = e
        } catch let error as ConfigMistakes {
            etcdProblem = error.error(hint: nil)
            warnings += error.all.map { "\($0.errorText); the etcd backend cannot be used until it is fixed" }
        } catch let error as TokenVaultError {
            etcdProblem = error
            warnings.append("\(error.errorText); the etcd backend cannot be used until it is fixed")
        } catch {
            etcdProblem = .config("\(located.path): etcd: \(error)")
        }
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

    /// One table decoded strictly. Every mistake is named at its own line
    /// (`file:line`, the key): each unknown key with did-you-mean, each value
    /// of the wrong type with the type it must have (ConfigMistakes).
    static func decodeTable<T: Decodable>(
        _ type: T.Type, _ table: TOMLTable, table path: [String], located: ConfigText
    ) throws -> T {
        let found = mistakes(in: table, as: T.self, table: path, located: located)
        if !found.isEmpty { throw ConfigMistakes(found) }
        do {
            return try decodeChecked(T.self, table, table: path, located: located)
        } catch let error as TokenVaultError {
            throw ConfigMistakes([(located.line(table: path, key: nil) ?? 0, error)])
        }
    }

    /// Each key of `table` that `T` does not know, and each value whose TOML
    /// type is not the one `T` declares for its key, in the order of their lines.
    static func mistakes<T>(
        in table: TOMLTable, as type: T.Type, table path: [String], located: ConfigText
    ) -> [(line: Int, error: TokenVaultError)] {
        let known = fields(of: T.self)
        guard !known.isEmpty else { return [] }
        let dotted = path.joined(separator: ".")
        var out: [(line: Int, error: TokenVaultError)] = []
        for (key, value) in table {
            // Where the key is, looked up in the text only for a mistake.
            var at: String { located.location(table: path, key: key) }
            var line: Int { located.line(table: path, key: key) ?? 0 }
            guard let declared = known.first(where: { $0.key == key })?.type else {
                let keys = known.map(\.key).sorted()
                let close =
                    Suggestion.closest(to: key, in: keys).map { "did you mean \($0)?" } ?? "settings here: "
                    + keys.joined(separator: ", ")
                out.append((line, .config("\(at): unknown setting \(dotted).\(key) (\(close))")))
                continue
            }
            guard !ConfigType.holds(value, as: declared) else { continue }
            out.append(
                (
                    line,
                    .config(
                        "\(at): \(dotted).\(key) must be \(ConfigType.describe(declared, key: key)), not \(kind(value.type))"
                    )
                ))
        }
        return out
    }

    /// The decoder's own errors, in words (what the checks above let through).
    private static func decodeChecked<T: Decodable>(
        _ type: T.Type, _ table: TOMLTable, table path: [String], located: ConfigText
    ) throws -> T {
        let dotted = path.joined(separator: ".")
        do {
            return try TOMLDecoder(strictDecoding: true).decode(T.self, from: table)
        } catch let e as UnexpectedKeysError {
            let keys = e.keys.keys.sorted()
            let key = keys.first ?? "?"
            let known = knownKeys(of: T.self)
            let close =
                Suggestion.closest(to: key, in: known).map { "did you mean \($0)?" } ?? "settings here: "
                + known.joined(separator: ", ")
            throw TokenVaultError.config(
                "\(located.location(table: path, key: key)): unknown setting \(dotted).\(key) (\(close))")
        } catch let DecodingError.typeMismatch(expected, ctx) {
            let key = ctx.codingPath.first?.stringValue ?? "?"
            let found = table[key].map { ", not " + kind($0.type) } ?? ""
            let wanted = ConfigType.describe(declaredType(of: key, in: T.self) ?? expected, key: key)
            throw TokenVaultError.config(
                "\(located.location(table: path, key: key)): \(dotted).\(key) must be \(wanted)\(found)")
        } catch let DecodingError.valueNotFound(expected, ctx) {
            let key = ctx.codingPath.first?.stringValue ?? "?"
            let wanted = ConfigType.describe(declaredType(of: key, in: T.self) ?? expected, key: key)
            throw TokenVaultError.config(
                "\(located.location(table: path, key: key)): \(dotted).\(key) must be \(wanted)")
        } catch {
            throw TokenVaultError.config("\(located.location(table: path, key: nil)): \(dotted): \(error)")
        }
    }

    /// The stored properties of a config table type, each with its declared
    /// type (reflected once per type and process: every provider table asks).
    static func fields<T>(of type: T.Type) -> [(key: String, type: Any.Type)] {
        switch type {
        case is ProviderConfig.Type: providerFields
        case is EtcdConfig.Type: etcdFields
        case is HooksConfig.Type: hooksFields
        default: []
        }
    }

    private static let providerFields = reflected(ProviderConfig())
    private static let etcdFields = reflected(EtcdConfig())
    private static let hooksFields = reflected(HooksConfig())

    private static func reflected(_ value: Any) -> [(key: String, type: Any.Type)] {
        Mirror(reflecting: value).children.compactMap { child in child.label.map { ($0, Swift.type(of: child.value)) } }
    }

    /// The keys a config table type knows.
    static func knownKeys<T>(of type: T.Type) -> [String] { fields(of: type).map(\.key).sorted() }

    /// The type `key` is declared with (`Optional<Array<String>>`), for the message.
    static func declaredType<T>(of key: String, in type: T.Type) -> Any.Type? {
        fields(of: type).first { $0.key == key }?.type
    }
}

/// Every mistake of one config table, each named at its own line (78).
struct ConfigMistakes: Error {
    /// Each mistake with the line it is on (0: the file as a whole).
    var found: [(line: Int, error: TokenVaultError)]

    init(_ found: [(line: Int, error: TokenVaultError)]) { self.found = found.sorted { $0.line < $1.line } }

    var all: [TokenVaultError] { found.map(\.error) }

    /// The first mistake as the error, the others shown beneath it.
    func error(hint: String?) -> TokenVaultError {
        guard all.count > 1 else {
            if let hint, case .config(let m, nil) = all[0] { return .config(m, hint: hint) }
            return all[0]
        }
        return .configDetail(all[0].errorText, excerpt: all.dropFirst().map(\.errorText), hint: hint)
    }
}
