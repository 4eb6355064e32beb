import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct Refresh: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "refresh",
            abstract: "Refresh a credential now, even if it is still valid.",
            discussion: """
                Uses the stored refresh token (or the provider's client credentials). A rotated \
                refresh token is stored before anything is printed; with none in the answer the \
                old one is kept. Prints nothing on stdout; the new expiry goes to stderr.
                """)

        @OptionGroup var credential: CredentialOptions

        func run() throws {
            let context = Context()
            let c = try context.usable(try credential.id(in: context), minValid: nil, force: true)
            Output.notice("refreshed \(c.id); expires \(c.expiresAt.map { Format.date($0) } ?? "never")")
        }
    }
}
