import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct Revoke: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke",
            abstract: "Revoke a credential at the provider, then delete it locally.",
            discussion: """
                Uses the provider's revoke_url (RFC 7009, or Weibo's revokeoauth2). When the \
                provider cannot be reached or refuses, the local copy is kept (exit 75 or 76): \
                nothing is deleted that is still valid somewhere.
                """)

        @OptionGroup var credential: CredentialOptions

        @Flag(help: "Print what was done as JSON: service, account, provider, revoked.")
        var json = false

        func run(in context: Session) throws {
            let id = try credential.id(in: context)
            let c = try context.locate(id).credential
            guard c.type == .oauth2 || c.type == .token, let name = c.provider else {
                throw TokenVaultError.usage(
                    "\(id) is not tied to an OAuth 2.0 provider, so it cannot be revoked here",
                    hint: "delete the local copy with: tokenvault delete \(ShellWord.word(id.service.description))")
            }
            let provider = try context.oauth2Provider(name)
            try Revocation.revoke(
                c, provider: provider,
                transport: CurlTransport(timeout: try context.httpTimeout, proxies: context.proxies))
            // Deleted only if it is still the record that was revoked (not a new login made meanwhile).
            try context.vault().delete(id, if: .computed(from: c))
            context.result(
                "revoked \(id) at \(name) and deleted it locally", json: json,
                [
                    "service": .string(id.service.description), "account": .string(id.account),
                    "provider": .string(name), "revoked": .bool(true),
                ])
        }
    }
}
