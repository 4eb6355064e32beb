import FoundationEssentials
import Glibc

/// The plaintext files other tools keep tokens in (docs/reference.md,
/// "Moving in"), read as those tools write them: git's credential store
/// (git-credential-store(1): one `scheme://user:password@host[/path]` URL a
/// line, user and password percent-encoded), a `.netrc` (`machine HOST
/// login USER password SECRET`, as curl and ftp read it), and gh's
/// `hosts.yml` where gh keeps tokens in the file (`--insecure-storage`). A line or entry
/// that is not one is the error, naming it: nothing is imported from a file
/// that is half-written or not what it claims.
public enum PlaintextSource: String, CaseIterable, Sendable {
    case gitCredentials = "git-credentials"
    case netrc
    case gh

    /// One secret found in a source: where, for whom, and where in the file.
    public struct Found: Sendable {
        public var proto: String
        public var host: String
        public var user: String
        public var secret: String
        /// The line (git-credentials) or the line of `machine` (netrc), from 1.
        public var line: Int
        /// The lines that hold it (netrc: from `machine` to its last token;
        /// gh: each `oauth_token` line of the token).
        public var lines: [Int]
        /// gh: the account's token is in the Secret Service (gh's keyring
        /// item), not the file; `secret` is empty until it is read.
        public var inKeyring = false
        /// gh: the active account of its host (its keyring item may be the
        /// one gh keeps for the active account, with an empty user name).
        public var active = false
    }

    /// `text` without the lines of `removed`; nil when one of them shares a
    /// line with an entry that stays (it cannot be cut out whole).
    public static func removing(_ removed: [Found], from text: String, all: [Found]) -> String? {
        let gone = Set(removed.flatMap(\.lines))
        let kept = all.filter { f in !removed.contains { $0.line == f.line } }
        guard !kept.contains(where: { !gone.isDisjoint(with: $0.lines) }) else { return nil }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        return lines.enumerated().filter { !gone.contains($0.offset + 1) }.map(\.element).joined(separator: "\n")
    }

    /// The attributes of gh's keyring items for `found` (go-keyring's:
    /// `service` `gh:HOST` and `username`), the account's own first, then,
    /// for the active account, the one gh keeps with an empty user name.
    public static func ghKeyringItems(_ found: Found) -> [[(name: String, value: String)]] {
        let service = ("service", "gh:" + found.host)
        return ([found.user] + (found.active ? [""] : [])).map { [service, ("username", $0)] }
    }

    /// Where the tool keeps it by default.
    public func defaultPath(_ settings: Settings) -> String {
        let home = settings[.home] ?? ""
        switch self {
        case .gitCredentials: return home + "/.git-credentials"
        case .netrc: return home + "/.netrc"
        case .gh:
            if let dir = settings[.ghConfigDir] { return dir + "/hosts.yml" }
            return (settings[.xdgConfigHome] ?? home + "/.config") + "/gh/hosts.yml"
        }
    }

    /// Every secret of `text`, in order; 65 naming the first line that is not one.
    public func parse(_ text: String, path: String) throws -> [Found] {
        switch self {
        case .gitCredentials: return try Self.gitCredentials(text, path: path)
        case .netrc: return try Self.netrc(text, path: path)
        case .gh: return try Self.gh(text, path: path)
        }
    }

