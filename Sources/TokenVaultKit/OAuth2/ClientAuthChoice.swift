import FoundationEssentials

/// How a client of a protected resource's authorization server
/// authenticates at its token endpoint (docs/providers.md, "Login by URL",
/// its list "Which client, and how it authenticates"): one decision for the
/// code exchange, refresh, revocation and registration management.
public enum ClientAuthChoice {
    /// The RFC 7591/8414 names tokenvault speaks.
    static let methods: Set = [
        "client_secret_basic", "client_secret_post", "none", "private_key_jwt", "client_secret_jwt",
    ]

    /// The `client_auth` value to use: a configured one wins; else the
    /// method the registration answer gave; else what the server's metadata
    /// lists (Basic where listed, then the body: RFC 6749 §2.3.1 makes Basic
    /// the one every server must take); a client with a private key signs an
    /// assertion where the server lists `private_key_jwt`; a client without a
    /// secret sends none (nil: the default, the client id in the body).
    public static func decide(
        configured: String?, registered: String?, serverLists: [String], hasSecret: Bool, hasKey: Bool = false
    ) -> String? {
        if let configured { return configured }
        if hasKey, serverLists.contains("private_key_jwt") { return "private_key_jwt" }
        guard hasSecret else { return nil }
        switch registered {
        case "client_secret_basic"?: return "basic"
        case "client_secret_post"?: return "body"
        case "client_secret_jwt"?: return "client_secret_jwt"
        default: break
        }
        if serverLists.contains("client_secret_basic") { return "basic" }
        if serverLists.contains("client_secret_post") { return "body" }
        // Nothing listed: RFC 8414's default is client_secret_basic.
        return serverLists.isEmpty ? "basic" : nil
    }

    /// A `client_auth` value in words, for `doctor`.
    public static func described(_ clientAuth: String?) -> String {
        switch clientAuth {
        case "basic"?: "HTTP Basic (client_secret_basic)"
        case "body"?: "the secret in the form body (client_secret_post)"
        case "private_key_jwt"?: "an assertion signed with its key (private_key_jwt)"
        case "client_secret_jwt"?: "an assertion signed with its secret (client_secret_jwt)"
        default: "its client id alone (a public client: none)"
        }
    }
}
