import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct Refresh: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "refresh",
            abstract: "Refresh a credential now, even if it is still valid.",
            discussion: """
                Uses the stored refresh token (or the provider's client credentials). A rotated \
                refresh token is stored before anything is printed; with none in the answer the \
                old one is kept. Prints nothing on stdout; the new expiry goes to stderr.
                """)

        @OptionGroup var credential: CredentialOptions

        @Flag(help: "Print what was done as JSON: service, account, refreshed, expires_at.")
        var json = false

        func run(in context: Session) throws {
            let id = try credential.id(in: context)
            // A token that never expires and has no way to renew: nothing to do, and nothing wrong.
            let stored = try context.locate(id).credential
            if stored.expiresAt == nil, !context.status(of: stored).renewal.isPossible {
                context.result(
                    "\(id) never expires: nothing to renew", json: json,
                    [
                        "service": .string(id.service.description), "account": .string(id.account),
                        "refreshed": .bool(false), "expires_at": .null,
                    ])
                return
            }
            let c = try context.usable(id, minValid: nil, force: true)
            context.result(
                "refreshed \(c.id); expires \(c.expiresAt.map { Format.date($0) } ?? "never")", json: json,
                [
                    "service": .string(id.service.description), "account": .string(id.account),
                    "refreshed": .bool(true),
                    "expires_at": c.expiresAt.map { .integer($0) } ?? .null,
                ])
        }
    }
}
