import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct Agent: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "agent",
            abstract: "Run the per-user agent that answers get without opening the backend each time.",
            discussion: """
                The agent keeps the backend open and answers get, header, status, list, exec, the adapters and the \
                MCP bridge over a socket in $XDG_RUNTIME_DIR/tokenvault/ (0700; only the same user \
                is answered). It asks the backend on every request, so a delete, a lock or another \
                host's write is seen at once. Without an agent every command works as before; \
                \(EnvironmentVariable.agent.name)=off makes a command go to the backend itself.

                  tokenvault agent              # starts it in the background
                  tokenvault agent --foreground # for systemd, runit, s6 and the like
                  tokenvault agent status
                  tokenvault agent stop
                """,
            subcommands: [Run.self, Status.self, Stop.self], defaultSubcommand: Run.self)

        struct Run: SessionCommand {
            static let configuration = CommandConfiguration(
                commandName: "run", abstract: "Start the agent (in the background unless --foreground).")

            @Flag(help: "Stay in the foreground (for an init system); log to stderr.")
            var foreground = false

            /// How a command starts it on first use: it stops after agent_idle.
            @Flag(name: .customLong("started-on-use"), help: .hidden)
            var startedOnUse = false

            func run(in context: Session) throws {
                let settings = context.settings
                let server = AgentServer(
                    settings: settings, startedOnUse: startedOnUse, notices: context.notices,
                    runCommand: TokenVaultMain.agentRunner())
                // Its socket looked at anew each time (a plan of its own): the agent comes while this waits.
                let ask = {
                    try AgentClient.ask(
                        "status", [:], plan: Plan(settings: settings), seconds: 2, notices: context.notices)
                }
                // Given its socket by systemd, it serves it (asking it would be asking itself).
                if foreground, server.activatedSocket() != nil { try server.serve() }
                if let status = try? ask(), status != .null {
                    context.output.notice("the agent is running already (process \(status["pid"]?.text ?? "?"))")
                    return
                }
                if foreground { try server.serve() }
                // Shown in ps as `tokenvault agent --foreground`, started from this very binary.
                let pid = try Posix.startDetached(
                    ["tokenvault", "agent", "--foreground"], env: settings.environment, path: Tool.selfPath)
                for _ in 0..<50 {
                    if let status = try? ask(), status != .null {
                        context.output.notice(
                            "the agent is running (process \(status["pid"]?.text ?? "\(pid)")); socket \(AgentSocket.path(settings))"
                        )
                        return
                    }
                    Posix.sleep(0.1)
                }
                throw TokenVaultError.temporary("the agent (process \(pid)) did not answer within 5 s")
            }
        }

        struct Status: SessionCommand {
            static let configuration = CommandConfiguration(
                commandName: "status", abstract: "Say whether the agent runs, and what it serves.")

            @Flag(help: "Print a JSON object.")
            var json = false

            func run(in context: Session) throws {
                let settings = context.settings
                guard
                    let status = try AgentClient.ask(
                        "status", [:], plan: context.plan, seconds: 2, notices: context.notices)
                else {
                    if json {
                        context.output.json(.object(["running": .bool(false)]))
                    } else {
                        context.output.value("not running (socket \(AgentSocket.path(settings)))")
                    }
                    throw ExitCode(3)
                }
                if json {
                    context.output.json(status)
                    return
                }
                context.output.value(
                    "running: process \(status["pid"]?.text ?? "?"), up \(Format.ago(status["uptime"]?.int64 ?? 0)), \(status["requests"]?.text ?? "0") requests answered, \(status["renewals"]?.text ?? "0") renewals; socket \(AgentSocket.path(settings))"
                        + (status["locked"] == .bool(true) ? "; locked (tokenvault lock)" : "")
                )
                // Each credential kept renewed: when next, and how the last renewal went.
                let now = SystemClock().now
                if case .array(let kept)? = status["credentials"] {
                    for k in kept {
                        let id = "\(k["service"]?.string ?? "?") (\(k["account"]?.string ?? "?"))"
                        let next =
                            k["next_renewal"]?.int64.map {
                                $0 <= now ? "renewing now" : "renewed in \(Format.ago($0 - now))"
                            }
                            ?? "not renewed ahead: \(k["never"]?.string ?? "nothing to renew")"
                        let last = k["last"].map {
                            "; last \(Format.ago(now - ($0["at"]?.int64 ?? now))) ago: \($0["outcome"]?.string ?? "?")"
                        }
                        context.output.value("  \(id): \(next)\(last ?? "")")
                    }
                }
            }
        }

        struct Stop: SessionCommand {
            static let configuration = CommandConfiguration(commandName: "stop", abstract: "Stop the agent.")

            func run(in context: Session) throws {
                guard
                    let answer = try AgentClient.ask(
                        "stop", [:], plan: context.plan, seconds: 5, notices: context.notices)
                else {
                    context.output.notice("no agent was running")
                    return
                }
                // It has left once its process is gone: what it had sent is stored first, and
                // nothing else holds it (docs/agent.md, "Locked").
                let pid = answer["pid"]?.int64.flatMap { pid_t(exactly: $0) }
                let seconds = Double((try? context.httpTimeout) ?? 30) + 10
                guard AgentClient.StoppedAgent(pid: pid, ownsSocket: true).waitGone(seconds) else {
                    throw TokenVaultError.temporary(
                        "the agent (process \(pid.map(String.init) ?? "?")) stopped answering but did not leave within \(Int(seconds)) s"
                    )
                }
                context.output.notice("the agent stopped")
            }
        }
    }
}
