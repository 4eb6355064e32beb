import ArgumentParser
import Foundation
import TokenVaultKit

enum MigrationTarget: String, ExpressibleByArgument, CaseIterable {
    case secretService = "secret-service"
    case file
}

extension TokenVault {
    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "migrate",
            abstract: "Move every credential to the other backend.",
            discussion: """
                Copies every credential, reads each copy back, and only then deletes the \
                originals: interrupted at any point, nothing is lost, and running it again \
                finishes the job. Where the target already holds a newer copy, that copy stays.
                """)

        @Option(help: ArgumentHelp("The backend to move to.", valueName: "backend"))
        var to: MigrationTarget

        func run() throws {
            let context = Context()
            let backends = context.backends
            let ss = try backends.open(.secretService)
            let file = try backends.fileVault()
            let (source, target): (CredentialStore, CredentialStore) = to == .file ? (ss, file) : (file, ss)
            if source === file, !file.exists {
                Output.notice("nothing to move: there is no file vault")
                return
            }
            let items = try source.list()
            var moved: [Credential] = []
            for c in items {
                if let existing = try target.load(c.id), existing.updatedAt > c.updatedAt {
                    moved.append(c)
                    continue
                }
                try target.save(c)
                guard try target.load(c.id) == c else {
                    throw TokenVaultError.vault("the copy of \(c.id) in \(target.name) does not read back the same; nothing was deleted")
                }
                moved.append(c)
            }
            for c in moved { try source.delete(c.id) }
            Output.notice("moved \(moved.count) credential\(moved.count == 1 ? "" : "s") from \(source.name) to \(target.name)")
        }
    }
}
