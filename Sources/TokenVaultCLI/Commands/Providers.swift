import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct Providers: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "providers",
            abstract: "List built-in and configured providers.")

        @Flag(help: "Print a JSON array.")
        var json = false

        func run(in context: Session) throws {
            let config = try context.config
            let directory = ProviderDirectory(config: config)
            var rows: [(String, String, String, String)] = []
            for name in directory.names {
                let preset = ProviderPreset.named(name)
                let configured = config.providers[name]
                let type = configured?.type ?? preset?.type ?? "oauth2"
                var origin =
                    config.discoveredProviders.contains(name)
                    ? (configured?.resource != nil ? "login URL" : "login --issuer")
                    : preset == nil ? "configured" : (configured == nil ? "built-in" : "built-in, configured")
                if config.brokenProviders[name] != nil { origin += ", broken (see the warning)" }
                rows.append((name, type, directory.service(of: name) ?? "?", origin))
            }
            if json {
                context.output.json(
                    .array(
                        rows.map {
                            .object([
                                "name": .string($0.0), "type": .string($0.1), "service": .string($0.2),
                                "source": .string($0.3),
                            ])
                        }))
                return
            }
            Summary.printTable(
                [["PROVIDER", "TYPE", "SERVICE", "SOURCE"]] + rows.map { [$0.0, $0.1, $0.2, $0.3] },
                context: context)
        }
    }
}
