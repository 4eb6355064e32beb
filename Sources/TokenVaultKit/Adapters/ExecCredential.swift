import Dispatch
import FoundationEssentials
import Glibc

/// kubectl's client-go credential plugin contract: an `ExecCredential` on stdout.
public struct ExecCredentialRequest: Sendable, Equatable {
    public static let v1beta1 = "client.authentication.k8s.io/v1beta1"
    public static let v1 = "client.authentication.k8s.io/v1"

    public var apiVersion: String
    /// False when kubectl said no one can answer a prompt (`interactiveMode: Never`,
    /// or no terminal on its side).
    public var interactive: Bool

    /// What `KUBERNETES_EXEC_INFO` asks for; without it, v1beta1 and no prompt
    /// unless there is a terminal.
    public static func from(_ settings: Settings) throws -> ExecCredentialRequest {
        let variable = EnvironmentVariable.kubernetesExecInfo.name
        guard let info = settings[.kubernetesExecInfo] else {
            return ExecCredentialRequest(apiVersion: v1beta1, interactive: true)
        }
        guard case .object(let object)? = JSONValue.parsed(Data(info.utf8)) else {
            throw TokenVaultError.badInput("\(variable) is not a JSON object")
        }
        guard let version = object["apiVersion"]?.string else {
            throw TokenVaultError.badInput("\(variable) has no apiVersion")
        }
        guard version == v1beta1 || version == v1 else {
            throw TokenVaultError.badInput(
                "kubectl asked for an ExecCredential of \(Quoted.text(version)); tokenvault writes \(v1beta1) and \(v1)"
            )
        }
        var interactive = false
        if case .object(let spec)? = object["spec"], case .bool(let b)? = spec["interactive"] { interactive = b }
        return ExecCredentialRequest(apiVersion: version, interactive: interactive)
    }

    /// The ExecCredential for a token; `expirationTimestamp` (RFC 3339, UTC)
    /// only for a token that expires, so kubectl asks again when it does.
    public func response(token: String, expiresAt: Int64?) -> JSONValue {
        var status: [String: JSONValue] = ["token": .string(token)]
        if let expiresAt { status["expirationTimestamp"] = .string(ExecCredentialRequest.rfc3339(expiresAt)) }
        return .object([
            "apiVersion": .string(apiVersion), "kind": .string("ExecCredential"), "status": .object(status),
        ])
    }

    static func rfc3339(_ unix: Int64) -> String {
        RFC3339.format(unix)
    }
}

/// The SASL initial responses mail clients send for an OAuth 2.0 bearer token.
public enum SASLMechanism: String, Sendable, CaseIterable {
    /// Google's and Microsoft's XOAUTH2.
    case xoauth2
    /// RFC 7628 OAUTHBEARER.
    case oauthbearer

    /// The initial response, base64-encoded as IMAP `AUTHENTICATE` and SMTP `AUTH` take it.
    public func initialResponse(user: String, token: String) throws -> String {
        guard !user.isEmpty, user.utf8.count <= 320,
            !user.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || $0 == " " })
        else {
            throw TokenVaultError.usage(
                "--user must be the mail account (an email address) without spaces or control characters")
        }
        guard !token.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw TokenVaultError.badInput(
                "the stored access token contains control characters; it cannot go into a SASL response")
        }
        let message: String
        switch self {
        case .xoauth2:
            message = "user=\(user)\u{1}auth=Bearer \(token)\u{1}\u{1}"
        case .oauthbearer:
            // RFC 7628 §3.1: a GS2 header naming the authorization identity
            // (RFC 5801 saslname: "=" and "," escaped), then kvpairs.
            let saslname = user.replacing("=", with: "=3D").replacing(",", with: "=2C")
            message = "n,a=\(saslname),\u{1}auth=Bearer \(token)\u{1}\u{1}"
        }
        return Data(message.utf8).base64EncodedString()
    }
}
