import Dispatch
import FoundationEssentials
import Glibc

/// `providers.toml`: the providers `login --issuer` added, one table each.
/// A login adds its table under a lock, appending to the file as it is (every
/// key and comment a user added stays); it never rewrites a table of another
/// issuer (docs/security.md).
public enum DiscoveredProviders {
    /// A provider name for an issuer: its host's labels, its port, and its path
    /// segments, joined by "-" (https://idp.example.com:8443/realms/ops →
    /// idp-example-com-8443-realms-ops).
    public static func name(for issuer: String) -> String {
        guard let c = URLComponents(string: issuer), let host = c.host, !host.isEmpty else { return "issuer" }
        var parts = [host]
        if let port = c.port { parts.append(String(port)) }
        parts += c.path.split(separator: "/").map(String.init)
        let joined = parts.joined(separator: "-").lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" }
        return String(joined).split(separator: "-").joined(separator: "-")
    }

    /// The derived name with a short hash of the URL, for when another provider has it.
    public static func hashedName(for url: String) -> String {
        name(for: url) + "-" + Hex.encode(Sodium.hash(Array(url.utf8))).prefix(6)
    }

    /// The name a `login --issuer` keeps its provider under. `given` (the
    /// positional name or `--name`) is used as it is, and refused (64) when a
    /// preset, config.toml, or another issuer's table in providers.toml has it.
    /// A derived name that another issuer holds (two issuers may read alike:
    /// `a.b` and `a-b`) gets a short hash of the issuer appended.
    public static func choose(given: String?, issuer: String, clientID: String, config: Config) throws -> String {
        let derived = name(for: issuer)
        var candidates = [given ?? derived]
        if given == nil { candidates.append(hashedName(for: issuer)) }
        var conflict: TokenVaultError?
        for name in candidates {
            guard let e = conflictError(name: name, issuer: issuer, clientID: clientID, config: config) else {
                return name
            }
            conflict = conflict ?? e
        }
        throw conflict!
    }

    /// Why `name` cannot be kept for this issuer and client, or nil.
    static func conflictError(name: String, issuer: String, clientID: String, config: Config) -> TokenVaultError? {
        let again =
            "tokenvault login --issuer \(ShellWord.word(issuer)) --client-id \(ShellWord.word(clientID)) --name OTHER"
        if ProviderPreset.named(name) != nil
            || (config.providers[name] != nil && !config.discoveredProviders.contains(name))
        {
            return .usage(
                "a provider named \(name) exists already; log in to it with: tokenvault login \(ShellWord.word(name))",
                hint: "or keep this issuer under another name: \(again)")
        }
        guard let existing = config.providers[name] else { return nil }
        if existing.issuer != issuer {
            return .usage(
                "provider \(name) already logs in to \(Quoted.text(existing.issuer ?? "?")); this login is for \(Quoted.text(issuer)), and an existing name is never pointed at another issuer",
                hint: "keep it under another name: \(again)")
        }
        if existing.client_id != clientID {
            return .usage(
                "provider \(name) logs in to \(Quoted.text(issuer)) with client id \(Quoted.text(existing.client_id ?? "")), not \(Quoted.text(clientID))",
                hint:
                    "log in with: tokenvault login \(ShellWord.word(name)); or keep the other client under another name: \(again)"
            )
        }
        return nil
    }

    /// Keeps `[providers.NAME]` (issuer and client_id) in providers.toml, once
    /// the login worked. Under the file's lock the file is read again, the
    /// choice checked again (a concurrent login may have taken the name), and
    /// the table appended; a table already there for the same issuer and
    /// client is left as it is.
    public static func add(name: String, issuer: String, clientID: String, settings: Settings) throws {
        try editingFile(settings) { text, tables in
            if let error = conflictError(name: name, issuer: issuer, clientID: clientID, config: tables) { throw error }
            if tables.providers[name] != nil { return }
            if !text.hasSuffix("\n") { text += "\n" }
            text +=
                "\n[providers.\(try quoted(name))]\nissuer = \(try quoted(issuer))\nclient_id = \(try quoted(clientID))\n"
        }
    }

