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
        try c.readTopLevel(root, located: located)
        if let v = root["providers"] {
            guard let providers = v.table else {
                throw TokenVaultError.config(
                    "\(located.location(table: [], key: "providers")): providers must be a table of providers, e.g. [providers.NAME]"
                )
            }
            for (name, value) in providers { c.readProvider(name, value, located: located) }
        }
        if let v = root["etcd"] { c.readEtcd(v, located: located) }
        if let v = root["hooks"] { c.readHooks(v, located: located) }
        return c
    }

    /// `backend`, `min_valid`, `timeout`, `warn_before`: a key the top level
    /// does not know (a misspelt `backend` would send tokens elsewhere), or a
    /// wrong value, stops every command.
    private mutating func readTopLevel(_ root: TOMLTable, located: ConfigText) throws {
        let settings = Config.settings
        for (key, _) in root where !settings.contains(key) {
            let close =
                Suggestion.closest(to: key, in: settings).map { "did you mean \($0)?" } ?? "settings: "
                + settings.joined(separator: ", ")
            throw TokenVaultError.config("\(located.location(table: [], key: key)): unknown setting \(key) (\(close))")
        }
        func wrong(_ key: String, _ expected: String) -> TokenVaultError {
            .config("\(located.location(table: [], key: key)): \(key) must be \(expected)")
        }
        func integer(_ key: String, _ valid: (Int) -> Bool, _ expected: String) throws -> Int? {
            guard let v = root[key] else { return nil }
            guard v.type == .int, let i = v.int, valid(i) else {
                throw wrong(key, expected + (v.type == .int ? "" : ", not " + Config.kind(v.type)))
            }
            return i
        }
        if let v = root["backend"] {
            guard let b = v.string else {
                throw wrong(
                    "backend", ConfigType.describe(String.self, key: "backend") + ", not " + Config.kind(v.type))
            }
            guard BackendChoice(rawValue: b) != nil else {
                let close =
                    Suggestion.closest(to: b, in: BackendChoice.allCases.map(\.rawValue)).map { "did you mean \($0)? " }
                    ?? ""
                throw TokenVaultError.config(
                    "\(located.location(table: [], key: "backend")): backend must be \(BackendChoice.spelled), not \(Quoted.text(b))",
                    hint: close.isEmpty ? nil : close + "fix backend in \(located.path)")
            }
            backend = b
        }
        minValid = try integer("min_valid", { $0 >= 0 }, "a whole number of seconds, 0 or more, e.g. min_valid = 60")
        timeout = try integer("timeout", { $0 > 0 }, "a positive whole number of seconds, e.g. timeout = 30")
        warnBefore = try integer(
            "warn_before", { $0 >= 0 }, "a whole number of seconds, 0 or more, e.g. warn_before = 604800")
        agentKeep = try integer(
            "agent_keep", { (0...8760).contains($0) }, "a whole number of hours from 0 to 8760, e.g. agent_keep = 24")
        agentIdle = try integer(
            "agent_idle", { $0 >= 0 }, "a whole number of seconds, 0 (never) or more, e.g. agent_idle = 3600")
        if let v = root["client_metadata_url"] {
            guard let s = v.string else {
                throw wrong("client_metadata_url", "an https URL, not " + Config.kind(v.type))
            }
            clientMetadataURL = s
        }
        if let v = root["agent"] {
            guard v.type == .bool, let b = v.bool else {
                throw wrong("agent", "true or false, not " + Config.kind(v.type))
            }
            agent = b
        }
    }

    /// One `[providers.NAME]` table; a mistake in it breaks only that provider.
    private mutating func readProvider(_ name: String, _ value: TOMLValueConvertible, located: ConfigText) {
        let table = ["providers", name]
        do {
            guard let t = value.table else {
                throw TokenVaultError.config(
                    "\(located.location(table: ["providers"], key: name)): providers.\(name) must be a table ([providers.\(Config.tableKey(name))])"
                )
            }
            let p = try Config.decodeTable(ProviderConfig.self, t, table: table, located: located)
            for (key, v) in [
                ("refresh_token_lifetime", p.refresh_token_lifetime), ("refresh_token_idle", p.refresh_token_idle),
            ] {
                if let v, v <= 0 {
                    throw TokenVaultError.config(
                        "\(located.location(table: table, key: key)): providers.\(name).\(key) must be a positive number of seconds"
                    )
                }
            }
            providers[name] = p
        } catch let error as TokenVaultError {
            brokenProviders[name] = error
            warnings.append("\(error.errorText); provider \(name) cannot be used until it is fixed")
        } catch {
            brokenProviders[name] = .config("\(located.path): providers.\(name): \(error)")
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

    /// One table decoded strictly; its mistake named with `file:line`, the
    /// key, did-you-mean for an unknown key, and the type a value must have.
    static func decodeTable<T: Decodable>(
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
    static func declaredType<T>(of key: String, in type: T.Type) -> Any.Type? {
        fields(of: type).first { $0.key == key }?.type
    }
}
