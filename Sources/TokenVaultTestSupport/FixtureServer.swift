import Foundation
import TokenVaultKit

/// A fixture server of Tests/Fixtures, started for a test class: it prints
/// "port N" once it listens on 127.0.0.1.
public enum FixtureServer {
    /// Starts `script` with `python` and returns the process and its port
    /// (0 when it printed none). The first line is read with read(2), retried
    /// on EINTR: a child of another test ending meanwhile must not cut it short.
    public static func start(
        _ script: URL, arguments: [String] = [], python: String = "/usr/bin/python3",
        environment: [String: String]? = nil
    ) -> (Process, Int) {
        let (process, port) = started(script, arguments: arguments, python: python, environment: environment)
        return (process, port ?? 0)
    }

    /// The same, with nil when it printed no `port N` line (a server may
    /// listen on no port: `port 0`).
    public static func started(
        _ script: URL, arguments: [String] = [], python: String = "/usr/bin/python3",
        environment: [String: String]? = nil
    ) -> (Process, Int?) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script.path] + arguments
        if let environment { process.environment = environment }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return (process, nil) }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        let fd = out.fileHandleForReading.fileDescriptor
        while line.last != 0x0A {
            let n = read(fd, &byte, 1)
            if n < 0, errno == EINTR { continue }
            guard n == 1 else { break }
            line.append(byte)
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("port "), let port = Int(text.dropFirst(5)) else { return (process, nil) }
        return (process, port)
    }
}

extension Locked {
    /// The value now (a copy), for a test's assertions.
    public var value: Value { withLock { $0 } }

    /// Changes the value under the lock.
    public func mutate(_ change: (inout Value) -> Void) { withLock(change) }
}
