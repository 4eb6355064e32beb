internal import CSodium
internal import CTokenVault
import FoundationEssentials
import Glibc

/// A credential's DPoP key (docs/security.md, "Sender-constrained tokens"):
/// made at login — a P-256 key (ES256) by OpenSSL's libcrypto, or an
/// Ed25519 key (EdDSA) by libsodium where the server lists only that — kept
/// in the record beside the tokens as PKCS#8 PEM and never printed; the
/// proofs of RFC 9449 §4 it signs; and its JWK thumbprint (RFC 7638), the
/// `jkt` a bound token names.
public struct DPoPKey: Sendable {
    /// The private key, PKCS#8 PEM.
    public let pem: SecureBytes
    /// The public key as a JWK: kty, crv, x (and y for P-256).
    public let jwk: [String: JSONValue]
    /// `ES256` or `EdDSA`.
    public let algorithm: String
    /// What signs the proofs.
    let signer: JWT.Key

    /// The algorithm a key is made for, from the server's
    /// `dpop_signing_alg_values_supported`: ES256 wherever it is listed (or
    /// nothing is), EdDSA where that is what the server lists.
    public static func algorithm(for listed: [String]) -> String {
        listed.isEmpty || listed.contains("ES256") || !listed.contains("EdDSA") ? "ES256" : "EdDSA"
    }

    /// A new key for `algorithm` (ES256 unless EdDSA).
    public static func generate(algorithm: String = "ES256") throws -> DPoPKey {
        if algorithm == "EdDSA" {
            let seed = SecureBytes(Sodium.randomBytes(32))
            return try DPoPKey(pem: SecureBytes(Array(ed25519PEM(seed).utf8)))
        }
        var message = [CChar](repeating: 0, count: 512)
        var out: UnsafeMutablePointer<CChar>?
        var length = 0
        guard tv_ec_generate(&out, &length, &message, message.count) == 1, let out else {
            throw TokenVaultError.backendUnavailable(
                "cannot make a DPoP key: \(String(nulTerminated: message))", hint: "install libssl3")
        }
        defer { tv_ec_free_pem(out, length) }
        return try DPoPKey(pem: SecureBytes(UnsafeRawBufferPointer(start: out, count: length)))
    }

    /// The DER that starts the PKCS#8 form of an Ed25519 private key (RFC
    /// 8410): the 32-byte seed follows.
    static let ed25519Prefix: [UInt8] = [
        0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
    ]

    static func ed25519PEM(_ seed: SecureBytes) -> String {
        let der = ed25519Prefix + seed.bytes
        return "-----BEGIN PRIVATE KEY-----\n\(Data(der).base64EncodedString())\n-----END PRIVATE KEY-----\n"
    }

    /// The key of a stored record.
    public init(pem: SecureBytes) throws {
        self.pem = pem
        if let seed = Self.ed25519Seed(pem) {
            var pk = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
            let sk = SecureBytes(count: Int(crypto_sign_SECRETKEYBYTES))
            sk.withUnsafeMutableBytes { out in
                seed.withUnsafeBytes { s in
                    _ = crypto_sign_seed_keypair(
                        &pk, out.bindMemory(to: UInt8.self).baseAddress!, s.bindMemory(to: UInt8.self).baseAddress!)
                }
            }
            algorithm = "EdDSA"
            signer = .ed25519(sk)
            jwk = ["kty": .string("OKP"), "crv": .string("Ed25519"), "x": .string(PKCE.base64url(pk))]
            return
        }
        let point = try JWT.withKey(
            pem, failure: { TokenVaultError.badInput("the stored DPoP key is unreadable: \($0)") }
        ) { handle, _ -> [UInt8] in
            var point = [UInt8](repeating: 0, count: 65)
            guard tv_sign_key_public(handle, &point) == 1 else {
                throw TokenVaultError.badInput("the stored DPoP key is not a P-256 or Ed25519 key")
            }
            return point
        }
        algorithm = "ES256"
        signer = .pem(pem, keyID: nil)
        jwk = [
            "kty": .string("EC"), "crv": .string("P-256"),
            "x": .string(PKCE.base64url(Array(point[1..<33]))), "y": .string(PKCE.base64url(Array(point[33...]))),
        ]
    }

