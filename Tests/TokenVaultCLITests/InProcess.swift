import Foundation
import Glibc
import TokenVaultKit
import TokenVaultTestSupport
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
        "exec", "mcp", "agent", "setup", "unlock", "help",
    ]
    /// Subcommands of those that need none: they start nothing and embed no path to the binary.
    static let runsHere: Set = [["agent", "status"], ["agent", "stop"], ["setup", "client-metadata"]]

    /// True when `args` with `env` can run here: a command that needs no
    /// process of its own, run from the test's own thread (commands run side
    /// by side are processes side by side), on the file or etcd backend, and
    /// with no agent that would answer it or be started by it. A session bus
    /// named in `env` is left to the binary where it would be used: libsecret
    /// (`doctor`, `migrate` and `backend` look for the Secret Service, `import gh`
    /// reads gh's keyring items) and
    /// desktop notifications (while a `NotificationMonitor` watches) talk to
    /// the bus of the process's own environment; with none named, the
    /// settings say there is no Secret Service before libsecret is asked.
    static func runsInProcess(_ args: [String], env: [String: String]) -> Bool {
        guard Thread.isMainThread, let first = args.first, !first.hasPrefix("-"),
            !needsAProcess.contains(first) || runsHere.contains(Array(args.prefix(2)))
        else { return false }
        guard !args.contains(where: { ["--help", "-h", "--version", "--generate-completion-script"].contains($0) })
        else { return false }
        // The backend as the run decides it: the variable, else config.toml's `backend` (a fleet host's).
        let backend = env["TOKENVAULT_BACKEND"] ?? Config.backendChoice(Settings(environment: env))?.rawValue ?? ""
        guard ["file", "etcd"].contains(backend), ["manual", "off"].contains(env["TOKENVAULT_AGENT"] ?? "")
        else { return false }
        if env["DBUS_SESSION_BUS_ADDRESS"] != nil,
            ["doctor", "migrate", "backend", "import"].contains(first) || NotificationMonitor.watching.value > 0
        {
            return false
        }
        let settings = Settings(environment: env)
        return env["TOKENVAULT_AGENT"] == "off" || !FileManager.default.fileExists(atPath: AgentSocket.path(settings))
    }

    /// Argon2id's answers, kept for the test process (RememberedDerivations).
    static let derivations = RememberedDerivations()

    /// The settings of a run in this process, command or bridge: its commands
    /// (a `*_command`) see the run's environment, as in a process of its own,
    /// and the vault's key is derived once per passphrase, salt and cost, not
    /// by every command (the bridge opens the vault for every request).
    static func settings(_ env: [String: String]) -> Settings {
        var settings = Settings(environment: env)
        settings.child = ChildContext(environment: env)
        settings.keyDerivation = derivations.derivation
        return settings
    }

    /// One command's run: its exit status and what it printed.
    static func run(_ args: [String], env: [String: String], stdin: String?, clock: Clock? = nil) -> Run {
        // stdin from a file (a pipe would fill before the command reads it): written, then read from its start.
        var template = Array((NSTemporaryDirectory() + "tv-stdin-XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        precondition(fd >= 0)
        unlink(String(nulTerminated: template))
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
        var settings = Self.settings(env)
        if let clock { settings.clock = clock }
        // The test harness owns the run's output, as the agent owns a client's.
        let output = RunOutput.kept()
        let status = TokenVaultMain.execute(args, plan: Plan(settings: settings), output: output) ?? 1
        let (out, err) = output.captured
        return Run(status: status, stdout: out, stderr: err)
    }
}

extension InProcess {
    /// A program that notes in `marker` that it ran, then runs the binary: the
    /// `executable` of in-process commands, so that a login the bridge starts
    /// is the binary's and is counted as such (`BinaryUse`).
    static let marker = NSTemporaryDirectory() + "tv-ran-binary-\(getpid())"
    static let noted: String = {
        let path = NSTemporaryDirectory() + "tv-noted-\(getpid()).sh"
        let script = "#!/bin/sh\necho ran >> '\(marker)'\nexec '\(Paths.binary)' \"$@\"\n"
        _ = FileManager.default.createFile(
            atPath: path, contents: Data(script.utf8), attributes: [.posixPermissions: 0o700])
        return path
    }()

    /// `tokenvault mcp URL` in this process, driven as a client drives it by
    /// the clock (what bridge_driver.py does for the binary): each of `sends`
    /// written to its stdin at its time, stdin closed once every id of `until`
    /// has its answer (or after `limit` seconds); the lines it wrote, each with
    /// the second it came, and its stderr.
    static func bridge(
        _ url: String, env: [String: String], sends: [(at: Double, line: String)], until: Set<Int>, limit: Double
    ) -> (lines: [(t: Double, line: String)], stderr: String) {
        var ends: [Int32] = [-1, -1]
        precondition(pipe(&ends) == 0)
        let saved = dup(0)
        dup2(ends[0], 0)
        close(ends[0])
        unlink(marker)
        var made = Self.settings(env)
        made.executable = noted
        let settings = made
        let answered = Locked<Set<Int>>([])
        let timed = Locked<[(t: Double, line: String)]>([])
        let started = Date()
        let allAnswered = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let result = Locked<(String, String)>(("", ""))
        let runner = Thread {
            let output = RunOutput.kept(onLine: { line in
                timed.withLock { $0.append((Date().timeIntervalSince(started), line)) }
                guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) else { return }
                let ids = ((o as? [[String: Any]]) ?? [(o as? [String: Any]) ?? [:]]).compactMap { m -> Int? in
                    m["result"] != nil || m["error"] != nil ? m["id"] as? Int : nil
                }
                let done = answered.withLock { a -> Bool in
                    a.formUnion(ids)
                    return !until.isEmpty && until.isSubset(of: a)
                }
                if done { allAnswered.signal() }
            })
            _ = TokenVaultMain.execute(["mcp", url], plan: Plan(settings: settings), output: output)
            result.withLock { $0 = ("", output.captured.stderr) }
            finished.signal()
        }
        runner.start()
        for send in sends {
            let wait = send.at - Date().timeIntervalSince(started)
            if wait > 0 { usleep(useconds_t(wait * 1e6)) }
            Posix.write(ends[1], send.line + "\n")
        }
        _ = allAnswered.wait(timeout: .now() + max(0, limit - Date().timeIntervalSince(started)))
        close(ends[1])
        _ = finished.wait(timeout: .now() + 15)
        dup2(saved, 0)
        close(saved)
        if FileManager.default.fileExists(atPath: marker) { BinaryUse.note([Paths.binary]) }
        BinaryUse.noteInProcess()
        return (timed.withLock { $0 }, result.withLock { $0.1 })
    }
}
