internal import CTokenVault
import FoundationEssentials

/// mcp-remote's login cache (docs/reference.md, "Moving in"), as mcp-remote
/// writes it: in `$MCP_REMOTE_CONFIG_DIR` (else `~/.mcp-auth`), a directory
/// `mcp-remote-VERSION` per version, and in it files named by the MD5 of the
/// server's URL: `HASH_client_info.json` (its dynamic client registration)
/// and `HASH_tokens.json` (the token endpoint's answer, `expires_in` counted
/// from when the file was written).
enum MCPRemoteCache {
    /// `mcp-remote-0.1.29` as numbers, for the newest first.
    static func version(_ name: String) -> [Int] {
        name.dropFirst("mcp-remote-".count).split(separator: ".").map { Int($0.prefix { $0.isNumber }) ?? 0 }
    }

    /// The cache's base directory.
    static func base(_ settings: Settings) -> String {
        settings[.mcpRemoteConfigDir] ?? (settings[.home] ?? "") + "/.mcp-auth"
    }

    /// The login mcp-remote keeps for `url` under `base` (the newest
    /// version's directory that has one); nil when none has.
    static func find(url: String, base: String) throws -> MCPClientLogin? {
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
            let files = (tokens: dir + "_tokens.json", client: dir + "_client_info.json")
            func bad(_ file: String, _ why: String) -> TokenVaultError {
                .badInput("\(file) \(why); nothing was imported")
            }
            guard let tokens = try MCPClientLogin.object(files.tokens, bad: { bad(files.tokens, $0) }) else {
                continue
            }
            guard let client = try MCPClientLogin.object(files.client, bad: { bad(files.client, $0) }) else {
                throw bad(files.client, "is missing: the client the tokens were issued to is unknown")
            }
            return try MCPClientLogin(
                client: client, tokens: tokens,
                expiresAt: MCPClientLogin.expiry(tokens, written: MCPClientLogin.modified(files.tokens)),
                files: [files.tokens, files.client, dir + "_code_verifier.txt"],
                bad: { part, why in bad(part == "tokens" ? files.tokens : files.client, why) })
        }
        return nil
    }
}
