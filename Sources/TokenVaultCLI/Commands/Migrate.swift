import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

enum MigrationTarget: String, Choice {
    case secretService = "secret-service"
    case file
    case etcd
}

extension TokenVault {
    struct Migrate: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "migrate",
            abstract: "Move every credential to another backend.",
            discussion: """
                Copies every credential, reads each copy back, and only then deletes the \
                originals: interrupted at any point, nothing is lost, and running it again \
                finishes the job. Where the target already holds a newer copy, that copy stays. \
                Without --from: to etcd from the local backends (secret-service and file); \
                from etcd when the configured backend is etcd; else from the other local one.
                """)

        @Option(
            help: ArgumentHelp("The backend to move to: secret-service, file or etcd.", valueName: "backend"),
            completion: .list(MigrationTarget.names), transform: MigrationTarget.parse)
        var to: MigrationTarget

        @Option(
            help: ArgumentHelp("The backend to move from: secret-service, file or etcd.", valueName: "backend"),
            completion: .list(MigrationTarget.names), transform: MigrationTarget.parse)
        var from: MigrationTarget?

        @Flag(name: .customLong("keep-backend"), help: "Leave the backend setting of config.toml as it is.")
        var keepBackend = false

        @Flag(help: "Print what was done as JSON: moved, from, to, backend_set.")
        var json = false

        func validate() throws {
            if from == to { throw ValidationError("--from and --to name the same backend") }
        }

        func run(in context: Session) throws {
            let (source, target, file) = try stores(context)
            if source === file, !file.exists {
                context.output.notice("nothing to move: there is no file vault")
                return
            }
            let moved = try move(from: source, to: target, context: context)
            let set = useTarget(context, from: source.name)
            context.result(
                "moved \(moved) credential\(moved == 1 ? "" : "s") from \(source.name) to \(target.name)", json: json,
                [
                    "moved": .integer(Int64(moved)), "from": .string(source.name), "to": .string(target.name),
                    "backend_set": .bool(set),
                ])
        }

        /// The store to move from (--from, else the other local backend, or the
        /// fleet's when etcd is in use), the one to move to, and the file vault.
        func stores(_ context: Session) throws -> (source: CredentialStore, target: CredentialStore, file: FileStore) {
            let backends = context.backends
            let file = try backends.fileVault()
            func open(_ b: MigrationTarget) throws -> CredentialStore {
                switch b {
                case .file: return file
                case .secretService: return try backends.open(.secretService)
                case .etcd: return try backends.etcdStore()
                }
            }
            let origin: MigrationTarget? =
                try from
                ?? {
                    if to == .etcd { return nil }  // both local backends: auto
                    if try context.backendChoice == .etcd { return .etcd }
                    return to == .file ? .secretService : .file
                }()
            return (try origin.map(open) ?? backends.open(.auto), try open(to), file)
        }

        /// Moves every credential, each in one step under its record lock, so
        /// none is lost to a `set`, `refresh` or `delete` running meanwhile. A
        /// record the target got during the migration is newer than anything to
        /// copy: it stays. Writes to the source during a pass are picked up by
        /// the next one. Returns how many moved.
        func move(from source: CredentialStore, to target: CredentialStore, context: Session) throws -> Int {
            let vault = CredentialVault(store: source, runtimeDirectory: context.settings.runtimeDirectory)
            var targetBefore: [CredentialID: Credential] = [:]
            for c in try target.list() { targetBefore[c.id] = c }
            var moved = 0
            // Another application's items are read, never moved out (docs/security.md): left, and said once.
            var leftAlone = Set<CredentialID>()
            for _ in 0..<5 {
                let ids = try source.listIDs().filter { !leftAlone.contains($0) }
                if ids.isEmpty { break }
                for id in ids {
                    // Client registrations move too, but are not counted as credentials.
                    moved +=
                        try (id.isRegistration ? 0 : 1)
                        * vault.withRecordLock(id) { () -> Int in
                            guard let c = try source.load(id) else { return 0 }
                            if c.foreignItem {
                                leftAlone.insert(id)
                                context.output.notice(
                                    "left \(id) in \(source.name): its item is another application's, which tokenvault does not move"
                                )
                                return 0
                            }
                            let existing = try target.load(id)
                            let targetChanged = existing != nil && existing != targetBefore[id]
                            if !targetChanged, existing.map({ !$0.isNewer(than: c) }) ?? true {
                                try target.save(c)
                                guard try target.load(id) == c else {
                                    throw TokenVaultError.vault(
                                        "the copy of \(id) in \(target.name) does not read back the same; nothing was deleted"
                                    )
                                }
                            }
                            targetBefore[id] = try target.load(id)
                            if let shared = source as? SharedStore {
                                // Another host may have renewed it meanwhile: the next pass copies that.
                                return try shared.delete(id, ifUnchanged: c.fingerprint) ? 1 : 0
                            }
                            try source.delete(id)
                            return 1
                        }
                }
            }
            return moved
        }

        /// New logins go where the credentials went: `backend` in config.toml
        /// becomes the target (unless --keep-backend), or the line to add is printed.
        @discardableResult
        func useTarget(_ context: Session, from source: String) -> Bool {
            guard !keepBackend else { return false }
            let path = context.settings.configPath
            do {
                if let restored = try Config.setBackend(to.rawValue, context.settings, from: source) {
                    context.output.notice(
                        restored == "unset"
                            ? "removed backend from \(path), as it was before the credentials left \(to.rawValue)"
                            : "set backend = \"\(restored)\" in \(path) again, as it was before the credentials left \(to.rawValue)"
                    )
                    return true
                }
                context.output.notice(
                    "set backend = \"\(to.rawValue)\" in \(path), so new logins go there too (--keep-backend: not)")
                if let forced = context.settings[.backend], forced != to.rawValue {
                    context.output.warning(
                        "\(EnvironmentVariable.backend.name)=\(forced) still overrides it in this environment")
                }
                return true
            } catch {
                context.output.warning(
                    "could not set the backend in \(path) (\(error.errorText)); add this line at its top: backend = \"\(to.rawValue)\""
                )
                return false
            }
        }
    }
}
