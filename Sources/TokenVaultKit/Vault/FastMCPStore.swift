internal import CTokenVault
import FoundationEssentials
import Glibc

/// FastMCP's client logins (docs/reference.md, "Moving in"), as
/// py-key-value's FileTreeStore keeps them: FastMCP's CLI does where
/// `FASTMCP_OAUTH_ENCRYPTION_KEY` is set, in
/// `$FASTMCP_HOME/cli-oauth/FINGERPRINT` (the first 12 hex digits of the
/// key's SHA-256), every value encrypted with that Fernet key; an
/// application may give FastMCP a store of its own (`--from DIR`).
///
/// In the store's directory, `NAME-info.json` names each collection and its
/// directory; FastMCP's three are `mcp-oauth-token` (key `URL/tokens`),
/// `mcp-oauth-client-info` (`URL/client_info`) and `mcp-oauth-token-expiry`
/// (`URL/token_expiry`, an absolute `expires_at`). A key's file is
/// `S_SANITIZED-HASH.json`: the key with each run of characters other than
/// letters, digits and `_` made one `_` (cut to fit a file name), and the
/// first 8 hex digits of the key's SHA-256. A file holds `{"value": …}`.
enum FastMCPStore {
    static let collections = (
        tokens: "mcp-oauth-token", client: "mcp-oauth-client-info", expiry: "mcp-oauth-token-expiry"
    )

    /// Where FastMCP's CLI keeps its logins; nil without its key (then it keeps them in memory).
    static func base(_ settings: Settings) -> String? {
        guard let key = settings[.fastmcpOAuthEncryptionKey] else { return nil }
        let home = settings[.fastmcpHome] ?? settings.dataHome + "/fastmcp"
        return home + "/cli-oauth/" + String(Hex.encode(Sodium.sha256(Array(key.utf8))).prefix(12))
    }

    /// The login kept under `base` for exactly `url`; nil when none is.
    static func find(url: String, base: String, key: String?) throws -> MCPClientLogin? {
        let directories = try collectionDirectories(base)
        func entry(
            _ collection: String, _ suffix: String
        ) throws -> (file: String, value: [String: JSONValue], encrypted: Bool)? {
            guard let dir = directories[collection] else { return nil }
            let name = url + "/" + suffix
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
            guard let file = names.sorted().first(where: Self.fileMatcher(of: name)).map({ dir + "/" + $0 }) else {
                return nil
            }
            func bad(_ why: String) -> TokenVaultError { .badInput("\(file) \(why); nothing was imported") }
            guard let entry = try MCPClientLogin.object(file, bad: bad) else { return nil }
            guard case .object(let value)? = entry["value"] else { throw bad("holds no value") }
            return (file, try Self.decrypted(value, key: key, file: file), value["__encrypted_data__"] != nil)
        }
        guard let tokens = try entry(collections.tokens, "tokens") else { return nil }
        guard let client = try entry(collections.client, "client_info") else {
            throw TokenVaultError.badInput(
                "\(base) holds FastMCP's tokens for \(url) but not its client: the client they were issued to is unknown; nothing was imported"
            )
        }
        let expiry = try entry(collections.expiry, "token_expiry")
        let expiresAt: Int64? =
            switch expiry?.value["expires_at"] {
            case .integer(let i)?: i
            case .number(let n)? where n.isFinite && abs(n) < 1e15: Int64(n.rounded(.down))
            default: MCPClientLogin.expiry(tokens.value, written: MCPClientLogin.modified(tokens.file))
            }
        var login = try MCPClientLogin(
            client: client.value, tokens: tokens.value, expiresAt: expiresAt,
            files: [tokens.file, client.file] + (expiry.map { [$0.file] } ?? []),
            bad: { part, why in
                .badInput("\(part == "tokens" ? tokens.file : client.file) \(why); nothing was imported")
            })
        login.encrypted = tokens.encrypted
        return login
    }

