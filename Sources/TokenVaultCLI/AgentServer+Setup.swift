import FoundationEssentials
import Glibc
import TokenVaultKit

/// Whose requests the agent answers (docs/agent.md): a client whose setup
/// resolves to the agent's own in everything the request can use.
extension AgentServer {
    /// The settings in which a client's setup (`Settings.agentScope`) differs
    /// from the agent's, once what the config decides is filled in on both
    /// sides: `TOKENVAULT_BACKEND=auto` is no variable when the config says
    /// auto (or nothing), and etcd's endpoints and prefix count only on etcd.
    /// Empty: the agent answers for it.
    func differences(_ client: JSONValue?) -> [String] {
        guard case .object(let theirs)? = client.map(resolved), case .object(let ours) = resolved(settings.agentScope)
        else { return ["the protocol"] }
        return Set(theirs.keys).union(ours.keys).filter { theirs[$0] != ours[$0] }.sorted()
    }

    /// A scope with the config's decisions filled in: the agent's config, which
    /// is the client's wherever their config paths agree (they are compared too).
    /// The file vault's key lifetime counts only where the file vault can be
    /// opened: not on the Secret Service, nor on auto while there is no vault
    /// file (a Secret Service read never uses that key); the vault's path not
    /// on the Secret Service; the D-Bus timeouts not on the file vault or etcd.
    private func resolved(_ scope: JSONValue) -> JSONValue {
        guard case .object(var o) = scope else { return scope }
        let config = try? Config.load(settings)
        let backendKey = EnvironmentVariable.backend.name
        if o[backendKey]?.string?.isEmpty ?? true {
            o[backendKey] = .string(config?.backendChoice?.rawValue ?? BackendChoice.auto.rawValue)
        }
        let backend = o[backendKey]?.string.flatMap(BackendChoice.init(rawValue:))
        let endpoints = EnvironmentVariable.etcdEndpoints.name, prefix = EnvironmentVariable.etcdPrefix.name
        if backend == .etcd {
            if o[endpoints]?.string?.isEmpty ?? true {
                o[endpoints] = .string((config?.etcd?.endpoints ?? []).joined(separator: ","))
            }
            if o[prefix]?.string?.isEmpty ?? true { o[prefix] = .string(config?.etcd?.prefix ?? "tokenvault/") }
        } else {
            (o[endpoints], o[prefix]) = (nil, nil)
        }
        if backend == .secretService { (o["key_ttl"], o["vault"]) = (nil, nil) }
        if backend == .auto, o["vault"]?.string.map({ access($0, F_OK) != 0 }) ?? false { o["key_ttl"] = nil }
        if backend == .file || backend == .etcd {
            (o[EnvironmentVariable.dbusTimeout.name], o[EnvironmentVariable.unlockTimeout.name]) = (nil, nil)
        }
        return .object(o)
    }
}

extension AgentServer {
    /// The answer to a client of another setup: it goes direct. When only the
    /// session bus differs and the agent's own bus is gone (an agent started
    /// inside a `dbus-run-session` that has ended), the agent leaves too, and
    /// the client starts one of its own session (docs/agent.md, "Started on first use").
    func declined(for differ: [String]) -> AgentCommandReply {
        if differ == ["bus"], ownBusGone {
            Posix.spawnThread { self.leave() }
            return .declined(.sessionGone)
        }
        return .declined(.anotherSetup(differ))
    }

    /// Whether the session bus this agent was started for takes no
    /// connection any more; an address it cannot check counts as there.
    var ownBusGone: Bool {
        let address = settings.sessionBus ?? "unix:path=\(settings.runtimeBus)"
        let paths = address.split(separator: ";").compactMap { entry -> String? in
            guard entry.hasPrefix("unix:") else { return nil }
            return entry.dropFirst(5).split(separator: ",").first { $0.hasPrefix("path=") }.map {
                String($0.dropFirst(5))
            }
        }
        guard !paths.isEmpty else { return false }
        for path in paths {
            if let fd = AgentSocket.connect(path, seconds: 1) {
                close(fd)
                return false
            }
        }
        return true
    }
}
