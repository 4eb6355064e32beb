import FoundationEssentials

/// OAuth Client ID Metadata Documents (docs/providers.md, "Login by URL"):
/// tokenvault's client id is an https URL where the user hosts its metadata
/// document; an authorization server that advertises
/// `client_id_metadata_document_supported` fetches it instead of taking a
/// registration. What is hosted is printed here, from the URL alone, so
/// that it always matches what a login sends.
public enum ClientMetadataDocument {
    /// The path of the loopback redirect a login listens on (any port, RFC 8252).
    public static let redirectPath = "/callback"

    /// Refuses (78) a `client_metadata_url` that cannot be a client id: it
    /// must be https, with a path, without user, fragment or dot segments.
    public static func check(_ url: String, setting: String) throws {
        let shown = OutsideText.line(url, limit: 200)
        guard let c = URLComponents(string: url), c.scheme?.lowercased() == "https", let host = c.host, !host.isEmpty
        else {
            throw TokenVaultError.config(
                "\(setting) must be an https URL, not \(Quoted.text(shown))",
                hint:
                    "host tokenvault's client metadata document at an https URL with a path (tokenvault setup client-metadata URL prints it)"
            )
        }
        let segments = c.path.split(separator: "/", omittingEmptySubsequences: false)
        guard !c.path.isEmpty, c.path != "/", !segments.contains("."), !segments.contains("..") else {
            throw TokenVaultError.config(
                "\(setting) must have a path (https://HOST/PATH/client.json), not \(Quoted.text(shown))")
        }
        guard c.user == nil, c.password == nil, c.fragment == nil, !url.contains("#") else {
            throw TokenVaultError.config("\(setting) must have no user and no fragment: \(Quoted.text(shown))")
        }
    }

    /// True when `clientID` is the URL of a metadata document (an https URL with a path).
    public static func isClientID(_ clientID: String) -> Bool {
        (try? check(clientID, setting: "client_id")) != nil
    }

    /// The document to host at `url`.
    public static func document(for url: String) -> JSONValue {
        .object([
            "client_id": .string(url),
            "client_name": .string("tokenvault"),
            "application_type": .string("native"),
            "token_endpoint_auth_method": .string("none"),
            "grant_types": .array([.string("authorization_code"), .string("refresh_token")]),
            "response_types": .array([.string("code")]),
            "redirect_uris": .array([
                .string("http://127.0.0.1\(redirectPath)"), .string("http://[::1]\(redirectPath)"),
            ]),
        ])
    }

    /// What in a fetched document differs from the one to host: the fields
    /// a login depends on, each named once; empty when it matches.
    public static func differences(_ fetched: JSONValue, for url: String) -> [String] {
        guard case .object(let expected) = document(for: url) else { return [] }
        let keys = ["client_id", "token_endpoint_auth_method", "grant_types", "redirect_uris"]
        return keys.filter { key in
            if key == "grant_types" || key == "redirect_uris" {
                guard case .array(let want)? = expected[key], case .array(let have)? = fetched[key] else { return true }
                return !want.allSatisfy(have.contains)
            }
            return fetched[key] != expected[key]
        }
    }
}
