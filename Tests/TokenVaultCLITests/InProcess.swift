import Foundation
import Glibc
import TokenVaultKit
import XCTest

@testable import TokenVaultCLI

/// `tokenvault ARGS` run inside the test process, the way the agent runs a
/// client's command (docs/hacking.md, "Tests"): `TokenVaultMain.execute` with
/// settings made from the sandbox's environment, stdout and stderr captured,
/// stdin from `stdin`. No process boundary, so nothing a process boundary
/// holds (a signal, an exit, the agent's socket, a terminal, a child that
/// replaces the process) is tested this way: `runsInProcess` says which
/// commands may be.
enum InProcess {
    /// Commands that need a process of their own: they start or replace
    /// processes (exec, login, mcp, agent, setup, unlock on a terminal),
    /// print help and exit, or take part in the agent's protocol.
    static let needsAProcess: Set = [
        "exec", "mcp", "agent", "setup", "unlock", "help", "migrate", "backend",
    ]
    /// Subcommands of those that need none: they start nothing and embed no path to the binary.
    static let runsHere: Set = [["agent", "status"], ["agent", "stop"], ["setup", "client-metadata"]]

    /// True when `args` with `env` can run here: a command that needs no
    /// process of its own, run from the test's own thread (commands run side
    /// by side are processes side by side), on the file or etcd backend, and
    /// with no agent that would answer it or be started by it. A session bus
    /// named in `env` is left to the binary where it would be used: libsecret,
    /// `doctor`'s look at it and desktop notifications (while a
    /// `NotificationMonitor` watches) talk to the bus of the process's own
    /// environment.
    static func runsInProcess(_ args: [String], env: [String: String]) -> Bool {
        guard Thread.isMainThread, let first = args.first, !first.hasPrefix("-"),
            !needsAProcess.contains(first) || runsHere.contains(Array(args.prefix(2)))
        else { return false }
        guard !args.contains(where: { ["--help", "-h", "--version", "--generate-completion-script"].contains($0) })
        else { return false }
        guard ["file", "etcd"].contains(env["TOKENVAULT_BACKEND"] ?? ""),
            ["manual", "off"].contains(env["TOKENVAULT_AGENT"] ?? "")
        else { return false }
        if env["DBUS_SESSION_BUS_ADDRESS"] != nil, first == "doctor" || NotificationMonitor.watching.value > 0 {
            return false
        }
        let settings = Settings(environment: env)
        return env["TOKENVAULT_AGENT"] == "off" || !FileManager.default.fileExists(atPath: AgentSocket.path(settings))
    }

    /// One command's run: its exit status and what it printed.
    static func run(_ args: [String], env: [String: String], stdin: String?) -> Run {
        // stdin from a file (a pipe would fill before the command reads it): written, then read from its start.
        var template = Array((NSTemporaryDirectory() + "tv-stdin-XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        precondition(fd >= 0)
        unlink(String(cString: template))
        Posix.write(fd, stdin ?? "")
        lseek(fd, 0, SEEK_SET)
        let saved = dup(0)
        dup2(fd, 0)
        close(fd)
        defer {
            dup2(saved, 0)
            close(saved)
        }
        BinaryUse.noteInProcess()
        let (result, out, err) = Output.capturing {
            TokenVaultMain.execute(args, settings: Settings(environment: env)) ?? 1
        }
        let status: Int32 = (try? result.get()) ?? 1
        return Run(status: status, stdout: out, stderr: err)
    }
}
