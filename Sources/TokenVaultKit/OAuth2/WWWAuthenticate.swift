/// One challenge of a `WWW-Authenticate` header (RFC 9110 §11.6.1): a scheme
/// and its parameters, names in lower case. A protected resource names its
/// metadata here (RFC 9728 §5.1: `resource_metadata`), and the scope a
/// request lacked (RFC 6750 §3.1: `error="insufficient_scope"`, `scope`).
public struct AuthChallenge: Equatable, Sendable {
    /// The scheme in lower case ("bearer").
    public var scheme: String
    public var parameters: [String: String]
    /// A token68 instead of parameters (Basic's realm-less form and the like).
    public var token68: String?

    public init(scheme: String, parameters: [String: String] = [:], token68: String? = nil) {
        self.scheme = scheme
        self.parameters = parameters
        self.token68 = token68
    }

    /// The challenges of one header value, in order; what cannot be read
    /// ends the list (a header from outside is never trusted to be well formed).
    public static func parse(_ header: String) -> [AuthChallenge] {
        var reader = ChallengeReader(Array(header.unicodeScalars))
        return reader.challenges()
    }

    /// The Bearer challenge of a header, if there is one.
    public static func bearer(_ header: String) -> AuthChallenge? {
        parse(header).first { $0.scheme == "bearer" }
    }

    /// The challenge that asks for an access token: Bearer's, else DPoP's
    /// (RFC 9449 §7.1), which carries the same parameters.
    public static func tokenChallenge(_ header: String) -> AuthChallenge? {
        let all = parse(header)
        return all.first { $0.scheme == "bearer" } ?? all.first { $0.scheme == "dpop" }
    }
}

/// RFC 9110's grammar, one character at a time:
/// `challenge = auth-scheme [ 1*SP ( token68 / #auth-param ) ]`,
/// `auth-param = token BWS "=" BWS ( token / quoted-string )`.
private struct ChallengeReader {
    let text: [Unicode.Scalar]
    var i = 0

    init(_ text: [Unicode.Scalar]) { self.text = text }

    static let tchar = Set(
        "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".unicodeScalars)

    var atEnd: Bool { i >= text.count }

    mutating func skipSpaces() {
        while !atEnd, text[i] == " " || text[i] == "\t" { i += 1 }
    }

    mutating func skipSeparators() {
        while !atEnd, text[i] == " " || text[i] == "\t" || text[i] == "," { i += 1 }
    }

    mutating func token() -> String? {
        let start = i
        while !atEnd, Self.tchar.contains(text[i]) { i += 1 }
        return i > start ? String(String.UnicodeScalarView(text[start..<i])) : nil
    }

    mutating func quoted() -> String? {
        guard !atEnd, text[i] == "\"" else { return nil }
        i += 1
        var out = String.UnicodeScalarView()
        while !atEnd {
            let c = text[i]
            i += 1
            if c == "\"" { return String(out) }
            if c == "\\", !atEnd {
                out.append(text[i])
                i += 1
            } else {
                out.append(c)
            }
        }
        return nil  // not closed
    }

    mutating func challenges() -> [AuthChallenge] {
        var found: [AuthChallenge] = []
        skipSeparators()
        while !atEnd, let scheme = token() {
            var challenge = AuthChallenge(scheme: scheme.lowercased())
            skipSpaces()
            while !atEnd {
                let mark = i
                guard let name = token() else { break }
                skipSpaces()
                if atEnd || text[i] != "=" {
                    i = mark  // the next challenge's scheme
                    break
                }
                i += 1
                // "token68" ends in "=" padding and no value follows.
                if atEnd || text[i] == "," || text[i] == "=" {
                    while !atEnd, text[i] == "=" { i += 1 }
                    challenge.token68 = String(String.UnicodeScalarView(text[mark..<i]))
                    skipSeparators()
                    break
                }
                skipSpaces()
                guard let value = quoted() ?? token() else { return found + [challenge] }
                challenge.parameters[name.lowercased()] = value
                skipSpaces()
                guard !atEnd, text[i] == "," else { break }
                skipSeparators()
            }
            found.append(challenge)
            skipSeparators()
        }
        return found
    }
}
