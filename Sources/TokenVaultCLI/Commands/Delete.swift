import ArgumentParser
import Foundation
import TokenVaultKit

extension TokenVault {
    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete a credential locally (the provider is not told; see revoke).",
            aliases: ["logout"])

        @OptionGroup var credential: CredentialOptions

        func run() throws {
            let context = Context()
            let id = try credential.id(in: context)
            let store = try context.store()
            let removed = try store.delete(id)
            context.flushWarnings()
            guard removed else {
                throw TokenVaultError.notFound(service: id.service.description, account: id.account, unchecked: store.uncheckedNote)
            }
            Output.notice("deleted \(id)")
        }
    }
}