    /// Each collection's directory, by the collection's name, from the
    /// store's `*-info.json` files (the directory they record, else the one
    /// of that name beside them, for a store that was moved).
    static func collectionDirectories(_ base: String) throws -> [String: String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: base) else {
            throw TokenVaultError.notFound(
                service: base, account: "", hint: "no FastMCP store is at \(base): \(String(cString: strerror(errno)))")
        }
        var directories: [String: String] = [:]
        for name in names where name.hasSuffix("-info.json") {
            guard let data = FileManager.default.contents(atPath: base + "/" + name),
                let info = JSONValue.parsedObject(Array(data)), let collection = info["collection"]?.string,
                let recorded = info["directory"]?.string
            else { continue }
            var isDirectory = false
            let beside = base + "/" + (recorded.split(separator: "/").last.map(String.init) ?? "")
            if FileManager.default.fileExists(atPath: recorded, isDirectory: &isDirectory), isDirectory {
                directories[collection] = recorded
            } else if FileManager.default.fileExists(atPath: beside, isDirectory: &isDirectory), isDirectory {
                directories[collection] = beside
            }
        }
        return directories
    }

    /// Whether the file `name` holds the key `key`: the key itself, or its
    /// sanitized name (cut to any length) with its hash.
    static func isFile(_ name: String, of key: String) -> Bool { fileMatcher(of: key)(name) }

    /// `isFile` for one key, its hash and sanitized name worked out once for
    /// every file name of a directory.
    static func fileMatcher(of key: String) -> (String) -> Bool {
        let exact = key + ".json"
        let hash = "-" + String(Hex.encode(Sodium.sha256(Array(key.utf8))).prefix(8)) + ".json"
        let sanitized = sanitized(key)
        return { name in
            if name == exact { return true }
            guard name.hasPrefix("S_"), name.hasSuffix(hash) else { return false }
            return sanitized.hasPrefix(name.dropFirst(2).dropLast(hash.count))
        }
    }

    /// The key with each run of characters other than ASCII letters, digits
    /// and `_` made one `_`.
    static func sanitized(_ key: String) -> String {
        var out = ""
        var replaced = false
        for c in key.unicodeScalars {
            if c.isASCII, c.properties.isAlphabetic || ("0"..."9").contains(c) || c == "_" {
                out.unicodeScalars.append(c)
                replaced = false
            } else if !replaced {
                out += "_"
                replaced = true
            }
        }
        return out
    }

    /// A value as stored, or decrypted where py-key-value's encryption
    /// wrapper sealed it (`__encrypted_data__`: base64 of a Fernet token).
    static func decrypted(_ value: [String: JSONValue], key: String?, file: String) throws -> [String: JSONValue] {
        guard let sealed = value["__encrypted_data__"] else { return value }
        guard let key else {
            throw TokenVaultError.permission(
                "\(file) is encrypted",
                hint: "set \(EnvironmentVariable.fastmcpOAuthEncryptionKey.name) to the key FastMCP had")
        }
        guard let fernet = Fernet(key: key) else {
            throw TokenVaultError.usage(
                "\(EnvironmentVariable.fastmcpOAuthEncryptionKey.name) is not a Fernet key (32 bytes, base64url)",
                hint: "it is the key FastMCP's CLI was given")
        }
        guard let text = sealed.string, let token = Data(base64Encoded: text) else {
            throw TokenVaultError.badInput("\(file) holds no readable encrypted value; nothing was imported")
        }
        guard let plain = try fernet.open(Array(token)) else {
            throw TokenVaultError.permission(
                "\(EnvironmentVariable.fastmcpOAuthEncryptionKey.name) does not open \(file)",
                hint: "it is the key FastMCP's CLI was given when it logged in")
        }
        guard let object = JSONValue.parsedObject(plain) else {
            throw TokenVaultError.badInput("\(file) does not decrypt to a JSON object; nothing was imported")
        }
        return object
    }
}

/// A Fernet key (the cryptography package's spec): 16 bytes that sign, 16
/// that encrypt. A token is base64url of version 0x80, an 8-byte time, a
/// 16-byte IV, the AES-128-CBC ciphertext and an HMAC-SHA-256 of all that.
struct Fernet {
    private let key: SecureBytes

    init?(key text: String) {
        guard let bytes = JWT.base64urlDecode(text.trimmedSpaces()), bytes.count == 32 else { return nil }
        key = SecureBytes(Array(bytes))
    }

    /// The plaintext of a token; nil when the key did not make it (its
    /// HMAC differs), 65 when it is no Fernet token.
    func open(_ token: [UInt8]) throws -> [UInt8]? {
        guard let raw = JWT.base64urlDecode(String(decoding: token, as: UTF8.self)).map(Array.init),
            raw.count >= 1 + 8 + 16 + 16 + 32, raw[0] == 0x80
        else { throw TokenVaultError.badInput("FastMCP's value is not a Fernet token; nothing was imported") }
        let signed = Array(raw.dropLast(32))
        let mac = key.withUnsafeBytes { Sodium.hmacSHA256(key: UnsafeRawBufferPointer(rebasing: $0[0..<16]), signed) }
        guard Sodium.equal(mac, Array(raw.suffix(32))) else { return nil }
        let iv = Array(raw[9..<25])
        let cipher = Array(signed.dropFirst(25))
        var out = [UInt8](repeating: 0, count: cipher.count + 16)
        var written = 0
        var message: UnsafePointer<CChar>?
        let ok = key.withUnsafeBytes { k in
            tv_aes128_cbc_decrypt(
                k.baseAddress!.assumingMemoryBound(to: UInt8.self) + 16, iv, cipher, cipher.count, &out, &written,
                &message)
        }
        guard ok == 1 else {
            throw TokenVaultError.badInput(
                "FastMCP's value cannot be decrypted (\(message.map { String(cString: $0) } ?? "libcrypto")); nothing was imported"
            )
        }
        defer { Sodium.wipe(&out) }
        return Array(out.prefix(written))
    }
}
