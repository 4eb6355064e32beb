internal import CTokenVault
import FoundationEssentials
import Glibc

/// mcp-remote's login cache (docs/reference.md, "Moving in"), as mcp-remote
/// writes it: in `$MCP_REMOTE_CONFIG_DIR` (else `~/.mcp-auth`), a directory
/// `mcp-remote-VERSION` per version, and in it files named by the MD5 of the
/// server's URL: `HASH_client_info.json` (its dynamic client registration,
/// RFC 7591's answer) and `HASH_tokens.json` (the token endpoint's answer,
/// `expires_in` counted from when the file was written).
public struct MCPRemoteLogin: Sendable {
    /// Its name as `tokenvault import` takes it.
    public static let source = "mcp-remote"

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

    /// `mcp-remote-0.1.29` as numbers, for the newest first.
    static func version(_ name: String) -> [Int] {
        name.dropFirst("mcp-remote-".count).split(separator: ".").map { Int($0.prefix { $0.isNumber }) ?? 0 }
    }

    /// The cache's base directory.
    public static func base(_ settings: Settings) -> String {
        if let dir = settings.environment["MCP_REMOTE_CONFIG_DIR"], !dir.isEmpty { return dir }
        return (settings[.home] ?? "") + "/.mcp-auth"
    }

    /// The login mcp-remote keeps for `url` under `base` (the newest
    /// version's directory that has one); nil when none has.
    public static func find(url: String, base: String) throws -> MCPRemoteLogin? {
        var hex = [CChar](repeating: 0, count: 33)
        var message: UnsafePointer<CChar>?
        let ok = Array(url.utf8).withUnsafeBytes { tv_md5_hex($0.baseAddress, $0.count, &hex, &message) }
        guard ok == 1 else {
            throw TokenVaultError.backendUnavailable(
                "cannot name mcp-remote's files: \(message.map { String(cString: $0) } ?? "no MD5")",
                hint: "install libssl3")
        }
        let hash = String(nulTerminated: hex)
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [])
            .filter { $0.hasPrefix("mcp-remote-") }
            .sorted { a, b in Self.version(b).lexicographicallyPrecedes(Self.version(a)) }
        for v in versions {
            let dir = base + "/" + v + "/" + hash
            guard let tokensData = FileManager.default.contents(atPath: dir + "_tokens.json") else { continue }
            func bad(_ file: String, _ why: String) -> TokenVaultError {
                .badInput("\(dir)_\(file) \(why); nothing was imported")
            }
            guard let tokens = JSONValue.parsedObject(Array(tokensData)) else {
                throw bad("tokens.json", "is not a JSON object")
            }
            guard let info = FileManager.default.contents(atPath: dir + "_client_info.json") else {
                throw bad("client_info.json", "is missing: the client the tokens were issued to is unknown")
            }
            guard let client = JSONValue.parsedObject(Array(info)) else {
                throw bad("client_info.json", "is not a JSON object")
            }
            guard let access = tokens["access_token"]?.string, !access.isEmpty else {
                throw bad("tokens.json", "has no access_token")
            }
            guard let clientID = client["client_id"]?.string, !clientID.isEmpty else {
                throw bad("client_info.json", "has no client_id")
            }
            guard case .array(let uris)? = client["redirect_uris"], let redirect = uris.first?.string else {
                throw bad("client_info.json", "has no redirect_uris")
            }
            var st = stat()
            let written = stat(dir + "_tokens.json", &st) == 0 ? Int64(st.st_mtim.tv_sec) : nil
            let expiresIn = tokens["expires_in"].flatMap { TokenInput.seconds($0, in: 0...(10 * 365 * 86400)) }
            return MCPRemoteLogin(
                clientID: clientID, clientSecret: client["client_secret"]?.string, redirectURI: redirect,
                tokenEndpointAuthMethod: client["token_endpoint_auth_method"]?.string, accessToken: access,
                refreshToken: tokens["refresh_token"]?.string, tokenType: tokens["token_type"]?.string,
                scope: tokens["scope"]?.string,
                expiresAt: expiresIn.flatMap { e in written.map { $0 + e } },
                files: [dir + "_tokens.json", dir + "_client_info.json", dir + "_code_verifier.txt"])
        }
        return nil
    }
}
