import FoundationEssentials
import Glibc

/// A login another MCP client keeps for one server (docs/reference.md,
/// "Moving in"): its dynamic client registration (RFC 7591's answer) and the
/// token endpoint's answer, as mcp-remote's cache and FastMCP's store hold
/// them both.
public struct MCPClientLogin: Sendable {
    public var clientID: String
    public var clientSecret: String?
    public var redirectURI: String
    public var tokenEndpointAuthMethod: String?
    public var accessToken: String
    public var refreshToken: String?
    public var tokenType: String?
    public var scope: String?
    public var expiresAt: Int64?
    /// The files it was read from (what `--remove-source` deletes).
    public var files: [String]
    /// Whether they hold it encrypted (FastMCP's CLI's store), not in plaintext.
    public var encrypted = false

    /// The login of a registration `client` and a token answer `tokens`;
    /// `bad(part, why)` is the error naming the file a part came from.
    init(
        client: [String: JSONValue], tokens: [String: JSONValue], expiresAt: Int64?, files: [String],
        bad: (_ part: String, _ why: String) -> TokenVaultError
    ) throws {
        guard let access = tokens["access_token"]?.string, !access.isEmpty else {
            throw bad("tokens", "has no access_token")
        }
        guard let clientID = client["client_id"]?.string, !clientID.isEmpty else {
            throw bad("client", "has no client_id")
        }
        guard case .array(let uris)? = client["redirect_uris"], let redirect = uris.first?.string else {
            throw bad("client", "has no redirect_uris")
        }
        self.clientID = clientID
        clientSecret = client["client_secret"]?.string
        redirectURI = redirect
        tokenEndpointAuthMethod = client["token_endpoint_auth_method"]?.string
        accessToken = access
        refreshToken = tokens["refresh_token"]?.string
        tokenType = tokens["token_type"]?.string
        scope = tokens["scope"]?.string
        self.expiresAt = expiresAt
        self.files = files
    }

    /// `expires_in` of a token answer written at `written`, as a time.
    static func expiry(_ tokens: [String: JSONValue], written: Int64?) -> Int64? {
        let expiresIn = tokens["expires_in"].flatMap { TokenInput.seconds($0, in: 0...(10 * 365 * 86400)) }
        return expiresIn.flatMap { e in written.map { $0 + e } }
    }

    /// When `path` was last written (seconds since 1970); nil when it cannot be told.
    static func modified(_ path: String) -> Int64? {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_mtim.tv_sec) : nil
    }

    /// The JSON object in the file at `path`; nil when there is no file,
    /// 65 through `bad` when it is not one.
    static func object(_ path: String, bad: (String) -> TokenVaultError) throws -> [String: JSONValue]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        guard let object = JSONValue.parsedObject(Array(data)) else { throw bad("is not a JSON object") }
        return object
    }
}

/// The MCP clients `tokenvault import` takes a login from, by their name
/// on its command line.
public enum MCPClientTool: String, CaseIterable, Sendable {
    case mcpRemote = "mcp-remote"
    case fastmcp

    /// The tool's name in a sentence.
    public var name: String { self == .fastmcp ? "FastMCP" : rawValue }

    /// Where the tool keeps its logins; nil when it keeps none on disk as
    /// `settings` stand (FastMCP's CLI without its encryption key).
    public func base(_ settings: Settings) -> String? {
        switch self {
        case .mcpRemote: MCPRemoteCache.base(settings)
        case .fastmcp: FastMCPStore.base(settings)
        }
    }

    /// The login kept under `base` for exactly `url`; nil when none is.
    public func find(url: String, base: String, settings: Settings) throws -> MCPClientLogin? {
        switch self {
        case .mcpRemote: try MCPRemoteCache.find(url: url, base: base)
        case .fastmcp: try FastMCPStore.find(url: url, base: base, key: settings[.fastmcpOAuthEncryptionKey])
        }
    }

    /// Why no login was found, for its hint.
    public func nothingFound(base: String?) -> String {
        switch self {
        case .mcpRemote:
            "mcp-remote keeps no login for exactly this URL under \(base ?? "~/.mcp-auth") (it names its files by the URL as given)"
        case .fastmcp:
            base.map { "FastMCP keeps no login for exactly this URL in \($0)" }
                ?? "FastMCP's CLI keeps its logins on disk only with \(EnvironmentVariable.fastmcpOAuthEncryptionKey.name) set (else in memory): set it as FastMCP had it, or name the FileTreeStore directory an application gave FastMCP with --from DIR"
        }
    }
}
