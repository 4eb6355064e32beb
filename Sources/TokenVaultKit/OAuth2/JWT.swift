internal import CSodium
internal import CTokenVault
import Dispatch
import FoundationEssentials
import Glibc

/// JSON Web Tokens for RFC 7523: a service account's assertion (jwt_bearer)
/// and client authentication (private_key_jwt, client_secret_jwt). RS256 and
/// ES256 are signed by OpenSSL's libcrypto (loaded on first use), HS256 by
/// libsodium; nothing here is hand-written cryptography.
public enum JWT {
    /// The longest an assertion lives (RFC 7523 asks for a short one).
    public static let lifetime: Int64 = 300

    /// What signs: a PEM private key (RS256 or ES256, from its type), or a shared secret (HS256).
    public enum Key: Sendable {
        case pem(SecureBytes, keyID: String?)
        case secret(SecureBytes)
        /// An Ed25519 secret key (libsodium's 64 bytes): EdDSA, signed by libsodium.
        case ed25519(SecureBytes)
    }

    static func base64urlDecode(_ text: some StringProtocol) -> Data? {
        var s = String(text).replacing("-", with: "+").replacing("_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s)
    }

    /// base64url of a JSON object, as a JWS part.
    private static func part(_ object: [String: JSONValue]) throws -> String {
        PKCE.base64url(Array(try JSONEncoder.sorted.encode(JSONValue.object(object))))
    }

    /// The compact JWS of `claims`; `header` adds to (or replaces) the
    /// protected header's fields (`typ` is `JWT` unless it says otherwise).
    public static func sign(
        claims: [String: JSONValue], key: Key, header extra: [String: JSONValue] = [:]
    ) throws -> String {
        let payload = try part(claims)
        switch key {
        case .secret(let secret):
            let input = Array((try part(["alg": .string("HS256"), "typ": .string("JWT")]) + "." + payload).utf8)
            guard secret.withUnsafeBytes({ $0.count }) > 0 else {
                throw TokenVaultError.config("an empty secret cannot sign a JWT")
            }
            let mac = secret.withUnsafeBytes { Sodium.hmacSHA256(key: $0, input) }
            return String(decoding: input, as: UTF8.self) + "." + PKCE.base64url(mac)
        case .ed25519(let secretKey):
            var header: [String: JSONValue] = ["alg": .string("EdDSA"), "typ": .string("JWT")]
            header.merge(extra) { $1 }
            let input = Array((try part(header) + "." + payload).utf8)
            var signature = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
            secretKey.withUnsafeBytes { sk in
                _ = crypto_sign_detached(
                    &signature, nil, input, UInt64(input.count), sk.bindMemory(to: UInt8.self).baseAddress!)
            }
            return String(decoding: input, as: UTF8.self) + "." + PKCE.base64url(signature)
        case .pem(let pem, let keyID):
            // The key is read once: its type names the algorithm the header states.
            return try withKey(pem, failure: signingError) { handle, alg in
                var header: [String: JSONValue] = ["alg": .string(alg), "typ": .string("JWT")]
                if let keyID { header["kid"] = .string(keyID) }
                header.merge(extra) { $1 }
                let input = try part(header) + "." + payload
                let data = Array(input.utf8)
                var out: UnsafeMutablePointer<UInt8>?
                var message = [CChar](repeating: 0, count: 512)
                let n = tv_sign_key_sign(handle, data, data.count, &out, &message, message.count)
                guard n > 0, let out else { throw signingError(String(nulTerminated: message)) }
                defer { tv_sign_free(out) }
                return input + "." + PKCE.base64url(Array(UnsafeBufferPointer(start: out, count: Int(n))))
            }
        }
    }

    /// Runs `body` with the private key in `pem` as libcrypto reads it (RS256
    /// or ES256, by its type) and its algorithm's name; `failure` makes the
    /// error of a key that cannot be read from libcrypto's reason.
    static func withKey<T>(
        _ pem: SecureBytes, failure: (String) -> Error, _ body: (OpaquePointer, String) throws -> T
    ) throws -> T {
        var message = [CChar](repeating: 0, count: 512)
        var alg: UnsafePointer<CChar>?
        guard
            let handle = pem.withUnsafeBytes({ p in
                tv_sign_key_open(
                    p.baseAddress?.assumingMemoryBound(to: CChar.self), p.count, &alg, &message, message.count)
            }), let alg
        else { throw failure(String(nulTerminated: message)) }
        defer { tv_sign_key_free(handle) }
        return try body(handle, String(cString: alg))
    }

    private static func signingError(_ why: String) -> TokenVaultError {
        if tv_sign_library_available() == 0 {
            return .backendUnavailable("cannot sign a JWT: \(why)", hint: "install libssl3")
        }
        return .config("cannot sign a JWT with that key: \(why)")
    }

    /// The claims of a JWT, decoded and not verified: for display only.
    public static func claims(of token: String) -> [String: JSONValue]? { part(1, of: token) }

    /// The JOSE header of a compact JWT (`typ`, `alg`), unverified; nil when it is not one.
    public static func header(of token: String) -> [String: JSONValue]? { part(0, of: token) }

    private static func part(_ index: Int, of token: String) -> [String: JSONValue]? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = base64urlDecode(parts[index]),
            case .object(let o)? = JSONValue.parsed(data)
        else { return nil }
        return o
    }

