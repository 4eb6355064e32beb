import FoundationEssentials
import Glibc

/// Whose requests the agent answers (docs/agent.md): a client whose setup
/// (`Settings.agentScope`) resolves to the agent's own in everything the
/// request can use.
public enum AgentScope {
    /// The settings in which a client's setup differs from the agent's (its
    /// `settings` and `config`), once what the config decides is filled in on
    /// both sides: `TOKENVAULT_BACKEND=auto` is no variable when the config
    /// says auto (or nothing), and etcd's endpoints and prefix count only on
    /// etcd. Empty: the agent answers for it.
    public static func differences(_ client: JSONValue?, from settings: Settings, config: Config?) -> [String] {
        guard case .object(let theirs)? = client.map({ resolved($0, config: config) }),
            case .object(let ours) = resolved(settings.agentScope, config: config)
        else { return ["the protocol"] }
        return Set(theirs.keys).union(ours.keys).filter { theirs[$0] != ours[$0] }.sorted()
    }

    /// A scope with the config's decisions filled in: the agent's config, which
    /// is the client's wherever their config paths agree (they are compared too).
    /// The file vault's key lifetime counts only where the file vault can be
    /// opened: not on the Secret Service, nor on auto while there is no vault
    /// file (a Secret Service read never uses that key); the vault's path not
    /// on the Secret Service; the D-Bus timeouts not on the file vault or etcd.
    static func resolved(_ scope: JSONValue, config: Config?) -> JSONValue {
        guard case .object(var o) = scope else { return scope }
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
