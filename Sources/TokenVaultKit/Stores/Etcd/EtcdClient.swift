import Dispatch
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

    public static func resolve(_ settings: Settings, config: Config) throws -> EtcdSettings {
        let configPath = settings.configPath
        if let problem = config.etcdProblem { throw problem }
        let table = config.etcd ?? EtcdConfig()
        var endpoints = table.endpoints ?? []
        if let given = settings.etcdEndpoints { endpoints = given }
        guard !endpoints.isEmpty else {
            throw TokenVaultError.config("the etcd backend has no endpoints",
                                         hint: "set endpoints in the [etcd] table of \(configPath), or \(EnvironmentVariable.etcdEndpoints.name)")
        }
        for e in endpoints {
            guard let url = URL(string: e), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil,
                  url.path.isEmpty || url.path == "/", url.query == nil
            else {
                throw TokenVaultError.config("etcd endpoint \(Quoted.text(e)) is not an http(s)://HOST:PORT address")
            }
            if scheme == "http", !OAuth2Provider.isLoopback(url.host ?? "") {
                throw TokenVaultError.config("etcd endpoint \(e) is plain http to another host; use https with ca_file",
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
        // The CA decides which member gets the etcd password: trusted like the config.
        for (key, path) in [("ca_file", table.ca_file), ("cert_file", table.cert_file), ("key_file", table.key_file)] {
            if let path { try TrustedFile.check(path, what: "etcd.\(key)") }
        }
        return EtcdSettings(
            endpoints: endpoints.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }, prefix: prefix,
            username: table.username,
            password: table.password_file.map { SecretSource.file($0) } ?? table.password_command.map { SecretSource.command($0) },
            tls: CurlTransport.TLSFiles(caFile: table.ca_file, certFile: table.cert_file, keyFile: table.key_file),
            timeout: table.timeout ?? 5, leaseTTL: table.lease_ttl ?? 30)
    }
}

/// One key as etcd 3.4's gateway describes it (int64 fields come as strings,
/// zero fields are left out).
struct EtcdKeyValue: Equatable {
    var key: [UInt8]
    var value: [UInt8]
    var createRevision: Int64
    var modRevision: Int64
    var version: Int64
    var lease: Int64

    init(_ o: [String: JSONValue]) {
        key = o["key"]?.string.flatMap { Data(base64Encoded: $0) }.map(Array.init) ?? []
        value = o["value"]?.string.flatMap { Data(base64Encoded: $0) }.map(Array.init) ?? []
        createRevision = o["create_revision"]?.int64 ?? 0
        modRevision = o["mod_revision"]?.int64 ?? 0
        version = o["version"]?.int64 ?? 0
        lease = o["lease"]?.int64 ?? 0
    }
}

/// One comparison of a transaction.
enum EtcdCompare {
    case modRevision([UInt8], Int64)
    case createRevision([UInt8], Int64)

    var json: JSONValue {
        switch self {
        case .modRevision(let k, let r):
            return .object(["key": .string(EtcdClient.b64(k)), "target": .string("MOD"), "result": .string("EQUAL"), "mod_revision": .string(String(r))])
        case .createRevision(let k, let r):
            return .object(["key": .string(EtcdClient.b64(k)), "target": .string("CREATE"), "result": .string("EQUAL"), "create_revision": .string(String(r))])
        }
    }
}

/// One operation of a transaction.
enum EtcdOp {
    case put([UInt8], [UInt8])
    case delete([UInt8])
    case range([UInt8])

    var json: JSONValue {
        switch self {
        case .put(let k, let v): return .object(["request_put": .object(["key": .string(EtcdClient.b64(k)), "value": .string(EtcdClient.b64(v))])])
        case .delete(let k): return .object(["request_delete_range": .object(["key": .string(EtcdClient.b64(k))])])
        case .range(let k): return .object(["request_range": .object(["key": .string(EtcdClient.b64(k))])])
        }
    }
}

/// A write whose outcome is unknown: the request left, no answer came. The
/// caller finds out by reading.
struct EtcdAmbiguous: Error {
    var detail: String
}

/// etcd v3 through its HTTP/JSON gateway, over the project's libcurl. Every
/// call is bounded by `settings.timeout`; reads fail over between endpoints
/// and retry through a leader election; a write that may have landed throws
/// `EtcdAmbiguous` instead of being sent twice.
final class EtcdClient: @unchecked Sendable {
    let settings: EtcdSettings
    private let lock = PosixLock()
    private var preferred = 0
    private var token: String?
    private var authenticated = false
    /// Member id of the endpoint that last answered, and the cluster's id.
    private(set) var lastHeader: [String: JSONValue] = [:]

    init(settings: EtcdSettings) {
        self.settings = settings
    }

    /// What etcd says while it elects a leader or catches up (whatever the gRPC code).
    /// etcd reports some passing states only in the words of its message,
    /// under code Unknown (2): the server's protocol, not text of ours.
    static let transientMessages = ["request timed out", "leader changed", "no leader", "too many requests", "timed out", "not capable"]

    static func b64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    /// The first key after every key that starts with `prefix`.
    static func rangeEnd(_ prefix: [UInt8]) -> [UInt8] {
        var end = prefix
        while let last = end.last {
            if last < 0xff {
                end[end.count - 1] = last + 1
                return end
            }
            end.removeLast()
        }
        return [0]
    }

    // MARK: KV

    func get(_ key: [UInt8]) throws -> EtcdKeyValue? {
        try range(["key": .string(Self.b64(key))]).first
    }

    func list(prefix: [UInt8], keysOnly: Bool = false) throws -> [EtcdKeyValue] {
        var body: [String: JSONValue] = ["key": .string(Self.b64(prefix)), "range_end": .string(Self.b64(Self.rangeEnd(prefix)))]
        if keysOnly { body["keys_only"] = .bool(true) }
        return try range(body)
    }

    private func range(_ body: [String: JSONValue]) throws -> [EtcdKeyValue] {
        let o = try call("/v3/kv/range", body, idempotent: true)
        return Self.kvs(o)
    }

    static func kvs(_ o: [String: JSONValue]) -> [EtcdKeyValue] {
        guard case .array(let items)? = o["kvs"] else { return [] }
        return items.compactMap { if case .object(let kv) = $0 { return EtcdKeyValue(kv) } else { return nil } }
    }

    /// A transaction; returns whether the comparisons held, and the range
    /// results of whichever branch ran (in order).
    func txn(_ compare: [EtcdCompare], success: [EtcdOp], failure: [EtcdOp] = [], readOnly: Bool = false) throws -> (Bool, [[EtcdKeyValue]]) {
        let o = try call("/v3/kv/txn", [
            "compare": .array(compare.map(\.json)), "success": .array(success.map(\.json)), "failure": .array(failure.map(\.json)),
        ], idempotent: readOnly)
        var ranges: [[EtcdKeyValue]] = []
        if case .array(let responses)? = o["responses"] {
            for r in responses {
                if case .object(let ro) = r, case .object(let range)? = ro["response_range"] { ranges.append(Self.kvs(range)) }
            }
        }
        return (o["succeeded"] == .bool(true), ranges)
    }

    // MARK: Leases and locks

    func grantLease(ttl: Int) throws -> Int64 {
        let o = try call("/v3/lease/grant", ["TTL": .string(String(ttl))], idempotent: false, ambiguousIsFailure: true)
        guard let id = o["ID"]?.int64, id != 0 else { throw TokenVaultError.vault("etcd granted no lease: \(o["error"]?.text ?? "no ID")") }
        return id
    }

    /// True while the lease lives.
    func keepAlive(_ lease: Int64) throws -> Bool {
        let o = try call("/v3/lease/keepalive", ["ID": .string(String(lease))], idempotent: true)
        guard case .object(let result)? = o["result"] else { return false }
        return (result["TTL"]?.int64 ?? 0) > 0
    }

    func revokeLease(_ lease: Int64) {
        _ = try? call("/v3/lease/revoke", ["ID": .string(String(lease))], idempotent: true)
    }

    /// Waits (up to `wait` seconds) for the lock `name`, bound to `lease`; returns the key that holds it.
    func lock(_ name: [UInt8], lease: Int64, wait: Int) throws -> [UInt8] {
        let o = try call("/v3/lock/lock", ["name": .string(Self.b64(name)), "lease": .string(String(lease))],
                         idempotent: false, ambiguousIsFailure: true, callTimeout: wait)
        guard let k = o["key"]?.string.flatMap({ Data(base64Encoded: $0) }), !k.isEmpty else {
            throw TokenVaultError.vault("etcd answered a lock request without a key")
        }
        return Array(k)
    }

    func unlock(_ key: [UInt8]) {
        _ = try? call("/v3/lock/unlock", ["key": .string(Self.b64(key))], idempotent: true)
    }

    // MARK: Cluster

    /// One endpoint's own status (no failover): version, leader, member id.
    func status(of endpoint: String) throws -> [String: JSONValue] {
        try call("/v3/maintenance/status", [:], idempotent: true, only: endpoint)
    }

    func members() throws -> [[String: JSONValue]] {
        let o = try call("/v3/cluster/member/list", [:], idempotent: true)
        guard case .array(let items)? = o["members"] else { return [] }
        return items.compactMap { if case .object(let m) = $0 { return m } else { return nil } }
    }

    // MARK: Calls

    /// What went wrong with one endpoint.
    private enum Failure {
        case unreachable(String)   // nothing was sent: try the next endpoint
        case unavailable(String)   // sent, and the cluster could not serve it now (election, timeout)
    }

    /// One call, failing over between endpoints and retrying through an
    /// election until `settings.timeout` is spent. A write that may have
    /// been applied throws `EtcdAmbiguous` (or, with `ambiguousIsFailure`,
    /// is treated as not done: a lease nobody uses expires, a lock wait ends
    /// with its lease).
    private func call(_ path: String, _ body: [String: JSONValue], idempotent: Bool, ambiguousIsFailure: Bool = false,
                      callTimeout: Int? = nil, only: String? = nil) throws -> [String: JSONValue] {
        let endpoints = only.map { [$0] } ?? settings.endpoints
        let total = Double(callTimeout ?? settings.timeout)
        let deadline = Date().addingTimeInterval(total)
        let payload = Data(JSONValue.object(body).text.utf8)
        var start = lock.withLock { only == nil ? preferred : 0 }
        var last = "no endpoint answered"
        var reauthenticated = false
        var attempt = 0
        while true {
            for step in 0..<endpoints.count {
                let index = (start + step) % endpoints.count
                let endpoint = endpoints[index]
                let left = deadline.timeIntervalSinceNow
                if left <= 0.05 { break }
                // A member cut off from the leader hangs: a call that may be sent again
                // leaves it for the next after a share of the time; a write waits for
                // its answer (or is ambiguous), a lock for its turn.
                let retryable = (idempotent || ambiguousIsFailure) && callTimeout == nil && endpoints.count > 1
                let attemptSeconds = retryable ? min(left, max(1.5, total / 3)) : left
                if settings.username != nil, only == nil || path != "/v3/maintenance/status" {
                    do {
                        try authenticateIfNeeded(endpoint, seconds: min(left, max(1.5, total / 3)))
                    } catch TokenVaultError.temporary(let why) {
                        last = why
                        continue
                    }
                }
                var headers = ["Content-Type: application/json"]
                if let t = lock.withLock({ token }) { headers.append("Authorization: \(t)") }
                let request = HTTPRequest(method: "POST", url: endpoint + path, headers: headers, body: payload)
                let response: HTTPResponse
                do {
                    response = try CurlTransport.exchange(request, timeoutMilliseconds: Int(attemptSeconds * 1000),
                                                          connectMilliseconds: min(Int(attemptSeconds * 1000), 1000),
                                                          maxBody: 4 << 20, tls: settings.tls)
                } catch let failure as HTTPFailure {
                    try Self.unusable(failure, endpoint: endpoint)
                    last = failure.error(peer: "etcd at \(endpoint)", what: "etcd").errorText
                    // Nothing sent: the next endpoint. Maybe applied: a write is ambiguous.
                    if failure.maybeSent, !idempotent, !ambiguousIsFailure { throw EtcdAmbiguous(detail: last) }
                    continue
                }
                let object: [String: JSONValue]
                if let v = try? JSONDecoder().decode(JSONValue.self, from: response.body), case .object(let o) = v {
                    object = o
                } else {
                    throw TokenVaultError.backendUnavailable("\(endpoint) is not an etcd v3 gateway (HTTP \(response.status) with no JSON)",
                                                             hint: "check the endpoints in the [etcd] table; etcd 3.4 or later serves /v3/")
                }
                if response.status == 200, object["error"] == nil {
                    lock.withLock {
                        preferred = index
                        if case .object(let h)? = object["header"] { lastHeader = h }
                    }
                    EtcdReachMark.note(settings)
                    return object
                }
                let code = GRPCCode(object["code"]?.int64)
                let message = OutsideText.line(object["message"]?.string ?? object["error"]?.string ?? "HTTP \(response.status)")
                switch code {
                case .unauthenticated where settings.username != nil && !reauthenticated:
                    // The token expired (simple tokens live 5 minutes): sign in again once.
                    lock.withLock { authenticated = false; token = nil }
                    reauthenticated = true
                    try authenticateIfNeeded(endpoint, seconds: left)
                    start = index
                    continue
                case .unauthenticated, .permissionDenied:
                    throw TokenVaultError.permission("etcd refused \(settings.username.map { "user \($0)" } ?? "the request"): \(message)",
                                                     hint: "grant the user read and write on the prefix \(settings.prefix) (see docs/fleet.md)")
                case _ where code.isRetryable || EtcdClient.transientMessages.contains(where: message.contains):
                    last = "\(endpoint): \(message)"
                    if !idempotent, !ambiguousIsFailure, !message.contains("no leader") { throw EtcdAmbiguous(detail: last) }
                    continue
                case .failedPrecondition where message.contains("authentication is not enabled"):
                    throw TokenVaultError.config("etcd at \(endpoint) has authentication off, but [etcd] sets a username",
                                                 hint: "remove username from [etcd], or enable auth on the cluster")
                default:
                    throw TokenVaultError.vault("etcd at \(endpoint) refused the request: \(message)")
                }
            }
            attempt += 1
            if only != nil || deadline.timeIntervalSinceNow <= 0.05 { break }
            // Every endpoint failed this round: an election, or a restart. Back off a little.
            Posix.sleep(min(0.05 * Double(1 << min(attempt, 4)), max(deadline.timeIntervalSinceNow, 0)))
            start = lock.withLock { preferred }
        }
        if only != nil { throw TokenVaultError.temporary(last) }
        if !EtcdReachMark.seen(settings) {
            throw TokenVaultError.backendUnavailable("no etcd endpoint has ever answered (\(endpoints.joined(separator: ", "))): \(last)",
                                                     hint: "check endpoints and ca_file in the [etcd] table, or \(EnvironmentVariable.etcdEndpoints.name)")
        }
        throw TokenVaultError.temporary("the etcd cluster did not answer within \(Int(total)) s: \(last)")
    }

    /// A failure no other endpoint or retry can mend (69): libcurl is missing,
    /// or the configured CA or client certificate is refused.
    private static func unusable(_ failure: HTTPFailure, endpoint: String) throws {
        switch failure.kind {
        case .noLibrary:
            throw failure.error(peer: "etcd at \(endpoint)", what: "etcd")
        case .tls:
            throw TokenVaultError.backendUnavailable("TLS with etcd at \(endpoint) failed: \(failure.detail)",
                                                     hint: "check ca_file, cert_file and key_file in the [etcd] table")
        default:
            return
        }
    }

    private func authenticateIfNeeded(_ endpoint: String, seconds: Double) throws {
        if lock.withLock({ authenticated }) { return }
        guard let user = settings.username else { return }
        guard let source = settings.password else {
            throw TokenVaultError.config("[etcd] sets username \(user) but neither password_file nor password_command")
        }
        let password = try source.read(what: "the etcd password")
        let body = Data(JSONValue.object(["name": .string(user), "password": .string(password)]).text.utf8)
        let response: HTTPResponse
        do {
            response = try CurlTransport.exchange(
                HTTPRequest(method: "POST", url: endpoint + "/v3/auth/authenticate", headers: ["Content-Type: application/json"], body: body),
                timeoutMilliseconds: Int(seconds * 1000), connectMilliseconds: min(Int(seconds * 1000), 1000), maxBody: 1 << 16, tls: settings.tls)
        } catch let failure as HTTPFailure {
            try Self.unusable(failure, endpoint: endpoint)
            throw failure.error(peer: "etcd at \(endpoint)", what: "etcd")
        }
        guard let v = try? JSONDecoder().decode(JSONValue.self, from: response.body), case .object(let o) = v else {
            throw TokenVaultError.backendUnavailable("\(endpoint) is not an etcd v3 gateway (HTTP \(response.status))")
        }
        if let t = o["token"]?.string, !t.isEmpty {
            lock.withLock { token = t; authenticated = true }
            return
        }
        let message = OutsideText.line(o["message"]?.string ?? "HTTP \(response.status)")
        if message.contains("authentication is not enabled") {
            throw TokenVaultError.config("etcd at \(endpoint) has authentication off, but [etcd] sets a username",
                                         hint: "remove username from [etcd], or enable auth on the cluster")
        }
        if response.status == 503 || GRPCCode(o["code"]?.int64).isRetryable {
            throw TokenVaultError.temporary("etcd at \(endpoint) cannot sign in now: \(message)")
        }
        throw TokenVaultError.permission("etcd refused user \(user): \(message)", hint: "check etcd.password_file or etcd.password_command")
    }
}

/// Whether this user's tokenvault ever reached a cluster at these endpoints: a
/// cluster that does not answer is then 75 (retry), and one never reached 69
/// (the configuration is likely wrong).
enum EtcdReachMark {
    static func path(_ s: EtcdSettings) -> String {
        Settings().runtimeDirectory + "/etcd-" +
            Hex.encode(Sodium.hash(Array(s.endpoints.sorted().joined(separator: ",").utf8))) + ".reached"
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

/// The status codes of etcd's gRPC gateway, by name.
enum GRPCCode: Int64, Sendable {
    case ok = 0, cancelled, unknown, invalidArgument, deadlineExceeded, notFound, alreadyExists, permissionDenied,
         resourceExhausted, failedPrecondition, aborted, outOfRange, unimplemented, `internal`, unavailable, dataLoss,
         unauthenticated

    /// A code outside the table is Unknown.
    init(_ value: Int64?) { self = value.flatMap(GRPCCode.init(rawValue:)) ?? .unknown }

    /// Passing states: an election, a timeout, a conflict to try again.
    var isRetryable: Bool { self == .unavailable || self == .deadlineExceeded || self == .aborted }
}
