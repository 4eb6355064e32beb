import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct Doctor: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "doctor",
            abstract: "Check the setup, one line per check, each with what to fix.",
            discussion: """
                Works whatever state the setup is in, a broken config included, and never \
                prompts. Checks the config (each provider table), the backend choice, the D-Bus \
                session and the Secret Service (reachable, locked, how long it took), the file \
                vault (path, permissions, format, key cached), the runtime and cache \
                directories, the etcd cluster when one is configured, the shell completions, the agent, \
                and the stored credentials (a login required, a refresh token that dies soon). \
                --network also asks each configured provider's token endpoint (or issuer) and \
                compares the clock of its Date header with this one, and fetches a configured \
                client metadata document to compare it with tokenvault's. Exits 0 when all is \
                well, 2 when a check failed.
                """)

        @Flag(help: "Also reach each configured provider, and compare its clock with this one.")
        var network = false

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var colour: ColorOptions

        func run(in context: Session) throws {
            let doctor = DoctorChecks(plan: context.plan, notices: context.notices)
            let config = doctor.checkConfig()
            var backends = Backends(settings: context.settings, plan: context.plan)
            backends.interactive = false
            backends.config = { config ?? Config() }
            let choice = doctor.checkBackend(config)
            doctor.checkSecretService(choice)
            doctor.checkFileVault(backends, choice: choice)
            doctor.checkDirectories()
            if choice == .etcd || config?.etcd != nil { doctor.checkEtcd(backends) }
            doctor.checkCompletions()
            doctor.checkAgent()
            // The stored credentials: only where they can be read without a prompt.
            if let choice { doctor.checkCredentials(choice, backends: backends, config: config ?? Config()) }
            if let config { doctor.checkResourceClients(config) }
            if network, let config {
                doctor.checkProviders(config)
                doctor.checkClientMetadata(config)
            }
            try report(doctor.checks, painted: colour.enabled(context), output: context.output)
        }

        /// One line per check (or one JSON object), then the verdict: exit 2 when one failed.
        func report(_ checks: [DoctorChecks.Check], painted: Bool, output: RunOutput) throws {
            let failed = checks.filter { $0.status == .failed }.count
            if json {
                output.json(
                    .object([
                        "ok": .bool(failed == 0),
                        "checks": .array(
                            checks.map { c in
                                var o: [String: JSONValue] = [
                                    "check": .string(c.name), "status": .string(c.status.rawValue),
                                    "detail": .string(c.detail),
                                ]
                                o["fix"] = c.fix.map { .string($0) } ?? .null
                                return .object(o)
                            }),
                    ]))
            } else {
                for c in checks {
                    let mark = Terminal.paint(
                        c.status == .ok ? "✓" : c.status == .failed ? "✗" : "-",
                        c.status == .ok ? .green : c.status == .failed ? .red : nil, on: painted)
                    output.value("\(mark) \(c.name): \(c.detail)" + (c.fix.map { " — fix: \($0)" } ?? ""))
                }
                output.value(failed == 0 ? "all is well" : "\(failed) check\(failed == 1 ? "" : "s") failed")
            }
            if failed > 0 { throw ExitCode(2) }
        }
    }
}
