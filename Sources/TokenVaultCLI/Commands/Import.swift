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
            abstract: "Store the credentials of an export (tokenvault export) in this machine's backend.",
            discussion: """
                FILE is a file tokenvault export wrote; its passphrase is asked on the terminal (or read from \
                --passphrase-file). Provider tables it carries are added to config.toml where no table of that \
                name exists. A credential already stored is kept unless --force; one stored that is newer than \
                the export's is kept even then. --dry-run says what would be done and changes nothing.
                """)

        @Argument(help: ArgumentHelp("The export to read.", valueName: "file"))
        var source: String

        @Option(help: ArgumentHelp("A file only you can read holding the export's passphrase.", valueName: "path"))
        var passphraseFile: String?

        @Flag(help: "Replace a stored credential (never one newer than the export's).")
        var force = false

        @Flag(help: "Say what would be imported; change nothing.")
        var dryRun = false

        @Flag(help: "Print what was done as JSON: imported, kept, providers_added.")
        var json = false

        func run(in context: Session) throws {
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
            let vault = try context.vault()
            var imported: [String] = [], kept: [String] = []
            for c in contents.credentials {
                let shown = c.id.isRegistration ? "the client registration of \(c.service)" : "\(c.id)"
                if let stored = try vault.load(c.id) {
                    let why: String? =
                        stored.accessToken == c.accessToken && stored.refreshToken == c.refreshToken
                        ? "already stored"
                        : stored.isNewer(than: c)
                            ? "a newer one is stored" : force ? nil : "one is stored (--force replaces it)"
                    if let why {
                        kept.append("\(shown): \(why)")
                        continue
                    }
                }
                if !dryRun { try vault.write(c) }
                imported.append(shown)
            }
            let verb = dryRun ? "would import" : "imported"
            var lines = imported.map { "\(verb) \($0)" } + kept.map { "kept \($0)" }
            if !missing.isEmpty {
                lines.append(
                    "\(dryRun ? "would add" : "added") [providers.\(missing.map(\.name).joined(separator: "], [providers."))] to \(context.settings.configPath)"
                )
            }
            if lines.isEmpty { lines.append("the export holds nothing") }
            context.result(
                lines.joined(separator: "\n"), json: json,
                [
                    "imported": .array(imported.map { .string($0) }), "kept": .array(kept.map { .string($0) }),
                    "providers_added": .array(missing.map { .string($0.name) }), "dry_run": .bool(dryRun),
                ])
        }

        /// The file's bytes; 66 when it cannot be read.
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
