import Dispatch
import FoundationEssentials
import Glibc

/// etcd v3 through its HTTP/JSON gateway, over the project's libcurl. Every
/// call is bounded by `settings.timeout`; reads fail over between endpoints
/// and retry through a leader election; a write that may have landed throws
/// `EtcdAmbiguous` instead of being sent twice.
final class EtcdClient: @unchecked Sendable {
    let settings: EtcdSettings
    /// What the client's calls share, under one lock.
    struct Shared {
        /// The endpoint that answered last: the next call starts there.
        var preferred = 0
        /// The sign-in token, once this process has one.
        var token: String?
        var authenticated = false
        /// Member id of the endpoint that last answered, and the cluster's id.
        var lastHeader: [String: JSONValue] = [:]
    }
    let state = Locked(Shared())

    init(settings: EtcdSettings) {
        self.settings = settings
    }

    /// What etcd says while it elects a leader or catches up (whatever the gRPC code).
    /// etcd reports some passing states only in the words of its message,
    /// under code Unknown (2): the server's protocol, not text of ours.
    static let transientMessages = [
        "request timed out", "leader changed", "no leader", "too many requests", "timed out", "not capable",
    ]

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
        var body: [String: JSONValue] = [
            "key": .string(Self.b64(prefix)), "range_end": .string(Self.b64(Self.rangeEnd(prefix))),
        ]
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
    func txn(
        _ compare: [EtcdCompare], success: [EtcdOp], failure: [EtcdOp] = [], readOnly: Bool = false
    ) throws -> (Bool, [[EtcdKeyValue]]) {
        let o = try call(
            "/v3/kv/txn",
            [
                "compare": .array(compare.map(\.json)), "success": .array(success.map(\.json)),
                "failure": .array(failure.map(\.json)),
            ], idempotent: readOnly)
        var ranges: [[EtcdKeyValue]] = []
        if case .array(let responses)? = o["responses"] {
            for r in responses {
                if case .object(let ro) = r, case .object(let range)? = ro["response_range"] {
                    ranges.append(Self.kvs(range))
                }
            }
        }
        return (o["succeeded"] == .bool(true), ranges)
    }

    // MARK: Leases and locks

