import FoundationEssentials

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
            return .object([
                "key": .string(EtcdClient.b64(k)), "target": .string("MOD"), "result": .string("EQUAL"),
                "mod_revision": .string(String(r)),
            ])
        case .createRevision(let k, let r):
            return .object([
                "key": .string(EtcdClient.b64(k)), "target": .string("CREATE"), "result": .string("EQUAL"),
                "create_revision": .string(String(r)),
            ])
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
        case .put(let k, let v):
            return .object([
                "request_put": .object(["key": .string(EtcdClient.b64(k)), "value": .string(EtcdClient.b64(v))])
            ])
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
