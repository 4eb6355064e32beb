import ArgumentParser
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    /// Every credential (or those named), with the provider tables they
    /// need, in one file sealed with a passphrase of its own (docs/FORMAT.md,
    /// "An export"): a backup, or a move to another machine and backend.
    struct Export: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Write credentials, and the provider tables they need, to a file sealed with a passphrase.",
            discussion: """
                The file is in the vault's own format (Argon2id, XChaCha20-Poly1305), sealed with a passphrase \
                asked twice on the terminal (or read from --passphrase-file): tokenvault import FILE on another \
                machine, with any backend, stores the same credentials, each still renewable. Client \
                registrations go with the credentials they belong to.
                """)

        @Argument(help: ArgumentHelp("The file to write (0600).", valueName: "file"))
        var file: String

        @Argument(help: ArgumentHelp("Only these services (default: every credential).", valueName: "service"))
        var services: [String] = []

        @Option(help: ArgumentHelp("A file only you can read holding the export's passphrase.", valueName: "path"))
        var passphraseFile: String?

        @Flag(help: "Replace FILE when it exists.")
        var force = false

        @Flag(help: "Print what was done as JSON: file, credentials, providers.")
        var json = false

        func run(in context: Session) throws {
            if !force, access(file, F_OK) == 0 {
                throw TokenVaultError.usage("\(file) exists", hint: "choose another file, or replace it with --force")
            }
            let store = try context.store()
            var wanted: Set<ServiceKey>?
            if !services.isEmpty { wanted = Set(try services.map { try context.serviceKey($0) }) }
            var credentials: [Credential] = []
            for id in try store.listIDs() {
                // A registration goes with the credentials of its service.
                guard wanted.map({ $0.contains(id.service) }) ?? true, let c = try store.load(id) else { continue }
                credentials.append(c)
            }
            guard !credentials.isEmpty else {
                throw TokenVaultError.notFound(
                    service: services.joined(separator: " "), account: "", hint: "nothing to export")
            }
            let providers = try ExportFile.providerTables(
                Set(credentials.compactMap(\.provider)), settings: context.settings)
            let passphrase = try ExportFile.passphrase(file: passphraseFile, confirm: true)
            let bytes = try ExportFile.seal(
                ExportFile.Contents(credentials: credentials, providers: providers), passphrase: passphrase,
                params: try context.settings.kdfProfile)
            try AtomicFile.replace(file, with: bytes, what: "the export")
            let tables = ExportFile.tables(in: providers).map(\.name)
            let count = credentials.filter { !$0.id.isRegistration }.count
            context.result(
                "exported \(count) credential\(count == 1 ? "" : "s")"
                    + (tables.isEmpty
                        ? ""
                        : " and the provider table\(tables.count == 1 ? "" : "s") \(tables.joined(separator: ", "))")
                    + " to \(file) (sealed with its passphrase: keep the two apart)",
                json: json,
                [
                    "file": .string(file), "credentials": .integer(Int64(count)),
                    "providers": .array(tables.map { .string($0) }),
                ])
        }
    }
}
