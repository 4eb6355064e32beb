import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

/// `delete` and `logout`: delete a credential locally.
protocol DeletesCredential: ContextCommand {
    var credential: CredentialOptions { get }
    var json: Bool { get }
}

extension DeletesCredential {
    func run(in context: Context) throws {
        let id = try credential.id(in: context, registrations: true)
        let removed = try context.vault().delete(id)
        guard removed else { throw try context.notFound(id) }
        context.result(
            "deleted \(id)", json: json,
            ["service": .string(id.service.description), "account": .string(id.account), "deleted": .bool(true)])
    }
}

extension TokenVault {
    struct Delete: DeletesCredential {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete a credential locally (the provider is not told; see revoke).")

        @OptionGroup var credential: CredentialOptions

        @Flag(help: "Print what was done as JSON: service, account, deleted.")
        var json = false
    }

    /// `delete` under the name other tools use. A command of its own rather
    /// than an alias: the generated completion scripts know commands, not
    /// aliases, so `logout <TAB>` offered the subcommands instead of services.
    struct Logout: DeletesCredential {
        static let configuration = CommandConfiguration(
            commandName: "logout",
            abstract: "The same as delete: delete a credential locally.")

        @OptionGroup var credential: CredentialOptions

        @Flag(help: "Print what was done as JSON: service, account, deleted.")
        var json = false
    }
}
