import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct Backend: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "backend",
            abstract: "Show which backend is in use and why.")

        @Flag(help: "Print JSON.")
        var json = false

        func run(in context: Session) throws {
            let (choice, chosenBy) = try context.backend
            let source = chosenBy.rawValue
            let backends = context.backends
            if choice == .etcd { return try reportEtcd(try backends.etcdStore(), source: source, context: context) }
            if choice == .none {
                if json {
                    context.output.json(
                        .object(["in_use": .string("none"), "choice": .string("none"), "chosen_by": .string(source)]))
                } else {
                    context.output.value("none: nothing is kept past a command")
                    context.output.value("  why: set by \(source)")
                }
                return
            }
            let probe = SecretServiceStore.probe(
                context.settings, timeout: try context.settings.dbusTimeout, detailed: true)
            let vault = try backends.fileVault()
            let inUse = choice == .secretService || (choice == .auto && probe.available) ? "secret-service" : "file"
            var ss = probe.available ? "available (\(probe.detail) via D-Bus)" : "unavailable: \(probe.detail)"
            if let locked = probe.locked {
                ss += locked ? ", default collection locked" : ", default collection unlocked"
            }
            let fileState = vault.exists ? "exists" : "not created yet"
            if json {
                var o: [String: JSONValue] = [
                    "in_use": .string(inUse), "choice": .string(choice.rawValue), "chosen_by": .string(source),
                    "secret_service": .object([
                        "available": .bool(probe.available), "detail": .string(probe.detail),
                        "locked": probe.locked.map { .bool($0) } ?? .null,
                    ]),
                    "file": .object(["path": .string(vault.path), "exists": .bool(vault.exists)]),
                ]
                o["key_ttl"] = .integer(Int64(try context.settings.keyTTL))
                context.output.json(.object(o))
            } else {
                let why: String
                switch choice {
                case .auto:
                    why =
                        probe.available
                        ? "auto: the Secret Service answers" : "auto: the Secret Service does not answer"
                default: why = "set by \(source)"
                }
                context.output.value(
                    inUse == "secret-service"
                        ? "secret-service (\(probe.detail.isEmpty ? "Secret Service" : probe.detail) via D-Bus)"
                        : "file: \(vault.path)")
                context.output.value("  why: \(why)")
                context.output.value("  secret service: \(ss)")
                context.output.value("  file vault: \(vault.path) (\(fileState))")
            }
            if choice == .secretService, !probe.available {
                throw TokenVaultError.backendUnavailable("the Secret Service is not available: \(probe.detail)")
            }
        }

        /// Endpoints (each one's answer, the leader), auth, prefix and key state.
        func reportEtcd(_ store: EtcdStore, source: String, context: Session) throws {
            let s = store.settings
            let endpoints = store.endpointReport()
            let auth = s.username.map { "user \($0)" } ?? "none"
            let tls =
                s.endpoints.contains { $0.hasPrefix("https:") }
                ? "https" + (s.tls.caFile.map { ", CA \($0)" } ?? ", system CAs")
                    + (s.tls.certFile.map { ", client certificate \($0)" } ?? "")
                : "off (loopback http)"
            let key = store.keyState()
            if json {
                context.output.json(
                    .object([
                        "in_use": .string("etcd"), "choice": .string("etcd"), "chosen_by": .string(source),
                        "etcd": .object([
                            "endpoints": .array(
                                endpoints.map {
                                    .object([
                                        "endpoint": .string($0.endpoint), "state": .string($0.state),
                                        "leader": .bool($0.isLeader),
                                    ])
                                }),
                            "prefix": .string(s.prefix), "auth": .string(auth), "tls": .string(tls),
                            "lease_ttl": .integer(Int64(s.leaseTTL)), "timeout": .integer(Int64(s.timeout)),
                            "key": .string(key),
                        ]),
                    ]))
            } else {
                context.output.value("etcd (prefix \(s.prefix))")
                context.output.value("  why: set by \(source)")
                for e in endpoints { context.output.value("  endpoint: \(e.endpoint): \(e.state)") }
                context.output.value(
                    "  leader: \(endpoints.first(where: \.isLeader)?.endpoint ?? "none answered as leader")")
                context.output.value("  auth: \(auth)")
                context.output.value("  tls: \(tls)")
                context.output.value("  lease ttl: \(s.leaseTTL) s, call timeout \(s.timeout) s")
                context.output.value("  fleet key: \(key)")
            }
            if !endpoints.contains(where: \.reached) {
                throw TokenVaultError.temporary("no etcd endpoint answers")
            }
        }
    }
}
