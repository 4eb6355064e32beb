import ArgumentParser
import Foundation
import TokenVaultKit

extension TokenVault {
    struct Header: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "header",
            abstract: "Print one HTTP header line that authorizes a request.",
            discussion: """
                Authorization: Bearer TOKEN, or the provider's header template from the \
                config (header = "x-auth-token: {token}").


                  tokenvault header api.github.com | curl -H @- https://api.github.com/user
                """)

        @OptionGroup var credential: CredentialOptions

        @Option(help: "The request's HTTP method (for signed OAuth 1.0a requests).")
        var method: String = "GET"

        @Option(help: "The request's URL (for signed OAuth 1.0a requests).")
        var url: String?

        func run() throws {
            let context = Context()
            let c = try context.usable(try credential.id(in: context), minValid: nil)
            Output.value(try HeaderLine.line(for: c, context: context))
        }
    }
}
