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
    /// Hours after a client last asked for a credential that the agent keeps renewing it ahead of need (docs/agent.md; default 24).
    public var agentKeep: Int?
    /// False: no command starts the agent on first use (docs/agent.md; default true).
    public var agent: Bool?
    /// Seconds without a request after which an agent started on first use
    /// stops (docs/agent.md; default 3600, 0: never).
    public var agentIdle: Int?
    /// Seconds a `*_command` secret source may run before it is ended
    /// (docs/config.md; default 30).
    public var commandTimeout: Int?
    /// `key_ttl`: seconds the vault key stays cached (docs/config.md).
    public var keyTTL: Int?
    /// Where tokenvault's client metadata document is hosted, for every
    /// authorization server that fetches one (docs/providers.md, "Login by URL").
    public var clientMetadataURL: String?
    public var providers: [String: ProviderConfig] = [:]
    /// The `[etcd]` table (docs/fleet.md).
    public var etcd: EtcdConfig?
    /// The `[hooks]` table (docs/agent.md); nil when absent or when it has a mistake (a warning says so).
    public var hooks: HooksConfig?
    /// Names of providers that came from providers.toml (`login --issuer`).
    public var discoveredProviders: Set<String> = []
    /// Provider tables with a mistake: the error each use of that provider
    /// gets (78); every other command works.
    public var brokenProviders: [String: TokenVaultError] = [:]
    /// The `[etcd]` table's mistake, for the etcd backend (78).
    public var etcdProblem: TokenVaultError?
    /// One line per mistake that does not stop every command (`file:line: …`).
    public var warnings: [String] = []
    /// Where its `*_command` secret sources run and its relative secret
    /// files are found: the settings' (`Settings.child`), given at each load.
    public var child = ChildContext()

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

    /// `agent_keep`, in seconds.
    public var agentKeepSeconds: Int64 { Int64(agentKeep ?? 24) * 3600 }

    /// `agent`: whether a command starts the agent on first use.
    public var startsAgent: Bool { agent ?? true }

    /// `agent_idle`, in seconds (0: never).
    public var agentIdleSeconds: Int64 { Int64(agentIdle ?? 3600) }

    /// Loads the config file; a missing file is an empty config.
    /// `cache`: the agent's, which reads the files again only when one changed.
    public static func load(_ settings: Settings, cache: ConfigCache? = nil) throws -> Config {
        try load(settings, headStart: Result { try loadNow(settings, cache: cache) })
    }

    /// The config as `read` (now, or by the run's head start) found it, for `settings`.
    static func load(_ settings: Settings, headStart read: Result<Config, Error>) throws -> Config {
        var config = try read.get()
        config.child = settings.child
        config.child.timeLimit = config.commandTimeout.map(Double.init) ?? ChildContext.defaultTimeLimit
        return config
    }

    /// A file as it is, and the owner and mode of each directory above it
    /// and above where it links to: a directory others came to be able to
    /// write makes the file untrusted (docs/security.md), so the config is
    /// read, and checked, again.
    private static func identity(_ path: String) -> String {
        var st = stat()
        guard stat(path, &st) == 0 else { return "\(path): none" }
        var id = "\(path): \(Posix.identity(st))"
        var paths = [path]
        if let real = realpath(path, nil) {
            paths.append(String(cString: real))
            free(real)
        }
        for each in paths {
            var dir = Substring(each)
            while let slash = dir.lastIndex(of: "/"), slash > dir.startIndex {
                dir = dir[..<slash]
                guard stat(String(dir), &st) == 0 else { break }
                id += " \(st.st_uid):\(st.st_mode)"
            }
        }
        return id
    }

    static func loadNow(_ settings: Settings, cache: ConfigCache? = nil) throws -> Config {
        guard let cache else { return try readFiles(settings) }
        let files = [identity(settings.configPath), identity(settings.discoveredProvidersPath)]
        if let cached = cache.last.withLock({ $0 }), cached.files == files { return cached.config }
        let config = try readFiles(settings)
        cache.last.withLock { $0 = (files, config) }
        return config
    }

    private static func readFiles(_ settings: Settings) throws -> Config {
        var config = try loadFile(settings.configPath)
        let discovered = try loadFile(settings.discoveredProvidersPath)
        config.discoveredProviders = Set(discovered.providers.keys).union(discovered.brokenProviders.keys)
        for (name, table) in discovered.providers {
            config.providers[name] = table.overlaid(by: config.providers[name])
        }
        config.brokenProviders.merge(discovered.brokenProviders) { own, _ in own }
        config.warnings += discovered.warnings
        config.expandHome(settings)
        return config
    }

    /// Every `*_file` setting with `~/` standing for the user's home
    /// (docs/config.md): expanded once, here, from the caller's settings.
    mutating func expandHome(_ settings: Settings) {
        for (name, var t) in providers {
            for field in [
                \ProviderConfig.client_secret_file, \.consumer_secret_file, \.private_key_file, \.credentials_file,
                \.assertion_file, \.subject_token_file,
            ] {
                t[keyPath: field] = t[keyPath: field].map(settings.expandingHome)
            }
            providers[name] = t
        }
        if var e = etcd {
            for field in [\EtcdConfig.password_file, \.ca_file, \.cert_file, \.key_file] {
                e[keyPath: field] = e[keyPath: field].map(settings.expandingHome)
            }
            etcd = e
        }
    }

    /// Sets `backend = "VALUE"` in the config file, keeping every other line,
    /// comment and order as it is: the top-level `backend` line is replaced,
    /// or one is put before the first table; a missing file is created (0600).
    /// Throws (the caller prints the line to add) when the file cannot be
    /// read or written, or the edit would not read back as that setting.
    /// The line `migrate` leaves above the one it wrote: what `backend` was
    /// before, and where the credentials were, so that migrating back puts it
    /// back as it was (docs/config.md).
    static let migrateNote = "# tokenvault migrate: backend was "

    /// Sets `backend = VALUE` for `migrate --to VALUE` from the backend named
    /// `source`. Migrating back to where a migrate took them from restores the
    /// setting that was there before it (unset or `auto` included) instead;
    /// the setting restored, or nil when VALUE was written.
    @discardableResult
    public static func setBackend(_ value: String, _ settings: Settings, from source: String? = nil) throws -> String? {
        let path = settings.configPath
        let line = "backend = \"\(value)\""
        var lines =
            (try text(of: path)).map { $0.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
            ?? []
        if lines.last == "" { lines.removeLast() }
        var firstTable = lines.firstIndex { $0.trimmedSpaces().hasPrefix("[") } ?? lines.endIndex
        var existing = lines[..<firstTable].firstIndex { l in
            let t = l.trimmedSpaces()
            return t.hasPrefix("backend") && t.dropFirst("backend".count).trimmedSpaces().hasPrefix("=")
        }
        let was = existing.flatMap { try? TOMLTable(string: lines[$0])["backend"]?.string } ?? "unset"
        // "# tokenvault migrate: backend was auto, credentials in secret-service"
        let noteAt = lines[..<firstTable].firstIndex { $0.hasPrefix(migrateNote) }
        let note = noteAt.map {
            lines[$0].dropFirst(migrateNote.count).split(separator: ",").map { $0.trimmedSpaces() }
        }
        var restored: String?
        let back = note.map { $0.count == 2 && $0[1] == "credentials in \(value)" } ?? false
        // The setting that was is put back only where it chooses VALUE again: an
        // unset or `auto` backend chooses the Secret Service while one answers,
        // so going back to the file writes `file` (docs/config.md).
        let restorable =
            back
            && (note?[0] == value
                || (["unset", "auto"].contains(note?[0]) && value == BackendChoice.secretService.rawValue))
        if back, !restorable, let noteAt {
            lines.remove(at: noteAt)
            firstTable -= 1
            if let e = existing, e > noteAt { existing = e - 1 }
        }
        if restorable, let noteAt, let note {
            // Back where they came from: the setting that was there before.
            restored = note[0]
            lines.remove(at: noteAt)
            firstTable -= 1
            if let e = existing, e > noteAt { existing = e - 1 }
            if note[0] == "unset" {
                if let existing { lines.remove(at: existing) }
            } else if let existing {
                lines[existing] = "backend = \"\(note[0])\""
            } else {
                lines.insert("backend = \"\(note[0])\"", at: firstTable)
            }
        } else {
            if let existing { lines[existing] = line } else { lines.insert(line, at: firstTable) }
            // Noted only where the setting pointed at the credentials' backend (itself, or auto,
            // which picks a local one): going back there then means going back to it.
            if noteAt == nil || back, let source, source != value,
                was == source || (["unset", "auto"].contains(was) && source != BackendChoice.etcd.rawValue)
            {
                let at = existing ?? firstTable
                lines.insert(migrateNote + "\(was), credentials in \(source)", at: at)
            }
        }
        let edited = lines.joined(separator: "\n") + (lines.isEmpty ? "" : "\n")
        let expected = restored.map { $0 == "unset" ? nil : $0 } ?? value
        guard try TOMLTable(string: edited)["backend"]?.string == expected else {
            throw TokenVaultError.config("\(path): the backend line could not be edited safely")
        }
        try PrivateDirectory.createWithParents(Posix.dirname(path))
        try AtomicFile.replace(path, with: Array(edited.utf8), what: "the config file")
        return restored
    }

    /// `name` as a TOML key: bare when it can be (letters, digits, `-`, `_`),
    /// else a quoted string, so a hint that shows a table header is valid TOML.
    public static func tableKey(_ name: String) -> String {
        let bare =
            !name.isEmpty
            && name.unicodeScalars.allSatisfy {
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

    /// The backend as `TOKENVAULT_BACKEND` and the config's `backend` setting
    /// alone choose it (`backendSetting`); nil when either is not valid (the
    /// command reports that). The head starts of a `get` decide with it.
    public static func backendChoice(_ settings: Settings) -> BackendChoice? {
        try? settings.backend {
            var c = Config()
            c.backend = try backendSetting(settings)
            return c
        }.choice
    }

    /// The `backend` setting alone, parsed by TOMLKit without decoding the
    /// rest: the `get` head start decides with it while the command loads
    /// the whole config. nil when not set or not a string (the command's own
    /// load reports a bad file). A file whose text cannot spell the key (no
    /// `backend`, and no `\u` escape that could write it in a quoted key)
    /// does not set it, and is not parsed here: the head start's first
    /// millisecond (docs/benchmarks.md, "Secret Service head start").
    public static func backendSetting(_ settings: Settings) throws -> String? {
        guard let text = try text(of: settings.configPath) else { return nil }
        guard mayName("backend", text) else { return nil }
        return try TOMLTable(string: text)["backend"]?.string
    }

    /// `key_ttl` alone, read as `backendSetting` reads `backend`: the vault's
    /// read ahead needs it, and must not decode the whole config beside the
    /// command's own load. nil when not set. A value that is not one is
    /// reported by the whole file's load (78, naming its line).
    static func keyTTLSetting(_ settings: Settings) throws -> Int? {
        guard let text = try text(of: settings.configPath), mayName("key_ttl", text),
            let value = try TOMLTable(string: text)["key_ttl"]
        else { return nil }
        guard value.type == .int, let n = value.int, Settings.keyTTLRange.contains(n) else {
            return try load(settings).keyTTL
        }
        return n
    }

    /// Whether `text` holds `key`, or an escape (`\u`, `\U`) that a quoted key could spell it with.
    static func mayName(_ key: String, _ text: String) -> Bool {
        let needle = Array(key.utf8)
        var text = text
        return text.withUTF8 { bytes in
            guard bytes.count >= needle.count else { return false }
            for i in bytes.indices {
                if bytes[i] == UInt8(ascii: "\\"), i + 1 < bytes.count,
                    bytes[i + 1] == UInt8(ascii: "u") || bytes[i + 1] == UInt8(ascii: "U")
                {
                    return true
                }
                if i + needle.count <= bytes.count, bytes[i] == needle[0],
                    needle.indices.allSatisfy({ bytes[i + $0] == needle[$0] })
                {
                    return true
                }
            }
            return false
        }
    }

    private static func loadFile(_ path: String) throws -> Config {
        guard let text = try text(of: path) else { return Config() }
        return try parse(text, path: path)
    }

    /// A config file's text, checked like every trusted file; nil when there is none.
    static func text(of path: String) throws -> String? {
        guard let data = try TrustedFile.read(path, what: "the config file") else { return nil }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw TokenVaultError.config("the config file \(path) is not UTF-8 text")
        }
        return text
    }

    /// The top-level settings.
    static let settings = [
        "backend", "min_valid", "timeout", "warn_before", "agent_keep", "agent", "agent_idle", "command_timeout",
        "key_ttl",
        "providers", "etcd", "hooks", "client_metadata_url",
    ]
}

/// The config last read, and the files it came from as they were then: the
/// agent owns one (`AgentCaches`) and reads the files again only when one
/// changed (another inode, size, or change time, or a directory above it
/// that someone else came to be able to write). A command reads them once.
public final class ConfigCache: Sendable {
    let last = Locked<(files: [String], config: Config)?>(nil)

    public init() {}
}