    /// The seed of an Ed25519 key in PKCS#8 PEM; nil for any other key.
    static func ed25519Seed(_ pem: SecureBytes) -> SecureBytes? {
        let text = String(decoding: pem.bytes, as: UTF8.self)
        let body = text.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("-----") }.joined()
        guard text.hasPrefix("-----BEGIN PRIVATE KEY-----"), let der = Data(base64Encoded: body),
            der.count == 48, Array(der.prefix(16)) == ed25519Prefix
        else { return nil }
        return SecureBytes(der.suffix(32))
    }

    /// The JWK SHA-256 thumbprint (RFC 7638): base64url of the hash of the
    /// required members in lexicographic order, no spaces.
    public var thumbprint: String {
        let x = jwk["x"]?.string ?? ""
        let canonical =
            algorithm == "EdDSA"
            ? #"{"crv":"Ed25519","kty":"OKP","x":"\#(x)"}"#
            : #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(jwk["y"]?.string ?? "")"}"#
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
        return try JWT.sign(claims: claims, key: signer, header: ["typ": .string("dpop+jwt"), "jwk": .object(jwk)])
    }

    /// The `htu` of a URL: without its query or fragment (RFC 9449 §4.2),
    /// and without userinfo (`user:pw@`), which is no part of the resource
    /// the proof is for and must never travel in a signed claim.
    static func htu(_ url: String) -> String {
        let u = String(url.prefix { $0 != "?" && $0 != "#" })
        let parts = u.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        // "scheme:", "", "authority", "path…": the authority's userinfo goes.
        guard parts.count >= 3, parts[0].hasSuffix(":"), parts[1].isEmpty,
            let at = parts[2].lastIndex(of: "@")
        else { return u }
        let authority = parts[2][parts[2].index(after: at)...]
        return ([parts[0], parts[1], authority] + parts.dropFirst(3)).joined(separator: "/")
    }
}

extension DPoPKey {
    /// Sends `request` with a fresh proof (`ath` when it carries
    /// `accessToken`), and the latest nonce the server gave; a server that
    /// answers `use_dpop_nonce` with a new nonce (RFC 9449 §8, §9) is sent
    /// the request once more, with a proof that carries it.
    public func send(
        _ request: HTTPRequest, accessToken: String? = nil, via transport: any HTTPTransport,
        now: Int64 = Int64(Date().timeIntervalSince1970), nonces: DPoPNonces
    ) throws -> HTTPResponse {
        let origin = DPoPNonces.origin(request.url)
        var nonce = nonces.latest(origin)
        var attempt = 0
        while true {
            var r = request
            r.headers.append(
                "DPoP: \(try proof(method: r.method, url: r.url, accessToken: accessToken, nonce: nonce, now: now))")
            let response = try transport.send(r)
            let given = nonces.kept(from: response, origin: origin)
            attempt += 1
            guard attempt == 1, DPoPNonces.asksForNonce(response), let given, given != nonce else { return response }
            nonce = given
        }
    }
}

/// The latest nonce each server gave (RFC 9449 §8, §9), by origin: the next
/// proof to that server carries it. A run keeps its own (its `Session`'s);
/// the agent keeps one across the runs it serves (`AgentCaches`).
public final class DPoPNonces: Sendable {
    private let latest = Locked<[String: String]>([:])

    public init() {}

    /// Where a nonce applies: the URL's `scheme://host[:port]`.
    public static func origin(_ url: String) -> String { ProviderConfig.origin(of: url) ?? url }

    public func latest(_ origin: String) -> String? { latest.withLock { $0[origin] } }

    /// The `DPoP-Nonce` of a response, kept for its origin when it is one
    /// (1 to 1024 visible ASCII characters, RFC 9449's NQCHAR).
    public func kept(from response: HTTPResponse, origin: String) -> String? {
        guard let nonce = response.header("DPoP-Nonce")?.trimmedSpaces(), !nonce.isEmpty, nonce.utf8.count <= 1024,
            nonce.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != 0x22 && $0 != 0x5C })
        else { return nil }
        latest.withLock {
            if $0.count >= 256 { $0 = [:] }
            $0[origin] = nonce
        }
        return nonce
    }

    /// True when a token endpoint refused a request for its missing proof
    /// (RFC 9449 §5: a server that binds every token).
    public static func refusesWithoutProof(_ response: HTTPResponse) -> Bool {
        guard response.status == 400 || response.status == 401 else { return false }
        let error = TokenResponse.fields(response.body)?["error"]?.string
        return error == "invalid_dpop_proof" || error == "use_dpop_nonce"
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