    /// The claims every assertion carries: issuer, subject, audience, a
    /// lifetime of at most 5 minutes, and a `jti` never used before.
    public static func assertionClaims(
        issuer: String, subject: String, audience: String, now: Int64
    ) -> [String: JSONValue] {
        [
            "iss": .string(issuer), "sub": .string(subject), "aud": .string(audience),
            "iat": .integer(now), "nbf": .integer(now), "exp": .integer(now + lifetime),
            "jti": .string(PKCE.base64url(Sodium.randomBytes(16))),
        ]
    }
}

/// The private key a provider signs with: `private_key_file` (PEM), or a
/// Google service-account `credentials_file` (JSON: client_email, private_key,
/// private_key_id, token_uri). Read when a signature is needed, never from argv.
public struct SigningKey {
    public var key: JWT.Key
    /// From a credentials file: who the account is, and where its token endpoint is.
    public var clientEmail: String?
    public var tokenURI: String?

    public static func load(
        privateKeyFile: String?, credentialsFile: String?, provider name: String
    ) throws -> SigningKey {
        if let path = credentialsFile {
            var bytes = try read(path, what: "the credentials file of \(name)")
            defer { Sodium.wipe(&bytes) }
            guard case .object(let o)? = JSONValue.parsed(Data(bytes)),
                let pem = o["private_key"]?.string, let email = o["client_email"]?.string
            else {
                throw TokenVaultError.config(
                    "provider \(name): credentials_file \(path) is not a service-account key (JSON with client_email and private_key)"
                )
            }
            var pemBytes = Array(pem.utf8)
            defer { Sodium.wipe(&pemBytes) }
            return SigningKey(
                key: .pem(SecureBytes(pemBytes), keyID: o["private_key_id"]?.string), clientEmail: email,
                tokenURI: o["token_uri"]?.string)
        }
        guard let path = privateKeyFile else {
            throw TokenVaultError.config(
                "provider \(name) signs with a private key but has no private_key_file or credentials_file")
        }
        var bytes = try read(path, what: "the private key of \(name)")
        defer { Sodium.wipe(&bytes) }
        return SigningKey(key: .pem(SecureBytes(bytes), keyID: nil), clientEmail: nil, tokenURI: nil)
    }

    private static func read(_ path: String, what: String) throws -> [UInt8] {
        // A key is a small regular file: never a FIFO or a device that would block or never end.
        guard var bytes = try TrustedFile.read(path, what: what, maxBytes: 64 * 1024) else {
            throw TokenVaultError.config("cannot read \(what) from \(path): \(String(cString: strerror(ENOENT)))")
        }
        var st = stat()
        if stat(path, &st) == 0, st.st_mode & 0o044 != 0 {
            Sodium.wipe(&bytes)
            throw TokenVaultError.permission(
                "\(what) \(path) is readable by others (mode \(String(st.st_mode & 0o777, radix: 8))); refusing to use it",
                hint: "run: chmod 600 \(ShellWord.word(path))")
        }
        return bytes
    }
}
