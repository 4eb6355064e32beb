import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct List: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List stored credentials: service, account, provider, type, state, expiry. Never a secret.",
            discussion:
                "RT EXPIRES is when the refresh token dies: \"unknown\" when the provider did not say, \"-\" without a refresh token."
        )

        @Flag(help: "Print a JSON array.")
        var json = false

        @OptionGroup var colour: ColorOptions

        func run(in context: Session) throws {
            let rows = try context.vault().listLocated()
            let now = context.clock.now
            if json {
                context.output.json(.array(rows.map { Summary.json($0, status: context.status(of: $0.credential)) }))
                return
            }
            guard !rows.isEmpty else {
                context.output.notice("no credentials stored")
                return
            }
            // RT EXPIRES: when the refresh token dies; "unknown" when there is one and nobody said.
            var table = [["SERVICE", "ACCOUNT", "PROVIDER", "TYPE", "STATE", "EXPIRES", "RT EXPIRES", "BACKEND"]]
            var states: [CredentialState] = []
            for r in rows {
                let c = r.credential
                if c.unusable != nil {
                    states.append(.loginRequired)
                    table.append([c.service.description, c.account, "-", "-", "unusable", "-", "-", r.backend])
                    continue
                }
                let rt = c.refreshToken == nil ? "-" : Format.refreshExpiry(c, now: now) ?? "unknown"
                let state = context.status(of: c).state
                states.append(state)
                table.append([
                    c.service.description, c.account, c.provider ?? "-", c.type.rawValue, state.rawValue,
                    Format.expiry(c, now: now), rt, r.backend,
                ])
            }
            // Narrow terminals lose BACKEND, then RT EXPIRES, TYPE and PROVIDER.
            Summary.printTable(
                table, context: context, dropping: [7, 6, 3, 2], painted: colour.enabled(context)
            ) { row, column in
                column == 4 ? Terminal.paint(for: states[row - 1]) : nil
            }
        }
    }
}
