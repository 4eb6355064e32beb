import Dispatch
import FoundationEssentials
import Glibc

/// RFC 7636 proof key, and the random `state`.
public struct PKCE: Sendable {
    public let verifier: String
    public var challenge: String { PKCE.base64url(Sodium.sha256(Array(verifier.utf8))) }

    public init() { verifier = PKCE.base64url(Sodium.randomBytes(32)) }
    init(verifier: String) { self.verifier = verifier }

    /// 128 bits of randomness for `state`.
    public static func state() -> String { base64url(Sodium.randomBytes(16)) }

    static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacing("+", with: "-").replacing("/", with: "_")
            .replacing("=", with: "")
    }
}
