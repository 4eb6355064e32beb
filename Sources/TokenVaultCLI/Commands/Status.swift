import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct Status: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Show what is stored, where, for whom, and until when.",
            discussion: """
                With SERVICE the exit status says whether the credential is usable: 0 for the \
                states valid, expiring and refreshable; 4 for login required (expired and not \
                renewable, or the provider refused the last renewal, until a login, a set or a \
                successful refresh); 3 when nothing is stored.

                  tokenvault status api.weibo.com >/dev/null || tokenvault login weibo
                """)

        @Argument(
            help: ArgumentHelp("A host, URL or provider name; all credentials when left out.", valueName: "service"),
            completion: .custom(Completions.services))
        var service: String?

        @Option(
            help:
                "Which of several logins to the service (default: $\(EnvironmentVariable.account.name), else default).",
            completion: .custom(Completions.accounts))
        var account: String?

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var colour: ColorOptions

        func run(in context: Session) throws {
            guard let service else { return try overview(context) }
            let chosen = try AccountChoice(option: account, settings: context.settings)
            let id = CredentialID(service: try context.serviceKey(service), account: chosen.name)
            let found = try context.locate(id)
            let status = context.status(of: found.credential)
            if json {
                context.output.json(Summary.json(found, status: status))
            } else {
                let lines = details(
                    found, status: status, accountReason: chosen.reason, now: context.clock.now,
                    painted: colour.enabled(context))
                let width = lines.map(\.0.count).max() ?? 0
                for (k, v) in lines { context.output.value("\((k + ":").padded(to: width + 2))\(v)") }
            }
            if !status.isUsable { throw status.loginRequiredError(for: found.credential) }
        }

        /// Without SERVICE: the backend and one line per credential.
        func overview(_ context: Session) throws {
            let rows = try context.vault().listLocated()
            if json {
                context.output.json(
                    .object([
                        "backend": .string(try context.backendChoice.rawValue),
                        "credentials": .array(rows.map { Summary.json($0, status: context.status(of: $0.credential)) }),
                    ]))
                return
            }
            context.output.value("backend: \(try context.backendChoice.rawValue)")
            context.output.value("credentials: \(rows.count)")
            for r in rows {
                if let why = r.credential.unusable {
                    let painted = Terminal.paint("unusable", .red, on: colour.enabled(context))
                    context.output.value("  \(r.credential.id): \(painted) (\(why)), in \(r.backend)")
                    continue
                }
                let state = context.status(of: r.credential).state
                let painted = Terminal.paint(
                    state.rawValue, Terminal.paint(for: state), on: colour.enabled(context))
                context.output.value(
                    "  \(r.credential.id): \(r.credential.type.rawValue), \(painted), \(Format.expires(r.credential.expiresAt, now: context.clock.now)), in \(r.backend)"
                )
            }
        }

        /// The lines of one credential: what it is, where, for whom, until when, and its state.
        func details(
            _ found: StoredCredential, status: CredentialStatus, accountReason: String, now: Int64, painted: Bool
        ) -> [(String, String)] {
            let c = found.credential
            var lines = [
                ("service", c.service.description), ("account", "\(c.account) (\(accountReason))"),
                ("type", c.type.rawValue),
                ("stored in", found.backend),
            ]
            if let p = c.provider { lines.append(("provider", p)) }
            if let name = Summary.displayName(c) { lines.append(("user", name)) }
            let claims = Summary.idTokenClaims(c)
            if !claims.isEmpty {
                lines.append(
                    (
                        "id token",
                        ["sub", "email", "name"].compactMap { k in claims[k].map { "\(k) \($0)" } }.joined(
                            separator: ", ")
                            + " (not verified)"
                    ))
            }
            if let scope = c.scope { lines.append(("scope", scope)) }
            if c.dpopKey != nil {
                // The key's thumbprint, never the key (docs/security.md, "Sender-constrained tokens").
                lines.append(
                    ("bound to", "DPoP key \(c.dpopThumbprint ?? "(unreadable)") (\(c.tokenType ?? "DPoP") token)"))
            }
            lines.append(
                ("expires", c.expiresAt.map { "\(Format.date($0)) (\(Format.expiry(c, now: now)))" } ?? "never"))
            if let left = Format.refreshExpiry(c, now: now), let at = c.refreshExpiresAt {
                lines.append(("refresh token", "dies \(Format.date(at)) (\(left))"))
            }
            lines.append(("can refresh", status.canRenew ? "yes" : "no"))
            if let refusal = status.refusal {
                lines.append(("refused", "\(Format.date(refusal.at)): \(refusal.reason)"))
            }
            lines.append(
                ("state", Terminal.paint(status.state.rawValue, Terminal.paint(for: status.state), on: painted)))
            return lines
        }
    }
}
