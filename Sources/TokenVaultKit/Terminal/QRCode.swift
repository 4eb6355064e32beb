internal import CTokenVault
import Dispatch
import FoundationEssentials
import Glibc

/// A QR code from libqrencode (loaded on first use), drawn for a terminal.
public struct QRCode: Sendable {
    /// Modules per side.
    public let width: Int
    /// Row by row; true for a dark module.
    public let modules: [Bool]

    /// Encodes `text`; a library that cannot be loaded, or a text too long, is 69 / 65.
    public init(_ text: String) throws {
        var out: UnsafeMutablePointer<UInt8>?
        var message: UnsafePointer<CChar>?
        let width = Int(tv_qr_encode(text, &out, &message))
        guard width > 0, let out else {
            let why = message.map { String(cString: $0) } ?? "unknown"
            if tv_qr_library_available() == 0 {
                throw TokenVaultError.backendUnavailable(
                    "cannot draw a QR code: libqrencode cannot be loaded (\(why))",
                    hint: "install libqrencode4, or use --no-qr")
            }
            throw TokenVaultError.badInput("cannot draw a QR code: \(why)")
        }
        defer { tv_qr_free(out) }
        self.width = width
        modules = (0..<width * width).map { out[$0] != 0 }
    }

    public func isDark(_ x: Int, _ y: Int) -> Bool {
        x >= 0 && y >= 0 && x < width && y < width && modules[y * width + x]
    }

    /// Two rows of modules per line in Unicode half blocks, black on white
    /// whatever the terminal's colours (a phone camera wants dark on light),
    /// with a quiet zone of `quiet` modules.
    public func terminalLines(quiet: Int = 2) -> [String] {
        var lines: [String] = []
        let range = -quiet..<(width + quiet)
        for y in stride(from: -quiet, to: width + quiet, by: 2) {
            var line = "\u{1B}[30;107m"
            for x in range {
                switch (isDark(x, y), isDark(x, y + 1)) {
                case (true, true): line += "\u{2588}"
                case (true, false): line += "\u{2580}"
                case (false, true): line += "\u{2584}"
                case (false, false): line += " "
                }
            }
            lines.append(line + "\u{1B}[0m")
        }
        return lines
    }
}
