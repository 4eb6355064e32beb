import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

/// `tokenvault --help` and its topics, from the same sources as the man page.
extension ManualText {
    /// The root command's discussion: `tokenvault --help`. The tables are
    /// wrapped here, with a hanging indent, as the parser keeps short lines.
    /// `tokenvault --help`: for people, in a screen (the commands follow it);
    /// the reference is in the man page and the help topics.
    static let helpDiscussion = """
        A SERVICE is a host (api.weibo.com), a URL (https://api.weibo.com/2/) or a provider \
        name (weibo); --account keeps several logins per service.

        More: man tokenvault; tokenvault help environment; tokenvault help exit-codes; \
        the guides in share/doc/tokenvault of the install prefix (/usr, /usr/local), docs/ in the source.
        """

    /// `tokenvault help exit-codes`: the table the man page's EXIT STATUS has.
    static var exitCodesText: String {
        table(TokenVaultError.exitCodes.map { (String($0.code), $0.meaning) })
    }

    /// `tokenvault help environment`: the table the man page's ENVIRONMENT has.
    static var environmentText: String { table(environment.map { ($0.name, $0.meaning) }) }

    /// Two columns, the second wrapped to `width` under itself. This runs at
    /// every start (the root command's configuration is built for every
    /// parse), so it works on bytes: Character counting here cost ~0.8 ms.
    static func table(_ rows: [(String, String)], width: Int = 79) -> String {
        let space: UInt8 = 0x20, newline: UInt8 = 0x0A
        let indent = 2 + min(rows.map(\.0.utf8.count).max() ?? 0, 30) + 2
        var out: [UInt8] = []
        out.reserveCapacity(rows.count * 2 * width)
        for (key, text) in rows {
            if !out.isEmpty { out.append(newline) }
            out += [space, space]
            out += key.utf8
            var column = 2 + key.utf8.count
            for word in Array(text.utf8).split(separator: space) {
                if column < indent {
                    out += repeatElement(space, count: indent - column)
                    column = indent
                } else if column + 1 + word.count > width {
                    out.append(newline)
                    out += repeatElement(space, count: indent)
                    column = indent
                } else {
                    out.append(space)
                    column += 1
                }
                out += word
                column += word.count
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