    static func gitCredentials(_ text: String, path: String) throws -> [Found] {
        var found: [Found] = []
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmedWhitespace()
            if line.isEmpty { continue }
            func bad() -> TokenVaultError {
                .badInput("\(path):\(i + 1): not a credential URL (scheme://user:password@host); nothing was imported")
            }
            guard let scheme = line.firstRange(of: "://") else { throw bad() }
            let rest = line[scheme.upperBound...]
            let authority = rest.prefix { $0 != "/" }
            guard let at = authority.lastIndex(of: "@") else { throw bad() }
            let userInfo = authority[..<at], host = authority[authority.index(after: at)...]
            guard let colon = userInfo.firstIndex(of: ":"), !host.isEmpty,
                let user = FormEncoding.percentDecoded(String(userInfo[..<colon])),
                let secret = FormEncoding.percentDecoded(String(userInfo[userInfo.index(after: colon)...])),
                !secret.isEmpty
            else { throw bad() }
            found.append(
                Found(
                    proto: String(line[..<scheme.lowerBound]).lowercased(), host: host.lowercased(), user: user,
                    secret: secret, line: i + 1, lines: [i + 1]))
        }
        return found
    }

    static func netrc(_ text: String, path: String) throws -> [Found] {
        // Tokens with the line each starts on; a "quoted string" is one token.
        var tokens: [(String, Int)] = []
        var line = 1
        var current = "", start = 1, quoted = false, inToken = false
        for c in text {
            if quoted {
                if c == "\"" { quoted = false } else { current.append(c) }
                if c == "\n" { line += 1 }
                continue
            }
            if c.isWhitespace {
                if inToken { tokens.append((current, start)) }
                current = ""
                inToken = false
                if c == "\n" { line += 1 }
                continue
            }
            if !inToken { (inToken, start) = (true, line) }
            if c == "\"" { quoted = true } else { current.append(c) }
        }
        if inToken { tokens.append((current, start)) }
        var found: [Found] = []
        var i = 0
        var entry: (host: String, line: Int)?
        var user = "", secret = "", last = 0
        func close() throws {
            guard let e = entry else { return }
            guard !secret.isEmpty else {
                throw TokenVaultError.badInput(
                    "\(path):\(e.line): machine \(e.host) has no password; nothing was imported")
            }
            found.append(
                Found(
                    proto: "https", host: e.host.lowercased(), user: user, secret: secret, line: e.line,
                    lines: Array(e.line...max(e.line, last))))
            entry = nil
        }
        while i < tokens.count {
            let (word, at) = tokens[i]
            func value() throws -> String {
                guard i + 1 < tokens.count else {
                    throw TokenVaultError.badInput("\(path):\(at): \(word) has no value; nothing was imported")
                }
                i += 1
                return tokens[i].0
            }
            switch word {
            case "machine":
                try close()
                entry = (try value(), at)
                (user, secret) = ("", "")
            case "default":
                try close()
                entry = nil  // a login for any host: not a service's, left where it is
            case "login": user = try value()
            case "password": secret = try value()
            case "account": _ = try value()
            case "macdef":
                // A macro runs to the next empty line: its lines are no tokens here.
                try close()
                _ = try value()
                let end = text.split(separator: "\n", omittingEmptySubsequences: false).dropFirst(at).firstIndex {
                    $0.trimmedWhitespace().isEmpty
                }
                let last = end.map { $0 + 1 } ?? Int.max
                while i + 1 < tokens.count, tokens[i + 1].1 < last { i += 1 }
            default:
                throw TokenVaultError.badInput(
                    "\(path):\(at): \(Quoted.text(word)) is not a netrc keyword; nothing was imported")
            }
            last = tokens[min(i, tokens.count - 1)].1
            i += 1
        }
        try close()
        return found
    }

    /// gh's hosts.yml: a host a top-level key; under it `user` (the active
    /// account), `oauth_token` (its token), and `users:` with a token per
    /// account where gh keeps them in the file. A host whose tokens are in
    /// the keyring has none here.
    static func gh(_ text: String, path: String) throws -> [Found] {
        struct Host {
            var name: String
            var line: Int
            var user = ""
            var token: (String, Int)?
            var users: [(name: String, token: String?, line: Int)] = []
        }
        var hosts: [Host] = []
        // The indentation of a host's own keys, and of the accounts under its `users:`.
        var hostIndent: Int?, userIndent: Int?, inUsers = false
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let content = raw.prefix { $0 != "#" }
            guard !content.trimmedWhitespace().isEmpty else { continue }
            let indent = content.prefix { $0 == " " }.count
            func bad(_ why: String) -> TokenVaultError {
                .badInput("\(path):\(i + 1): not gh's hosts.yml (\(why)); nothing was imported")
            }
            guard let colon = content.firstIndex(of: ":") else { throw bad("a line without a key") }
            let key = content[..<colon].trimmedWhitespace()
            var value = content[content.index(after: colon)...].trimmedWhitespace()
            if value.count >= 2, let q = value.first, q == "\"" || q == "'", value.last == q {
                value = String(value.dropFirst().dropLast())
            }
            if indent == 0 {
                hosts.append(Host(name: key, line: i + 1))
                (hostIndent, userIndent, inUsers) = (nil, nil, false)
                continue
            }
            guard !hosts.isEmpty else { throw bad("no host above this line") }
            let h = hosts.count - 1
            if hostIndent == nil { hostIndent = indent }
            if indent == hostIndent {
                inUsers = key == "users"
                userIndent = nil
                if key == "user" { hosts[h].user = value }
                if key == "oauth_token", !value.isEmpty { hosts[h].token = (value, i + 1) }
            } else if inUsers {
                if userIndent == nil { userIndent = indent }
                if indent == userIndent {
                    hosts[h].users.append((key, nil, i + 1))
                } else if key == "oauth_token", !value.isEmpty, !hosts[h].users.isEmpty {
                    hosts[h].users[hosts[h].users.count - 1].token = value
                    hosts[h].users[hosts[h].users.count - 1].line = i + 1
                }
            }
        }
        var found: [Found] = []
        for h in hosts {
            let host = h.name.lowercased()
            // The active account's token, and each other account's the file keeps.
            if let (token, line) = h.token {
                let same = h.users.filter { $0.token == token }.map(\.line)
                found.append(
                    Found(
                        proto: "https", host: host, user: h.user, secret: token, line: line, lines: [line] + same,
                        active: true))
            } else if !h.user.isEmpty {
                found.append(
                    Found(
                        proto: "https", host: host, user: h.user, secret: "", line: h.line, lines: [], inKeyring: true,
                        active: true))
            }
            for u in h.users where u.name != h.user || h.user.isEmpty {
                if let token = u.token, token != h.token?.0 {
                    found.append(
                        Found(proto: "https", host: host, user: u.name, secret: token, line: u.line, lines: [u.line]))
                } else if u.token == nil {
                    found.append(
                        Found(
                            proto: "https", host: host, user: u.name, secret: "", line: u.line, lines: [],
                            inKeyring: true))
                }
            }
        }
        return found
    }
}
