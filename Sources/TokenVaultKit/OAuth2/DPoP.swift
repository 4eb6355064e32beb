internal import CTokenVault
import FoundationEssentials
import Glibc

/// A credential's DPoP key (docs/security.md, "Sender-constrained tokens"):
/// an ES256 key made at login by OpenSSL's libcrypto, kept in the record
/// beside the tokens and never printed; the proofs of RFC 9449 §4 it signs;
/// and its JWK thumbprint (RFC 7638), the `jkt` a bound token names.
public struct DPoPKey: Sendable {
    /// The private key, PKCS#8 PEM.
    public let pem: SecureBytes
    /// The public key as a JWK: kty, crv, x, y.
    public let jwk: [String: JSONValue]
    /// The only algorithm made here: ES256 (P-256), which every DPoP server lists.
    public static let algorithm = "ES256"

    /// A new key.
    public static func generate() throws -> DPoPKey {
        var message = [CChar](repeating: 0, count: 512)
        var out: UnsafeMutablePointer<CChar>?
        var length = 0
        guard tv_ec_generate(&out, &length, &message, message.count) == 1, let out else {
            throw TokenVaultError.backendUnavailable(
                "cannot make a DPoP key: \(String(cString: message))", hint: "install libssl3")
        }
        defer { tv_ec_free_pem(out, length) }
        return try DPoPKey(pem: SecureBytes(UnsafeRawBufferPointer(start: out, count: length)))
    }

    /// The key of a stored record.
    public init(pem: SecureBytes) throws {
        var message = [CChar](repeating: 0, count: 512)
        var alg: UnsafePointer<CChar>?
        guard
            let handle = pem.withUnsafeBytes({ p in
                tv_sign_key_open(
                    p.baseAddress?.assumingMemoryBound(to: CChar.self), p.count, &alg, &message, message.count)
            })
        else { throw TokenVaultError.badInput("the stored DPoP key is unreadable: \(String(cString: message))") }
        defer { tv_sign_key_free(handle) }
        var point = [UInt8](repeating: 0, count: 65)
        guard tv_sign_key_public(handle, &point) == 1 else {
            throw TokenVaultError.badInput("the stored DPoP key is not a P-256 key")
        }
        self.pem = pem
        jwk = [
            "kty": .string("EC"), "crv": .string("P-256"),
            "x": .string(PKCE.base64url(Array(point[1..<33]))), "y": .string(PKCE.base64url(Array(point[33...]))),
        ]
    }

    /// The JWK SHA-256 thumbprint (RFC 7638): base64url of the hash of the
    /// required members in lexicographic order, no spaces.
    public var thumbprint: String {
        let canonical =
            #"{"crv":"P-256","kty":"EC","x":"\#(jwk["x"]?.string ?? "")","y":"\#(jwk["y"]?.string ?? "")"}"#
        return PKCE.base64url(Sodium.sha256(Array(canonical.utf8)))
    }

    /// A proof for one request (RFC 9449 §4.2): `htm` and `htu` (the URL
    /// without its query and fragment), `iat`, a fresh `jti`; `ath`, the
    /// hash of the access token it goes with, at a resource; the server's
    /// `nonce` when it gave one.
    public func proof(
        method: String, url: String, accessToken: String? = nil, nonce: String? = nil,
        now: Int64 = Int64(Date().timeIntervalSince1970)
    ) throws -> String {
        var claims: [String: JSONValue] = [
            "jti": .string(PKCE.base64url(Sodium.randomBytes(16))), "htm": .string(method),
            "htu": .string(Self.htu(url)), "iat": .integer(now),
        ]
        if let accessToken { claims["ath"] = .string(PKCE.base64url(Sodium.sha256(Array(accessToken.utf8)))) }
        if let nonce { claims["nonce"] = .string(nonce) }
        return try JWT.sign(
            claims: claims, key: .pem(pem, keyID: nil), header: ["typ": .string("dpop+jwt"), "jwk": .object(jwk)])
    }

    /// The `htu` of a URL: without its query or fragment (RFC 9449 §4.2).
    static func htu(_ url: String) -> String {
        String(url.prefix { $0 != "?" && $0 != "#" })
    }
}

extension DPoPKey {
    /// Sends `request` with a fresh proof (`ath` when it carries
    /// `accessToken`), and the latest nonce the server gave; a server that
    /// answers `use_dpop_nonce` with a new nonce (RFC 9449 §8, §9) is sent
    /// the request once more, with a proof that carries it.
    public func send(
        _ request: HTTPRequest, accessToken: String? = nil, via transport: any HTTPTransport,
        now: Int64 = Int64(Date().timeIntervalSince1970)
    ) throws -> HTTPResponse {
        let origin = DPoPNonces.origin(request.url)
        var nonce = DPoPNonces.latest(origin)
        var attempt = 0
        while true {
            var r = request
            r.headers.append(
                "DPoP: \(try proof(method: r.method, url: r.url, accessToken: accessToken, nonce: nonce, now: now))")
            let response = try transport.send(r)
            let given = DPoPNonces.kept(from: response, origin: origin)
            attempt += 1
            guard attempt == 1, DPoPNonces.asksForNonce(response), let given, given != nonce else { return response }
            nonce = given
        }
    }
}

/// The latest nonce each server gave (RFC 9449 §8, §9), by origin, for the
/// life of the process: the next proof to that server carries it.
public enum DPoPNonces {
    private static let latest = Locked<[String: String]>([:])

    public static func origin(_ url: String) -> String {
        let parts = url.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count >= 3, parts[0].hasSuffix(":"), parts[1].isEmpty else { return url }
        return (parts[0] + "//" + parts[2].prefix { $0 != "?" && $0 != "#" }).lowercased()
    }

    public static func latest(_ origin: String) -> String? { latest.withLock { $0[origin] } }

    /// The `DPoP-Nonce` of a response, kept for its origin when it is one
    /// (1 to 1024 visible ASCII characters, RFC 9449's NQCHAR).
    public static func kept(from response: HTTPResponse, origin: String) -> String? {
        guard let nonce = response.header("DPoP-Nonce")?.trimmedSpaces(), !nonce.isEmpty, nonce.utf8.count <= 1024,
            nonce.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != 0x22 && $0 != 0x5C })
        else { return nil }
        latest.withLock {
            if $0.count >= 256 { $0 = [:] }
            $0[origin] = nonce
        }
        return nonce
    }

    /// True when a response asks for a proof with the server's nonce: a
    /// token endpoint's 400 `use_dpop_nonce`, a resource's 401 with that error.
    public static func asksForNonce(_ response: HTTPResponse) -> Bool {
        switch response.status {
        case 400: TokenResponse.fields(response.body)?["error"]?.string == "use_dpop_nonce"
        case 401: response.header("WWW-Authenticate")?.contains("use_dpop_nonce") == true
        default: false
        }
    }
}
