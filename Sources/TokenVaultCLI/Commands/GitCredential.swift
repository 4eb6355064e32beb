import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct GitCredential: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "git-credential",
            abstract: "Answer git's credential requests from the vault (a git credential helper).",
            discussion: """
                git runs it as a credential helper:

                  git config --global credential.https://github.com.helper ''
                  git config --global --add credential.https://github.com.helper '!tokenvault git-credential'

                get: the remote's host names the provider (git_hosts in its table; the github preset \
                claims github.com, gitlab claims gitlab.com), whose stored token is refreshed first when \
                needed and answered as username, password and password_expiry_utc. The account is \
                --account, else the username git sends when a credential is stored under it, else \
                $\(EnvironmentVariable.account.name), else "default". An unknown host, nothing stored, or a login required: no answer and exit 0, \
                so git asks its next helper (the last two say why on stderr). \
                erase (git saw the token rejected): the next get renews it; nothing is deleted. \
                store: nothing is kept; tokens come from tokenvault login. Other actions are ignored.
                """)

        @Argument(help: ArgumentHelp("get, store or erase (sent by git).", valueName: "action"))
        var action: String

        @Option(
            help: "Which login to answer with (default: the username git sends, if stored, else default).",
            completion: .custom(Completions.accounts))
        var account: String?

        func validate() throws {
            if let account { try CredentialID.validateAccount(account) }
        }

        func run(in context: Session) throws {
            // Read everything git writes before anything else, so git never blocks on a pipe.
            let request = try GitCredentialRequest.parse(Self.readInput())
            guard ["get", "erase", "store"].contains(action) else { return }  // git: ignore unknown actions
            guard action != "store", let proto = request.proto, let host = request.host else { return }
            let matches = try context.providers.gitProviders(
                protocol: proto, host: host, configPath: context.settings.configPath)
            guard let (match, stored) = try find(matches, request: request, context: context) else {
                if let first = matches.first {
                    context.output.notice(
                        "no credential stored for \(host) (provider \(first.provider)); log in with: tokenvault login \(first.provider)"
                    )
                }
                return
            }
            if action == "get" {
                try answer(stored, match: match, request: request, context: context)
            } else {
                try erase(stored, host: host, request: request, context: context)
            }
        }

        /// The first matching provider with a credential stored for the account.
        private func find(
            _ matches: [GitProviderMatch], request: GitCredentialRequest,
            context: Session
        ) throws -> (GitProviderMatch, Credential)? {
            for match in matches {
                var accounts = [try AccountChoice(option: account, settings: context.settings).name]
                if account == nil, let user = request.username, (try? CredentialID.validateAccount(user)) != nil {
                    accounts.insert(user, at: 0)
                }
                for a in accounts {
                    if let c = try context.load(CredentialID(service: match.service, account: a)) { return (match, c) }
                }
            }
            return nil
        }

        private func answer(
            _ stored: Credential, match: GitProviderMatch, request: GitCredentialRequest, context: Session
        ) throws {
            guard stored.type != .oauth1 else {
                context.output.notice("\(stored.id) is an OAuth 1.0a credential; git cannot use it as a password")
                return
            }
            let c: Credential
            do {
                c = try context.usable(stored.id, minValid: nil)
            } catch let error as TokenVaultError {
                guard case .loginRequired = error else { throw error }
                // No answer: git asks its next helper or the user.
                context.output.notice("\(error.errorText); \(error.hint ?? stored.loginHint)")
                return
            }
            let username = request.username ?? match.username
            for value in [username, c.accessToken] where value.contains(where: { $0.isNewline }) || value.contains("\0")
            {
                throw TokenVaultError.badInput("the credential for \(c.id) contains a line break; git cannot take it")
            }
            if c.dpopKey != nil {
                // git sends a password as it is, never with a proof (docs/security.md): no answer.
                context.output.notice("\(c.id) holds a DPoP-bound token, which git cannot send with the proof it needs")
                return
            }
            var lines = ["username=\(username)", "password=\(c.accessToken)"]
            if let expiresAt = c.expiresAt { lines.append("password_expiry_utc=\(expiresAt)") }
            context.output.value(lines.joined(separator: "\n"))
        }

        /// git saw `password` rejected: if it is the stored access token, mark it
        /// expired so the next `get` renews it. Nothing is deleted.
        private func erase(_ stored: Credential, host: String, request: GitCredentialRequest, context: Session) throws {
            guard let password = request.password, stored.hasAccessToken(password) else { return }
            let status = context.status(of: stored)
            guard status.renewal.isPossible else {
                context.output.notice(
                    "\(host) rejected the token of \(stored.id), which cannot be renewed; \(stored.loginHint)")
                return
            }
            var marked = stored
            marked.expiresAt = min(stored.expiresAt ?? Int64.max, context.clock.now)
            marked.updatedAt = context.clock.now
            // Only if nobody renewed it meanwhile; a renewed record is already what git needs.
            if try context.vault().write(marked, if: .computed(from: stored)) != nil {
                context.output.notice("\(host) rejected the token of \(stored.id); the next get renews it")
            }
        }

        /// git's request: up to a blank line, which ends it even when the caller keeps the pipe open.
        private static func readInput() -> [UInt8] {
            StandardInput.bytes(limit: GitCredentialRequest.maxBytes) { bytes in
                bytes.first == 0x0A || bytes.count >= 2 && bytes[bytes.count - 2] == 0x0A && bytes.last == 0x0A
            }
        }
    }
}
