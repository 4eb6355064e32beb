import Glibc

/// Lines from a file descriptor (the MCP client's stdin), each at most
/// `maxBytes`: a longer one is reported once and skipped to its end, never
/// kept whole in memory.
public struct LineReader {
    public enum Line: Equatable {
        case line([UInt8])
        case tooLong
    }

    let fd: Int32
    let maxBytes: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var skipping = false
    private var ended = false

    public init(fd: Int32, maxBytes: Int) {
        self.fd = fd
        self.maxBytes = maxBytes
    }

    /// The next line without its newline (and a carriage return before it);
    /// nil at the end of input. A last line without a newline counts.
    public mutating func next() -> Line? {
        while true {
            if let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                var line = Array(buffer[start..<newline])
                start = newline + 1
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                if skipping {
                    skipping = false
                    continue
                }
                return line.count > maxBytes ? .tooLong : .line(line)
            }
            if buffer.count - start > maxBytes {
                // Too long already: say so once, drop what came, and drop the rest up to its newline.
                buffer.removeAll(keepingCapacity: true)
                start = 0
                if !skipping {
                    skipping = true
                    return .tooLong
                }
            }
            if ended {
                guard start < buffer.count, !skipping else { return nil }
                let line = Array(buffer[start...])
                start = buffer.count
                return .line(line)
            }
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 {
                ended = true
                continue
            }
            buffer += chunk[0..<n]
        }
    }
}
