import FoundationEssentials
import Glibc

/// Whose requests the agent answers (docs/agent.md): `AgentScope`, with the agent's settings and config.
extension AgentServer {
    func differences(_ client: JSONValue?) -> [String] {
        AgentScope.differences(client, from: settings, config: try? Config.load(settings, cache: caches.config))
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
