internal import CTokenVault
import Dispatch
import FoundationEssentials
import Glibc

/// RFC 5849 §3.4: signs one request for OAuth 1.0a (HMAC-SHA1 or PLAINTEXT).
public struct OAuth1Signer: Sendable {
    public enum Method: String, Sendable { case hmacSHA1 = "HMAC-SHA1", plaintext = "PLAINTEXT" }

    public var consumerKey: String
    public var consumerSecret: String
    public var token: String?
    public var tokenSecret: String?
    public var method: Method

    public init(
        consumerKey: String, consumerSecret: String, token: String? = nil, tokenSecret: String? = nil,
        method: Method = .hmacSHA1
    ) {
        self.consumerKey = consumerKey
        self.consumerSecret = consumerSecret
        self.token = token
        self.tokenSecret = tokenSecret
        self.method = method
    }

    /// A fresh nonce (libsodium randomness) and the current time.
    public static func freshNonce() -> String {
        Hex.encode(Sodium.randomBytes(16))
    }

    /// The `Authorization: OAuth …` header value for a request. `form` is the
    /// form-encoded body's parameters, which are signed too; `extra` carries
    /// oauth_callback or oauth_verifier.
    public func authorization(
        method httpMethod: String, url: String, form: [(String, String)] = [],
        extra: [(String, String)] = [], nonce: String, timestamp: Int64, realm: String? = nil
    ) throws -> String {
        var oauth =
            [
                ("oauth_consumer_key", consumerKey), ("oauth_nonce", nonce),
                ("oauth_signature_method", method.rawValue), ("oauth_timestamp", String(timestamp)),
                ("oauth_version", "1.0"),
            ] + extra
        if let token { oauth.append(("oauth_token", token)) }
        let signature = try sign(method: httpMethod, url: url, parameters: oauth + form)
        oauth.append(("oauth_signature", signature))
        var parts = oauth.sorted { $0.0 < $1.0 }.map { "\(Self.encode($0.0))=\"\(Self.encode($0.1))\"" }
        if let realm { parts.insert("realm=\"\(realm.replacing("\"", with: ""))\"", at: 0) }
        return "OAuth " + parts.joined(separator: ", ")
    }

    /// The signature over the base string; `parameters` are the oauth_* and form parameters.
    func sign(method httpMethod: String, url: String, parameters: [(String, String)]) throws -> String {
        let key = Self.encode(consumerSecret) + "&" + Self.encode(tokenSecret ?? "")
        switch method {
        case .plaintext:
            return key
        case .hmacSHA1:
            let base = try Self.baseString(method: httpMethod, url: url, parameters: parameters)
            // libsodium has no HMAC-SHA1: OpenSSL's libcrypto, loaded on first use.
            var keyBytes = Array(key.utf8)
            defer { Sodium.wipe(&keyBytes) }
            let data = Array(base.utf8)
            var mac = [UInt8](repeating: 0, count: 20)
            var message = [CChar](repeating: 0, count: 256)
            guard tv_hmac_sha1(keyBytes, keyBytes.count, data, data.count, &mac, &message, message.count) == 1 else {
                let why = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                throw TokenVaultError.backendUnavailable(
                    "cannot sign the OAuth 1.0a request: \(why)", hint: "install libssl3")
            }
            return Data(mac).base64EncodedString()
        }
    }

    /// §3.4.1: METHOD & base-URI & normalized parameters (the URL's query included).
    public static func baseString(method: String, url: String, parameters: [(String, String)]) throws -> String {
        let (base, query) = try baseURI(url)
        let all: [(String, String)] = (query + parameters).filter { $0.0 != "oauth_signature" && $0.0 != "realm" }
        let encoded: [(String, String)] = all.map { (encode($0.0), encode($0.1)) }
        // Sort by encoded name, then encoded value (§3.4.1.3.2).
        let sorted = encoded.sorted { a, b in a.0 == b.0 ? a.1 < b.1 : a.0 < b.0 }
        let normalized = sorted.map { pair in pair.0 + "=" + pair.1 }.joined(separator: "&")
        return method.uppercased() + "&" + encode(base) + "&" + encode(normalized)
    }

    /// §3.4.1.2: scheme and host lower-cased, default port dropped, no query or fragment;
    /// and the query's parameters (§3.4.1.3.1).
    static func baseURI(_ url: String) throws -> (String, [(String, String)]) {
        guard let schemeEnd = url.firstRange(of: "://") else {
            throw TokenVaultError.usage("--url must be an absolute http(s) URL, not \(Quoted.text(url))")
        }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw TokenVaultError.usage("--url must be an http or https URL, not \(Quoted.text(url))")
        }
        var rest = url[schemeEnd.upperBound...]
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var query = ""
        if let q = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: q)...])
            rest = rest[..<q]
        }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<slash].lowercased()
        let path = rest[slash...].isEmpty ? "/" : String(rest[slash...])
        if let at = authority.lastIndex(of: "@") { authority = String(authority[authority.index(after: at)...]) }
        if (scheme == "http" && authority.hasSuffix(":80")) || (scheme == "https" && authority.hasSuffix(":443")) {
            authority = String(authority[..<authority.lastIndex(of: ":")!])
        }
        guard !authority.isEmpty else { throw TokenVaultError.usage("--url has no host: \(Quoted.text(url))") }
        return ("\(scheme)://\(authority)\(path)", parseQuery(query))
    }

    /// A query or form body as name/value pairs; `name` alone has an empty value.
    public static func parseQuery(_ text: String) -> [(String, String)] {
        text.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
        }
    }

    static func decode(_ s: Substring) -> String {
        FormEncoding.decode("x=" + s)?.first?.1 ?? String(s)
    }

    /// RFC 3986 percent-encoding of everything but unreserved characters (§3.6).
    static func encode(_ s: String) -> String { FormEncoding.percentEncode(s) }
}
