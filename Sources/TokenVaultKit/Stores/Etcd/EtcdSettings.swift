import FoundationEssentials
import Glibc

/// How to reach the etcd cluster (docs/fleet.md): `[etcd]` in the config, with
/// `TOKENVAULT_ETCD_ENDPOINTS` and `TOKENVAULT_ETCD_PREFIX` over it.
public struct EtcdSettings: Sendable {
    public var endpoints: [String]
    public var prefix: String
    public var username: String?
    var password: SecretSource?
    public var tls: CurlTransport.TLSFiles
    /// Seconds for one etcd call, failover and retries included.
    public var timeout: Int
    /// Seconds a dead refresher can hold the fleet lock.
    public var leaseTTL: Int
    /// Seconds a call keeps waiting for a cluster that answers but is busy.
    public var wait: Int = 30
    /// Where this host's processes take turns to sign in (one sign-in per host).
    public var runtimeDirectory: String = ""
    /// Where the etcd auth token is kept for every process of this user
    /// (docs/fleet.md, "One sign-in per host"); never on disk.
    public var authTokenCache: any KeyCache = KernelKeyring()

    public static func resolve(_ settings: Settings, config: Config) throws -> EtcdSettings {
        let configPath = settings.configPath
        if let problem = config.etcdProblem { throw problem }
        let table = config.etcd ?? EtcdConfig()
        var endpoints = table.endpoints ?? []
        if let given = settings.etcdEndpoints { endpoints = given }
        guard !endpoints.isEmpty else {
            throw TokenVaultError.config(
                "the etcd backend has no endpoints",
                hint: "set endpoints in the [etcd] table of \(configPath), or \(EnvironmentVariable.etcdEndpoints.name)"
            )
        }
        for e in endpoints {
            guard let url = URL(string: e), let scheme = url.scheme, ["http", "https"].contains(scheme),
                url.host != nil,
                url.path.isEmpty || url.path == "/", url.query == nil
            else {
                throw TokenVaultError.config("etcd endpoint \(Quoted.text(e)) is not an http(s)://HOST:PORT address")
            }
            if scheme == "http", !OAuth2Provider.isLoopback(url.host ?? "") {
                throw TokenVaultError.config(
                    "etcd endpoint \(e) is plain http to another host; use https with ca_file",
                    hint: "tokens are encrypted, but the etcd password and lock traffic are not")
            }
        }
        let prefix = settings.etcdPrefix ?? table.prefix ?? "tokenvault/"
        guard prefix.utf8.count <= 512, !prefix.contains("\0") else {
            throw TokenVaultError.config("etcd prefix must be at most 512 bytes, without NUL")
        }
        if table.username == nil, table.password_file != nil || table.password_command != nil {
            throw TokenVaultError.config("\(configPath): etcd.password_file/password_command need etcd.username")
        }
        // The CA decides which member gets the etcd password: trusted like the config,
        // read once, and handed to libcurl as read (never opened again by name).
        var tls = CurlTransport.TLSFiles(caFile: table.ca_file, certFile: table.cert_file, keyFile: table.key_file)
        func read(_ key: String, _ path: String?) throws -> [UInt8]? {
            guard let path else { return nil }
            guard let bytes = try TrustedFile.read(path, what: "etcd.\(key)") else {
                throw TokenVaultError.config("cannot read etcd.\(key) \(path): \(String(cString: strerror(ENOENT)))")
            }
            return bytes
        }
        tls.ca = try read("ca_file", table.ca_file)
        tls.cert = try read("cert_file", table.cert_file)
        tls.key = try read("key_file", table.key_file)
        return EtcdSettings(
            endpoints: endpoints.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }, prefix: prefix,
            username: table.username,
            password: table.password_file.map { SecretSource.file(settings.child.absolute($0)) }
                ?? table.password_command.map {
                    SecretSource.command($0, settings.child, setting: "the password_command of [etcd]")
                },
            tls: tls,
            timeout: table.timeout ?? 5, leaseTTL: table.lease_ttl ?? 30, wait: table.wait ?? 30,
            runtimeDirectory: settings.runtimeDirectory)
    }
}

/// Whether this user's tokenvault ever reached a cluster at these endpoints: a
/// cluster that does not answer is then 75 (retry), and one never reached 69
/// (the configuration is likely wrong).
enum EtcdReachMark {
    static func path(_ s: EtcdSettings) -> String {
        s.runtimeDirectory + "/etcd-"
            + Hex.encode(Sodium.hash(Array(s.endpoints.sorted().joined(separator: ",").utf8))) + ".reached"
    }

    static func note(_ s: EtcdSettings) {
        let p = path(s)
        var st = stat()
        if lstat(p, &st) == 0 { return }
        guard (try? PrivateDirectory.ensure(Posix.dirname(p))) != nil else { return }
        let fd = open(p, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd >= 0 { close(fd) }
    }

    static func seen(_ s: EtcdSettings) -> Bool {
        var st = stat()
        return lstat(path(s), &st) == 0
    }
}
