import Dispatch
import FoundationEssentials
import Glibc

/// Values written as shell words, for `get --format env` and for every value
/// a hint puts in a command to copy (docs/security.md): a name from a config,
/// an account from the environment, never run by the paste.
public enum ShellWord {
    /// A word that sh, dash, bash, zsh and fish all read back as `s`, safe to
    /// eval in each: single-quoted runs, with every `'` and `\` outside the
    /// quotes as `\'` and `\\`. (fish reads `\'` and `\\` as escapes even
    /// inside single quotes, so the POSIX `'\''` idiom alone is not safe there.)
    public static func quoted(_ s: String) -> String {
        var out = ""
        var run = ""
        func flush() {
            if !run.isEmpty { out += "'" + run + "'" }
            run = ""
        }
        for c in s {
            if c == "'" || c == "\\" {
                flush()
                out += "\\" + String(c)
            } else {
                run.append(c)
            }
        }
        flush()
        return out.isEmpty ? "''" : out
    }

    /// `s` as it reads best in a hint: bare when every character is one no
    /// shell treats specially (letters, digits, `@%+=:,./_-`), else `quoted`.
    /// Control characters are shown as spaces: a hint is one line.
    public static func word(_ s: String) -> String {
        let safe =
            !s.isEmpty
            && s.unicodeScalars.allSatisfy {
                ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)))
                    || "@%+=:,./_-".unicodeScalars.contains($0)
            }
        return safe ? s : quoted(OutsideText.line(s, limit: 300))
    }
}