    func grantLease(ttl: Int) throws -> Int64 {
        let o = try call("/v3/lease/grant", ["TTL": .string(String(ttl))], idempotent: false, ambiguousIsFailure: true)
        guard let id = o["ID"]?.int64, id != 0 else {
            throw TokenVaultError.vault("etcd granted no lease: \(o["error"]?.text ?? "no ID")")
        }
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
        let o = try call(
            "/v3/lock/lock", ["name": .string(Self.b64(name)), "lease": .string(String(lease))],
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
        case unreachable(String)  // nothing was sent: try the next endpoint
        case unavailable(String)  // sent, and the cluster could not serve it now (election, timeout)
    }

    /// One call, failing over between endpoints and retrying through an
    /// election until `settings.timeout` is spent. A write that may have
    /// been applied throws `EtcdAmbiguous` (or, with `ambiguousIsFailure`,
    /// is treated as not done: a lease nobody uses expires, a lock wait ends
    /// with its lease).
    private func call(
        _ path: String, _ body: [String: JSONValue], idempotent: Bool, ambiguousIsFailure: Bool = false,
        callTimeout: Int? = nil, only: String? = nil
    ) throws -> [String: JSONValue] {
        let endpoints = only.map { [$0] } ?? settings.endpoints
        let total = Double(callTimeout ?? settings.timeout)
        var deadline = Date().addingTimeInterval(total)
        // A cluster that answered before and now only times out is busy, not gone:
        // a call keeps waiting for it up to `wait` seconds in all (docs/fleet.md).
        let patience = Date().addingTimeInterval(max(total, Double(settings.wait)))
        var waited = 0
        let payload = Data(JSONValue.object(body).text.utf8)
        var start = state.withLock { only == nil ? $0.preferred : 0 }
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
                if settings.username != nil, only == nil || path != "/v3/maintenance/status",
                    let why = try signInPassing(endpoint, seconds: min(left, max(1.5, total / 3)))
                {
                    last = why
                    continue
                }
                let mode = Repeating(idempotent: idempotent, ambiguousIsFailure: ambiguousIsFailure)
                switch try ask(endpoint, path, payload, seconds: attemptSeconds, mode: mode) {
                case .answered(let object):
                    return answered(object, by: index)
                case .passing(let why):
                    last = why
                case .tokenExpired(let message):
                    // Simple tokens live 5 minutes: sign in again, once; on this host, one
                    // process does (the others find its token).
                    guard !reauthenticated else { throw refused(message) }
                    reauthenticated = true
                    let refusedToken = state.withLock { s -> String? in
                        defer { (s.authenticated, s.token) = (false, nil) }
                        return s.token
                    }
                    try authenticateIfNeeded(endpoint, seconds: left, refused: refusedToken)
                    start = index
                }
            }
            attempt += 1
            if only == nil, callTimeout == nil, deadline.timeIntervalSinceNow <= 0.05,
                patience.timeIntervalSinceNow > 0.05,
                last.contains("did not answer within"), EtcdReachMark.seen(settings), hasLeader(endpoints)
            {
                waited += Int(total)
                if WaitLine.enabled {
                    WaitLine.draw(
                        "waiting for the etcd cluster, which is busy (\(waited) s of at most \(settings.wait) s)")
                }
                deadline = min(patience, Date().addingTimeInterval(total))
            }
            if only != nil || deadline.timeIntervalSinceNow <= 0.05 { break }
            // Every endpoint failed this round: an election, or a restart. Back off a little.
            Posix.sleep(min(0.05 * Double(1 << min(attempt, 4)), max(deadline.timeIntervalSinceNow, 0)))
            start = state.withLock { $0.preferred }
        }
        if waited > 0, WaitLine.enabled { WaitLine.clear() }
        if only != nil { throw TokenVaultError.temporary(last) }
        throw unanswered(last, within: total + Double(waited))
    }

    /// Whether a member says the cluster has a leader now (a second to say
    /// so): then a call that timed out met a busy cluster, not a broken one.
    private func hasLeader(_ endpoints: [String]) -> Bool {
        let payload = Data("{}".utf8)
        for endpoint in endpoints {
            guard
                case .answered(let o)? = try? ask(
                    endpoint, "/v3/maintenance/status", payload, seconds: 1,
                    mode: Repeating(idempotent: true, ambiguousIsFailure: false))
            else { continue }
            if let leader = o["leader"]?.string ?? o["leader"]?.int64.map(String.init), leader != "0",
                o["errors"] == nil
            {
                return true
            }
        }
        return false
    }

    /// An answer: the endpoint that gave it is asked first next time, and the
    /// cluster is marked as once reached.
    private func answered(_ object: [String: JSONValue], by index: Int) -> [String: JSONValue] {
        state.withLock { s in
            s.preferred = index
            if case .object(let h)? = object["header"] { s.lastHeader = h }
        }
        EtcdReachMark.note(settings)
        return object
    }

    /// No endpoint answered in time: 75 for a cluster that answered before,
    /// 69 for one never reached (the configuration is likely wrong).
    private func unanswered(_ last: String, within total: Double) -> TokenVaultError {
        guard EtcdReachMark.seen(settings) else {
            return .backendUnavailable(
                "no etcd endpoint has ever answered (\(settings.endpoints.joined(separator: ", "))): \(last)",
                hint: "check endpoints and ca_file in the [etcd] table, or \(EnvironmentVariable.etcdEndpoints.name)")
        }
        return .temporary("the etcd cluster did not answer within \(Int(total)) s: \(last)")
    }

    /// What one endpoint made of a call.
    private enum Outcome {
        case answered([String: JSONValue])
        /// Not served now (nothing was sent, an election, a timeout): try the next endpoint.
        case passing(String)
        /// The sign-in token was refused: it expired.
        case tokenExpired(String)
    }

    /// Whether a call may be sent again: a read may; a write that may have been
    /// applied is ambiguous (`EtcdAmbiguous`) unless the caller treats that as
    /// not done.
    private struct Repeating {
        var idempotent: Bool
        var ambiguousIsFailure: Bool
        var ambiguityThrows: Bool { !idempotent && !ambiguousIsFailure }
    }

    /// One call to one endpoint, within `seconds`.
    private func ask(
        _ endpoint: String, _ path: String, _ payload: Data, seconds: Double, mode: Repeating
    ) throws -> Outcome {
        var headers = ["Content-Type: application/json"]
        if let t = state.withLock({ $0.token }) { headers.append("Authorization: \(t)") }
        let request = HTTPRequest(method: "POST", url: endpoint + path, headers: headers, body: payload)
        let response: HTTPResponse
        do {
            response = try CurlTransport.exchange(
                request, timeoutMilliseconds: Int(seconds * 1000),
                connectMilliseconds: min(Int(seconds * 1000), 1000), maxBody: 4 << 20, tls: settings.tls)
        } catch let failure as HTTPFailure {
            try Self.unusable(failure, endpoint: endpoint)
            let why = failure.error(peer: "etcd at \(endpoint)", what: "etcd").errorText
            // Nothing sent: the next endpoint. Maybe applied: a write is ambiguous.
            if failure.maybeSent, mode.ambiguityThrows { throw EtcdAmbiguous(detail: why) }
            return .passing(why)
        }
        guard let v = JSONValue.parsed(response.body), case .object(let object) = v
        else {
            throw TokenVaultError.backendUnavailable(
                "\(endpoint) is not an etcd v3 gateway (HTTP \(response.status) with no JSON)",
                hint: "check the endpoints in the [etcd] table; etcd 3.4 or later serves /v3/")
        }
        if response.status == 200, object["error"] == nil { return .answered(object) }
        let code = GRPCCode(object["code"]?.int64)
        let message = OutsideText.line(
            object["message"]?.string ?? object["error"]?.string ?? "HTTP \(response.status)")
        switch code {
        case .unauthenticated where settings.username != nil:
            return .tokenExpired(message)
        case .unauthenticated, .permissionDenied:
            throw refused(message)
        case _ where code.isRetryable || EtcdClient.transientMessages.contains(where: message.contains):
            let why = "\(endpoint): \(message)"
            if mode.ambiguityThrows, !message.contains("no leader") { throw EtcdAmbiguous(detail: why) }
            return .passing(why)
        case .failedPrecondition where message.contains("authentication is not enabled"):
            throw TokenVaultError.config(
                "etcd at \(endpoint) has authentication off, but [etcd] sets a username",
                hint: "remove username from [etcd], or enable auth on the cluster")
        default:
            throw TokenVaultError.vault("etcd at \(endpoint) refused the request: \(message)")
        }
    }

    /// 77: the cluster refused the user (or an anonymous request).
    private func refused(_ message: String) -> TokenVaultError {
        .permission(
            "etcd refused \(settings.username.map { "user \($0)" } ?? "the request"): \(message)",
            hint: "grant the user read and write on the prefix \(settings.prefix) (see docs/fleet.md)")
    }

    /// A failure no other endpoint or retry can mend (69): libcurl is missing,
    /// or the configured CA or client certificate is refused.
    static func unusable(_ failure: HTTPFailure, endpoint: String) throws {
        switch failure.kind {
        case .noLibrary:
            throw failure.error(peer: "etcd at \(endpoint)", what: "etcd")
        case .tls:
            throw TokenVaultError.backendUnavailable(
                "TLS with etcd at \(endpoint) failed: \(failure.detail)",
                hint: "check ca_file, cert_file and key_file in the [etcd] table")
        default:
            return
        }
    }
}

/// The etcd clients the agent keeps (`AgentCaches`): one connection and one
/// auth token for each set of settings, however many stores it opens on
/// them (one per request; docs/agent.md). The password is not part of the
/// key: a changed one is used when the token is renewed. A command opens
/// one store, with a client of its own.
public final class EtcdClients: Sendable {
    private let clients = Locked<[String: EtcdClient]>([:])

    public init() {}

    func client(_ settings: EtcdSettings) -> EtcdClient {
        let tls = settings.tls
        let key = [
            settings.endpoints.joined(separator: ","), settings.prefix, settings.username ?? "", tls.caFile ?? "",
            tls.certFile ?? "", tls.keyFile ?? "", tls.fingerprint, String(settings.timeout), String(settings.leaseTTL),
        ].joined(separator: "\n")
        return clients.withLock { clients in
            if let c = clients[key] { return c }
            let c = EtcdClient(settings: settings)
            clients[key] = c
            return c
        }
    }
}
