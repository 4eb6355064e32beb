import FoundationEssentials
import Glibc

/// The agent's answers to the JSON requests (docs/agent.md, "The socket,
/// and who is answered"): its status, stop, lock, and a credential for a
/// client (`usable`, `stored`) through a `Session` of the client's
/// settings, whose notices go back with the answer.
extension AgentServer {
    func answer(
        _ request: JSONValue, notices: Notices, confinement: Confinement? = nil, gate: RequestGate? = nil
    ) throws -> JSONValue {
        switch request["op"]?.string {
        case "status":
            let now = state.withLock { $0 }
            let credentials = now.schedule.entries.sorted { $0.key < $1.key }.map { id, k -> JSONValue in
                var o: [String: JSONValue] = [
                    "service": .string(id.service.description), "account": .string(id.account),
                    "next_renewal": k.nextRenewal.map { .integer($0) } ?? .null,
                    "asked_at": .integer(k.askedAt),
                ]
                if let never = k.never { o["never"] = .string(never) }
                if let last = k.last {
                    o["last"] = .object(["at": .integer(last.at), "outcome": .string(last.outcome)])
                }
                return .object(o)
            }
            return .object([
                "pid": .integer(Int64(getpid())), "version": .integer(AgentSocket.version),
                "uptime": .integer(clock.now - started),
                "requests": .integer(Int64(now.requests)), "kept": .integer(Int64(now.schedule.entries.count)),
                "renewals": .integer(Int64(now.schedule.renewals)),
                "same_scope": .bool(differences(request["scope"]).isEmpty),
                "differences": .array(differences(request["scope"]).map { .string($0) }),
                "locked": .bool(now.locked), "credentials": .array(credentials),
                "started_on_use": .bool(startedOnUse), "build": .string(AgentSocket.build),
            ])
        case "stop":
            // Its pid, which a client that asked another build to stop waits
            // for, and may signal only when it is the socket's own listener.
            return .object(["pid": .integer(Int64(getpid()))])
        case "lock":
            // Its own passphrase sources are not used again; a key in the kernel
            // keyring (put back by a command the user runs) still opens the vault.
            // The records it decoded go too (docs/security.md).
            // What is under way sends nothing more, and the clients' environments kept for
            // renewals go with the keys (docs/agent.md, "Locked").
            state.withLock {
                $0.locked = true
                $0.schedule.forgetClients()
            }
            closeGates(RequestGate.locked)
            caches.decodedRecords.forget()
            return .object([:])
        case let op where op == "usable" || op == "stored":
            guard let service = request["service"]?.string, let account = request["account"]?.string else {
                throw TokenVaultError.usage("the request names no service")
            }
            // Its secret commands run where the client's would (docs/agent.md).
            var settings = own
            if case .object(let environment)? = request["environment"], let directory = request["directory"]?.string,
                directory.hasPrefix("/")
            {
                let client = environment.compactMapValues(\.string)
                settings = settings.withProxies(of: client)
                settings.child = ChildContext(environment: client, directory: directory)
            }
            settings.child.confined = confinement
            settings.child.gate = gate
            let context = Session(settings: settings, notices: notices, agent: self.request)
            defer { context.flushWarnings() }
            let id = CredentialID(service: try ServiceKey(parsing: service), account: account)
            let minValid = request["min_valid"]?.int64.map { Int($0) }
            let refresh = request["refresh"] == .bool(true)
            let c =
                op == "usable"
                ? try context.usable(id, minValid: minValid, refresh: refresh, force: request["force"] == .bool(true))
                : try context.stored(id, minValid: minValid, refresh: refresh)
            return c.wire
        default:
            throw TokenVaultError.usage("unknown request")
        }
    }
}
