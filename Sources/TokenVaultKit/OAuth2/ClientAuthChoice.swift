import FoundationEssentials

/// How a client of a protected resource's authorization server
/// authenticates at its token endpoint (docs/providers.md, "Which client,
/// and how it authenticates"): one decision for the code exchange, refresh,
/// revocation and registration management.
public enum ClientAuthChoice {
    /// The RFC 7591/8414 names tokenvault speaks.
    static let methods: Set = [
        "client_secret_basic", "client_secret_post", "none", "private_key_jwt", "client_secret_jwt",
    ]

    /// The `client_auth` value to use: a configured one wins; else the
    /// method the registration answer gave; else what the server's metadata
    /// lists (Basic where listed, then the body: RFC 6749 §2.3.1 makes Basic
    /// the one every server must take); a client without a secret sends none
    /// (nil: the default, the client id in the body).
    public static func decide(
        configured: String?, registered: String?, serverLists: [String], hasSecret: Bool
    ) -> String? {
        if let configured { return configured }
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
}
