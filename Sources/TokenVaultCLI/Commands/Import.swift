import ArgumentParser
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    /// Stores what an export holds (docs/FORMAT.md, "An export"): each
    /// credential under its service, the provider tables it needs added to
    /// the config where they are missing. Nothing stored is replaced without
    /// --force, and a newer stored credential always wins.
    struct Import: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Store the credentials of an export, or of another tool's plaintext file, in the backend.",
            discussion: """
                SOURCE is a file tokenvault export wrote (its passphrase is asked on the terminal, or read from \
                --passphrase-file; provider tables it carries are added to config.toml where no table of that \
                name exists), or git-credentials (git's credential store, ~/.git-credentials), netrc \
                (~/.netrc) or gh (gh's hosts.yml, where gh keeps tokens in the file), each read from --from \
                PATH when given; or mcp-remote URL or fastmcp URL (the login mcp-remote or FastMCP keeps for \
                the MCP server at URL: its client registration and tokens, stored as tokenvault login URL \
                would have; FastMCP's CLI keeps them where FASTMCP_OAUTH_ENCRYPTION_KEY is set, an \
                application's FileTreeStore is named with --from DIR). A token for a host a provider claims for git \
                (github.com) is stored under that provider's service (api.github.com), else under the host. \
                A credential already stored is kept unless --force; one stored that is newer than the \
                imported one is kept even then. --remove-source deletes each secret from the plaintext file \
                once it is stored and read back. --dry-run says what would be done and changes nothing.
                """)

        @Argument(
            help: ArgumentHelp("An export, or git-credentials, netrc, gh, mcp-remote or fastmcp.", valueName: "source"),
            completion: .list(PlaintextSource.allCases.map(\.rawValue) + MCPClientTool.allCases.map(\.rawValue)))
        var source: String

        @Argument(
            help: ArgumentHelp(
                "With mcp-remote or fastmcp: the MCP server's URL, as the tool was given it.", valueName: "url"))
        var url: String?

        @Option(
            help: ArgumentHelp(
                "Where the source is read from (default: its usual file or directory).", valueName: "path"))
        var from: String?

        @Flag(help: "Delete each imported secret from the plaintext source once it is stored and read back.")
        var removeSource = false

        @Option(help: ArgumentHelp("A file only you can read holding the export's passphrase.", valueName: "path"))
        var passphraseFile: String?

        @Flag(help: "Replace a stored credential (never one newer than the export's).")
        var force = false

        @Flag(help: "Say what would be imported; change nothing.")
        var dryRun = false

        @Flag(help: "Print what was done as JSON: imported, kept, providers_added.")
        var json = false

        func validate() throws {
            if MCPClientTool(rawValue: source) != nil {
                guard url != nil else {
                    throw ValidationError("\(source) needs the server's URL: tokenvault import \(source) URL")
                }
                if passphraseFile != nil { throw ValidationError("--passphrase-file goes with an export") }
                return
            }
            if url != nil { throw ValidationError("a URL goes with mcp-remote or fastmcp only") }
            if PlaintextSource(rawValue: source) == nil, from != nil || removeSource {
                throw ValidationError("--from and --remove-source go with another tool's logins, not an export")
            }
            if PlaintextSource(rawValue: source) != nil, passphraseFile != nil {
                throw ValidationError("--passphrase-file goes with an export")
            }
        }

        func run(in context: Session) throws {
            if let tool = PlaintextSource(rawValue: source) { return try importPlaintext(tool, context: context) }
            if let tool = MCPClientTool(rawValue: source), let url {
                return try importMCPClient(tool, url, context: context)
            }
            let bytes = try read(source)
            guard ExportFile.looksLikeOne(bytes) else {
                throw TokenVaultError.badInput(
                    "\(source) is not a tokenvault export (tokenvault export FILE makes one)")
            }
            let header = try ExportFile.header(bytes)
            let passphrase = try ExportFile.passphrase(file: passphraseFile, confirm: false)
            guard let contents = try ExportFile.open(bytes, header: header, passphrase: passphrase) else {
                throw TokenVaultError.permission(
                    "wrong passphrase for the export \(source)", hint: "it is the passphrase given to tokenvault export"
                )
            }
            // The provider tables first: a credential is stored only where its provider is known.
            let config = try context.config
            let known = Set(config.providers.keys).union(config.discoveredProviders)
            let missing = ExportFile.tables(in: contents.providers).filter { !known.contains($0.name) }
            if !dryRun, !missing.isEmpty {
                try ExportFile.addToConfig(missing.map(\.text).joined(separator: "\n"), settings: context.settings)
            }
            let outcomes = try store(contents.credentials, context: context)
            var more: [String] = []
            if !missing.isEmpty {
                more.append(
                    "\(dryRun ? "would add" : "added") [providers.\(missing.map(\.name).joined(separator: "], [providers."))] to \(context.settings.configPath)"
                )
            }
            if outcomes.isEmpty, more.isEmpty { more.append("the export holds nothing") }
            report(outcomes, more: more, providersAdded: missing.map(\.name), context: context)
        }

        /// What became of one credential of a source.
        private struct Outcome {
            var shown: String
            /// Why it was kept out; nil: imported (or, with --dry-run, it would be).
            var kept: String?

            static let alreadyStored = "already stored"

            /// Stored now, by this import or before it: its copy may leave the source.
            var isStored: Bool { kept == nil || kept == Self.alreadyStored }
        }

        /// The import's lines (what was imported, each with `note`, then what
        /// was kept, then `more`) and its JSON.
        private func report(
            _ outcomes: [Outcome], note: String = "", more: [String], providersAdded: [String], context: Session
        ) {
            let verb = dryRun ? "would import" : "imported"
            let imported = outcomes.filter { $0.kept == nil }.map(\.shown)
            let kept = outcomes.compactMap { o in o.kept.map { "\(o.shown): \($0)" } }
            let lines = imported.map { "\(verb) \($0)\(note)" } + kept.map { "kept \($0)" } + more
            context.result(
                lines.joined(separator: "\n"), json: json,
                [
                    "imported": .array(imported.map { .string($0) }), "kept": .array(kept.map { .string($0) }),
                    "providers_added": .array(providersAdded.map { .string($0) }), "dry_run": .bool(dryRun),
                ])
        }

        /// Stores each credential unless one is stored (kept without --force)
        /// or a newer one is (kept always); what became of each, in order.
        private func store(_ credentials: [Credential], context: Session) throws -> [Outcome] {
            let vault = try context.vault()
            return try credentials.map { c in
                let shown = c.id.isRegistration ? "the client registration of \(c.service)" : "\(c.id)"
                if let stored = try vault.load(c.id) {
                    let why: String? =
                        stored.accessToken == c.accessToken && stored.refreshToken == c.refreshToken
                        ? Outcome.alreadyStored
                        : stored.isNewer(than: c)
                            ? "a newer one is stored" : force ? nil : "one is stored (--force replaces it)"
                    if let why { return Outcome(shown: shown, kept: why) }
                }
                if !dryRun { try vault.write(c) }
                return Outcome(shown: shown, kept: nil)
            }
        }

        /// git's credential store or a .netrc: each secret stored as a token of
        /// the service a provider claims its host under (for git), else of the host.
        private func importPlaintext(_ tool: PlaintextSource, context: Session) throws {
            let path = from ?? tool.defaultPath(context.settings)
            let text = String(decoding: try read(path), as: UTF8.self)
            var more: [String] = []
            let found = try readKeyring(try tool.parse(text, path: path), notes: &more, context: context)
            let directory = try context.providers
            let now = context.clock.now
            var credentials: [Credential] = []
            var accounts: [ServiceKey: Int] = [:]
            for f in found {
                let claimed = try directory.gitProviders(
                    protocol: f.proto, host: f.host, configPath: context.settings.configPath
                ).first
                let service: ServiceKey
                do { service = try claimed?.service ?? ServiceKey(parsing: f.host) } catch {
                    throw TokenVaultError.badInput(
                        "\(path):\(f.line): \(Quoted.text(f.host)) is no host; nothing was imported")
                }
                // The first login of a service is its default account; more are kept apart by their user names.
                accounts[service, default: 0] += 1
                let account = accounts[service] == 1 || f.user.isEmpty ? Credential.defaultAccount : f.user
                credentials.append(
                    Credential(
                        service: service, account: account, type: .token, provider: claimed?.provider,
                        accessToken: f.secret, extra: f.user.isEmpty ? [:] : ["login": .string(f.user)],
                        updatedAt: now))
            }
            // Every secret checked as a stored record is before any is stored: all or nothing.
            for (c, f) in zip(credentials, found) {
                do { _ = try Credential.fromRecord(c.recordJSON(), id: c.id) } catch {
                    throw TokenVaultError.badInput(
                        "\(path):\(f.line): the secret for \(f.user.isEmpty ? f.host : "\(f.user)@\(f.host)") cannot be kept as a token (it contains white space or control characters); nothing was imported"
                    )
                }
            }
            let outcomes = try store(credentials, context: context)
            let inFile = found.filter { !$0.inKeyring }
            if found.isEmpty, more.isEmpty { more.append("\(path) holds no secret") }
            // What is stored now (imported, or there already) leaves the plaintext file.
            let stored = zip(found, outcomes).filter { $1.isStored }.map(\.0)
            let storedInFile = stored.filter { !$0.inKeyring }
            if removeSource, !dryRun, !storedInFile.isEmpty {
                guard let rest = PlaintextSource.removing(storedInFile, from: text, all: inFile) else {
                    throw TokenVaultError.badInput(
                        "\(path): an imported entry shares its lines with one that stays; the file was left as it was")
                }
                try AtomicFile.replace(path, with: Array(rest.utf8), what: "the plaintext source")
                more.append(
                    "removed \(storedInFile.count) secret\(storedInFile.count == 1 ? "" : "s") from \(path)")
            } else if !inFile.isEmpty {
                more.append(
                    "\(path) still holds \(inFile.count) secret\(inFile.count == 1 ? "" : "s") in plaintext: tokenvault import \(tool.rawValue)\(from.map { " --from \(ShellWord.word($0))" } ?? "") --remove-source deletes those stored"
                )
            }
            if removeSource, stored.contains(where: \.inKeyring) {
                more.append(
                    "gh's keyring items stay as they are: tokenvault never deletes another application's item (gh auth logout deletes gh's)"
                )
            }
            report(outcomes, more: more, providersAdded: [], context: context)
        }

        /// gh's accounts whose token gh keeps in its keyring item (go-keyring's,
        /// in the Secret Service), read there and never changed; one that
        /// cannot be read is left out with a line saying why.
        private func readKeyring(
            _ found: [PlaintextSource.Found], notes: inout [String], context: Session
        ) throws -> [PlaintextSource.Found] {
            guard found.contains(where: \.inKeyring) else { return found }
            let keyring = Result { try context.backends.otherApplications() }
            var read: [PlaintextSource.Found] = []
            for var f in found {
                guard f.inKeyring else {
                    read.append(f)
                    continue
                }
                let who = f.user.isEmpty ? f.host : "\(f.user)@\(f.host)"
                do {
                    let store = try keyring.get()
                    for attributes in PlaintextSource.ghKeyringItems(f) where f.secret.isEmpty {
                        f.secret =
                            try store.otherApplicationsSecret(attributes, what: "gh's keyring item for \(who)") ?? ""
                    }
                } catch {
                    notes.append(
                        "kept out \(who): gh keeps its token in the Secret Service, which could not be read (\((error as? TokenVaultError)?.errorDescription ?? "\(error)"))"
                    )
                    continue
                }
                if f.secret.isEmpty {
                    notes.append(
                        "kept out \(who): gh keeps no token for it in the keyring (gh auth login logs in again)")
                    continue
                }
                read.append(f)
            }
            return read
        }

        /// An MCP client's login for `url`: its client registration kept as
        /// one tokenvault made, the resource's provider table as `login URL`
        /// keeps it, and the tokens stored under the URL, so that the bridge
        /// uses them and their expiry renews through that client.
        private func importMCPClient(_ tool: MCPClientTool, _ url: String, context: Session) throws {
            guard let base = from ?? tool.base(context.settings),
                let login = try tool.find(url: url, base: base, settings: context.settings)
            else {
                throw TokenVaultError.notFound(
                    service: url, account: "", hint: tool.nothingFound(base: from ?? tool.base(context.settings)))
            }
            let transport = CurlTransport(timeout: try context.httpTimeout, proxies: context.proxies)
            let server = try ResourceDiscovery.discover(url, transport: transport)
            let config = try context.config
            let key = try ServiceKey(resource: url)
            let name = try DiscoveredProviders.providerName(for: server, config: config, given: nil)
            let scopes = (login.scope ?? "").split(separator: " ").map(String.init)
            let registration = ClientRegistration(
                issuer: server.issuer, clientID: login.clientID, clientSecret: login.clientSecret,
                redirectURI: login.redirectURI, registeredAt: context.clock.now, scopes: scopes,
                tokenEndpointAuthMethod: login.tokenEndpointAuthMethod)
            let table = ResourceLogin.table(
                for: server, service: key, clientID: login.clientID,
                clientAuth: ClientAuthChoice.decide(
                    configured: nil, registered: login.tokenEndpointAuthMethod,
                    serverLists: server.tokenEndpointAuthMethods, hasSecret: login.clientSecret != nil, hasKey: false),
                scopes: scopes)
            var c = Credential(
                service: key, account: context.settings[.account] ?? Credential.defaultAccount, type: .oauth2,
                provider: name,
                accessToken: login.accessToken, refreshToken: login.refreshToken, tokenType: login.tokenType,
                scope: login.scope, expiresAt: login.expiresAt, updatedAt: context.clock.now)
            c.issuer = server.issuer
            _ = try Credential.fromRecord(c.recordJSON(), id: c.id)
            if !dryRun {
                try context.vault().keep(registration)
                try context.addProvider(name, table, kept: true)
                try DiscoveredProviders.keepResource(name: name, table: table, settings: context.settings)
            }
            let outcomes = try store([c], context: context)
            let more: String
            if removeSource, !dryRun, outcomes.allSatisfy(\.isStored) {
                for file in login.files { unlink(file) }
                more = "removed \(tool.name)'s files for \(url) from \(base)"
            } else {
                more =
                    "\(tool.name)'s files for \(url) in \(base) still hold its tokens\(login.encrypted ? " (encrypted)" : " in plaintext"): add --remove-source to delete them"
            }
            report(
                outcomes, note: " (\(tool.name)'s login, its client \(login.clientID) kept)", more: [more],
                providersAdded: dryRun ? [] : [name], context: context)
        }

        /// The file's bytes; 64 when it cannot be read.
        private func read(_ path: String) throws -> [UInt8] {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw TokenVaultError.usage(
                    "cannot read \(path): \(String(cString: strerror(errno)))", hint: "give the path of an export")
            }
            guard data.count <= 1 << 30 else { throw TokenVaultError.badInput("\(path) is larger than 1 GiB") }
            return Array(data)
        }
    }
}
