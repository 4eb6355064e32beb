import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct SetCredential: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Store a credential read from stdin.",
            discussion: """
                Reads a token-endpoint JSON object (access_token, refresh_token, expires_in or \
                expires_at as unix seconds or RFC 3339, token_type, scope, oauth_token and \
                oauth_token_secret; other fields are kept) or one bare token line. Secrets are \
                never taken from the command line. On a terminal the token is read without echo.

                  echo '{"access_token":"…","expires_in":3600}' | tokenvault set api.weibo.com
                """)

        @OptionGroup var credential: CredentialOptions

        @Option(
            help: "Tie the credential to a provider, so it can be refreshed and revoked.",
            completion: .custom(Completions.providers))
        var provider: String?

        @Flag(help: "With --provider: replace a credential another provider stored under the same service and account.")
        var force = false

        @Flag(help: "Print what was stored as JSON: service, account, provider, stored_in, expires_at.")
        var json = false

        /// Words after the service (`set HOST TOKEN`): refused without being
        /// shown, since the word is most likely the token itself.
        @Argument(help: .hidden) var stray: [String] = []

        func run(in context: Session) throws {
            if !stray.isEmpty {
                let service = ShellWord.word(credential.service)
                throw TokenVaultError.usage(
                    "set reads the token from stdin, never from the command line: \(stray.count == 1 ? "the word" : "the \(stray.count) words") after \(service) \(stray.count == 1 ? "was" : "were") not used and \(stray.count == 1 ? "is" : "are") not shown (a token there is in your shell's history now)",
                    hint:
                        "type it at the prompt of: tokenvault set \(service) (or pipe it in: printf '%s\\n' \"$TOKEN\" | tokenvault set \(service))"
                )
            }
            let id = try credential.id(in: context)
            if let provider, try context.providers.service(of: provider) == nil {
                throw TokenVaultError.config("unknown provider \(provider)", hint: "see: tokenvault providers")
            }
            if let provider, !force,
                let conflict = try context.vault().load(id)?.ownerConflict(
                    with: provider,
                    command: "set \(ShellWord.word(id.service.description)) --provider \(ShellWord.word(provider))")
            {
                throw conflict
            }
            let input = try StandardInput.read(prompt: "Token for \(id.service): ")
            var c = try TokenInput.parse(input, id: id, now: context.clock.now)
            c.provider = provider
            // Its refresh token goes to this provider's issuer only (docs/security.md).
            c.issuer = try provider.flatMap { try context.providers.table($0)?.issuedBy }
            // A new record: any refusal mark on the old one goes with it (docs/reference.md).
            try context.vault().write(c)
            let backend = try context.store().writesTo
            context.result(
                "stored \(id) in \(backend)", json: json,
                [
                    "service": .string(id.service.description), "account": .string(id.account),
                    "provider": c.provider.map { .string($0) } ?? .null, "stored_in": .string(backend),
                    "expires_at": c.expiresAt.map { .integer($0) } ?? .null,
                ])
        }
    }
}
