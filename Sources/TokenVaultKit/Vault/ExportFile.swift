import FoundationEssentials
import Glibc
internal import TOMLKit

/// What `tokenvault export` writes and `tokenvault import FILE` reads
/// (docs/FORMAT.md, "An export"): a file in the vault's own format, sealed
/// with a passphrase of its own. Its entries are the credentials, as the
/// vault keeps them, and one more entry (service `tokenvault export`, which
/// no service key can be) holds the config tables they need, as TOML text.
public enum ExportFile {
    static let providersService = "tokenvault export"
    static let providersAccount = "providers"

    /// What an export holds.
    public struct Contents: Sendable {
        public var credentials: [Credential]
        /// `[providers.NAME]` tables, TOML text; empty when none was needed.
        public var providers: String

        public init(credentials: [Credential], providers: String) {
            self.credentials = credentials
            self.providers = providers
        }
    }

    /// The file's bytes: `contents` sealed with a key `passphrase` derives
    /// (Argon2id, `params`), under a fresh salt and nonce.
    public static func seal(_ contents: Contents, passphrase: SecureBytes, params: KDFParams) throws -> [UInt8] {
        var vault = VaultContents()
        for c in contents.credentials { vault.put(c) }
        vault.putRaw(service: providersService, account: providersAccount, record: Array(contents.providers.utf8))
        let salt = Sodium.randomBytes(Sodium.saltBytes)
        let key = try KeyDerivation.argon2id.key(passphrase: passphrase, salt: salt, params: params)
        return try VaultFormat.seal(vault, key: key, salt: salt, params: params)
    }

    /// True when `bytes` start as a vault (and so an export) does.
    public static func looksLikeOne(_ bytes: [UInt8]) -> Bool {
        bytes.count >= VaultFormat.headerBytes && Array(bytes[0..<VaultFormat.magic.count]) == VaultFormat.magic
    }

    /// The header, checked before any passphrase is asked (74 when damaged).
    public static func header(_ bytes: [UInt8]) throws -> VaultFormat.Header {
        try VaultFormat.parseHeader(Array(bytes[0..<min(bytes.count, VaultFormat.headerBytes)]), fileSize: bytes.count)
    }

    /// What the file holds; nil when `passphrase` is not the one it was sealed with.
    public static func open(_ bytes: [UInt8], header: VaultFormat.Header, passphrase: SecureBytes) throws -> Contents? {
        let key = try KeyDerivation.argon2id.key(passphrase: passphrase, salt: header.salt, params: header.params)
        guard VaultFormat.keyMatches(key, header: header) else { return nil }
        let plain = try VaultFormat.open(bytes, header: header, key: key)
        defer { plain.wipe() }
        var contents = Contents(credentials: [], providers: "")
        for e in try plain.contents().entries {
            if e.service == providersService, e.account == providersAccount {
                contents.providers = String(decoding: e.record, as: UTF8.self)
                continue
            }
            contents.credentials.append(try Credential.fromRecord(Data(e.record), id: try e.id()))
        }
        return contents
    }

    /// The `[providers.NAME]` tables (with their sub-tables) of the config
    /// files, as their text: the config's own, else the discovered one's.
    public static func providerTables(_ names: Set<String>, settings: Settings) throws -> String {
        var out: [String] = []
        var taken = Set<String>()
        for path in [settings.configPath, settings.discoveredProvidersPath] {
            guard let text = try Config.text(of: path) else { continue }
            let found = tables(in: text).filter { names.contains($0.name) && !taken.contains($0.name) }
            out += found.map(\.text)
            taken.formUnion(found.map(\.name))
        }
        return out.joined(separator: "\n")
    }

    /// The passphrase an export is sealed (or opened) with: the first line of
    /// `file` (a file only its owner can read), else typed on the terminal,
    /// twice when `confirm`. Never the vault's own passphrase sources: an
    /// export is meant to leave the machine. 77 when there is neither.
    public static func passphrase(file: String?, confirm: Bool, terminalPath: String = "/dev/tty") throws -> SecureBytes
    {
        if let file {
            var bytes = try SecretSource.secretFile(file).bytes(what: "the export passphrase") {
                TokenVaultError.permission($0)
            }
            defer { Sodium.wipe(&bytes) }
            guard !bytes.isEmpty else { throw TokenVaultError.permission("the export passphrase in \(file) is empty") }
            return SecureBytes(bytes)
        }
        guard let tty = TerminalInput(path: terminalPath) else {
            throw TokenVaultError.permission(
                "no terminal to type the export's passphrase on",
                hint: "give it in a file only you can read: --passphrase-file PATH")
        }
        var first = tty.readSecret(prompt: confirm ? "Passphrase for the export: " : "Passphrase of the export: ")
        defer { Sodium.wipe(&first) }
        guard !first.isEmpty else { throw TokenVaultError.permission("the export passphrase is empty") }
        if confirm {
            var again = tty.readSecret(prompt: "Repeat passphrase: ")
            defer { Sodium.wipe(&again) }
            guard Sodium.equal(first, again) else {
                throw TokenVaultError.permission("the passphrases did not match; nothing was written")
            }
        }
        return SecureBytes(first)
    }

    /// Each `[providers.NAME]` table of `toml`, with its sub-tables
    /// (`[providers.NAME.…]`, wherever they stand), as text; every other
    /// table and what stands before the first is left out, so an export
    /// adds provider tables to the config and nothing else.
    public static func tables(in toml: String) -> [(name: String, text: String)] {
        var out: [(name: String, text: String)] = []
        // The table the lines go to; nil: a table that is no provider's.
        var current: Int?
        for line in toml.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.trimmedSpaces().hasPrefix("[[") {
                current = nil
            } else if let header = ConfigText.header(of: line) {
                current = nil
                if header.count >= 2, header[0] == "providers" {
                    current = out.firstIndex { $0.name == header[1] }
                    if current == nil {
                        out.append((header[1], ""))
                        current = out.count - 1
                    }
                }
            }
            if let i = current { out[i].text += line + "\n" }
        }
        return out.map { ($0.name, $0.text.trimmedWhitespace() + "\n") }
    }

    /// Appends `tables` (TOML text) to the config file, every other line as
    /// it was; refused, and nothing written, when the result would not read
    /// as TOML.
    public static func addToConfig(_ tables: String, settings: Settings) throws {
        let path = settings.configPath
        var text = try Config.text(of: path) ?? ""
        if !text.isEmpty, !text.hasSuffix("\n") { text += "\n" }
        text += (text.isEmpty ? "" : "\n") + tables
        do { _ = try TOMLTable(string: text) } catch {
            throw TokenVaultError.config(
                "\(path): the provider tables of the export could not be added safely; nothing was changed")
        }
        try PrivateDirectory.createWithParents(Posix.dirname(path))
        try AtomicFile.replace(path, with: Array(text.utf8), what: "the config file")
    }
}
