import FoundationEssentials
import Glibc
import TokenVaultKit

/// What a command reads on its stdin (a token for `set`, a request for
/// `git-credential`): whole, bounded, never echoed from a terminal.
enum StandardInput {
    /// Everything on stdin, at most 1 MiB (+1 byte to notice more); a terminal gets a no-echo prompt.
    static func read(prompt: String) throws -> Data {
        if let terminal = TerminalInput.standardInput() {
            return Data(terminal.readSecret(prompt: prompt, limit: maxTokenInputBytes))
        }
        return Data(bytes(limit: maxTokenInputBytes))
    }

    /// What stdin holds until its end, at most `limit` bytes (and one more
    /// read, to notice more), or until `complete` says the input is whole.
    static func bytes(limit: Int, complete: ([UInt8]) -> Bool = { _ in false }) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while bytes.count <= limit, !complete(bytes) {
            let n = Glibc.read(0, &buffer, buffer.count)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += buffer[..<n]
        }
        return bytes
    }
}