    /// Edits providers.toml under its lock: `edit` gets its text and its
    /// tables as read now, and may change the text; changed text is checked
    /// to parse, then replaces the file at once.
    static func editingFile(_ settings: Settings, _ edit: (inout String, Config) throws -> Void) throws {
        let path = settings.discoveredProvidersPath
        let directory = Posix.dirname(path)
        try PrivateDirectory.createWithParents(directory)
        try FileLock.holding(directory + "/.providers.toml.lock") {
            var text = ""
            var tables = Config()
            if let data = try TrustedFile.read(path, what: "the providers file") {
                guard let t = String(validating: data, as: UTF8.self) else {
                    throw TokenVaultError.config("\(path) is not UTF-8 text")
                }
                text = t
                let parsed = try Config.parse(text, path: path)
                tables.providers = parsed.providers
                tables.discoveredProviders = Set(parsed.providers.keys)
            }
            let before = text
            if text.isEmpty {
                text =
                    "# Providers added by `tokenvault login --issuer` and `tokenvault login URL`; edit or remove freely.\n"
            }
            let header = text
            try edit(&text, tables)
            guard text != before, text != header else { return }
            _ = try Config.parse(text, path: path)
            try AtomicFile.replace(path, with: Array(text.utf8), what: "the providers file")
        }
    }

    /// A TOML basic string; a value with a control character is refused, not escaped.
    static func quoted(_ s: String) throws -> String {
        guard !s.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw TokenVaultError.usage("\(Quoted.text(s)) contains a control character")
        }
        return Config.tomlString(s)
    }
}

extension DiscoveredProviders {
    /// Keeps the table of a resource logged in to by its URL in
    /// providers.toml (issuer, resource, service, the public client id, its
    /// authentication, scopes, and the endpoints of a server that publishes no
    /// metadata; the client's secret stays in the backend). A table of the same name for the same
    /// resource is replaced (its authorization server or scopes changed); one
    /// for anything else keeps its name.
    public static func keepResource(name: String, table: ProviderConfig, settings: Settings) throws {
        try editingFile(settings) { text, tables in
            let header = "[providers.\(try quoted(name))]"
            if let existing = tables.providers[name] {
                guard existing.resource == table.resource else {
                    throw TokenVaultError.usage(
                        "provider \(name) already stands for \(Quoted.text(existing.resource ?? existing.issuer ?? "?"))",
                        hint: "keep this resource under another name: --name OTHER")
                }
                if existing == table { return }
                text = try removingTable(header, from: text, path: settings.discoveredProvidersPath)
            }
            var lines = [header]
            for (key, value) in [
                ("issuer", table.issuer), ("resource", table.resource), ("service", table.service),
                ("client_id", table.client_id), ("client_auth", table.client_auth),
                ("authorize_url", table.authorize_url), ("token_url", table.token_url),
            ] {
                if let value { lines.append("\(key) = \(try quoted(value))") }
            }
            lines.append("scopes = [\(try (table.scopes ?? []).map(quoted).joined(separator: ", "))]")
            if table.dpop == true { lines.append("dpop = true") }
            if !text.hasSuffix("\n") { text += "\n" }
            text += "\n" + lines.joined(separator: "\n") + "\n"
        }
    }

    /// `text` without the table that starts at `header` (up to the next table).
    static func removingTable(_ header: String, from text: String, path: String) throws -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(where: { $0.trimmedSpaces() == header }) else {
            throw TokenVaultError.config(
                "\(path) has the table \(header) written in a way tokenvault does not rewrite",
                hint: "remove that table from \(path), then log in again")
        }
        var end = start + 1
        while end < lines.count, !lines[end].trimmedSpaces().hasPrefix("[") { end += 1 }
        lines.removeSubrange(start..<end)
        return lines.joined(separator: "\n")
    }
}

extension DiscoveredProviders {
    /// The provider name a resource is kept under: `given` (`login --name`),
    /// else the name it was kept under before, else one derived from its URL
    /// (with a short hash when another provider has that one).
    public static func providerName(for server: ResourceServer, config: Config, given: String?) throws -> String {
        func free(_ candidate: String) -> Bool {
            guard ProviderPreset.named(candidate) == nil else { return false }
            guard let t = config.providers[candidate] else { return true }
            return config.discoveredProviders.contains(candidate) && t.resource == server.resource
        }
        if let given = given?.lowercased() {
            guard free(given) else {
                throw TokenVaultError.usage(
                    "a provider named \(given) exists already and is not \(OutsideText.line(server.resource))",
                    hint: "choose another: --name OTHER")
            }
            return given
        }
        if let kept = config.discoveredProviders.sorted().first(where: {
            config.providers[$0]?.resource == server.resource
        }) {
            return kept
        }
        let derived = name(for: server.resource)
        if free(derived) { return derived }
        return hashedName(for: server.resource)
    }
}
