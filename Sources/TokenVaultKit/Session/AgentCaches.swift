import FoundationEssentials
import Glibc

/// What the agent keeps across the runs it serves, handed to each through
/// its sessions (docs/design.md): where Secret Service items were found, the
/// records it decoded, the config last read, the servers' DPoP nonces and
/// its etcd connections. A command keeps its own for its one run.
public final class AgentCaches: Sendable {
    public let itemPaths = ItemPathCache()
    public let decodedRecords = DecodedRecords()
    public let config = ConfigCache()
    public let dpopNonces = DPoPNonces()
    public let etcdClients = EtcdClients()

    public init() {}
}

/// Where each item was last found, per bus: a lookup asks that item for its
/// secret in one call, and searches again only when it is gone or locked
/// (docs/design.md) -- what an agent answering many `get`s saves. The agent
/// owns one and hands it to each Secret Service store it opens; a command,
/// which looks up once, is quicker through libsecret's own lookup.
public final class ItemPathCache: Sendable {
    private let paths = Locked<[String: String]>([:])

    public init() {}

    func path(_ key: String) -> String? { paths.withLock { $0[key] } }
    func set(_ key: String, _ path: String?) { paths.withLock { $0[key] = path } }
    func forgetAll() { paths.withLock { $0 = [:] } }
}

/// The records decoded last, by id and their exact bytes: decoding is a
/// function of the two, so the agent, which reads the same record again
/// (answering `get` after `get`), decodes it once. It owns one and hands it
/// to the stores it opens (docs/design.md); only what a backend has just
/// returned is looked up here: nothing is answered from memory.
public final class DecodedRecords: Sendable {
    private let records = Locked<[CredentialID: (data: Data, credential: Credential)]>([:])

    public init() {}

    /// True when some decoded record is kept.
    public var isEmpty: Bool { records.withLock { $0.isEmpty } }

    func decode(
        _ data: Data, id: CredentialID, _ decode: (Data, CredentialID) throws -> Credential
    ) throws -> Credential {
        if let known = records.withLock({ $0[id] }), known.data == data { return known.credential }
        let c = try decode(data, id)
        records.withLock { records in
            if records.count >= 64, records[id] == nil { records = [:] }
            records[id] = (data, c)
        }
        return c
    }

    /// Forgets them (the agent, at `lock` and when the vault's key expires):
    /// each record's bytes are overwritten with zeros, and the decoded values released.
    public func forget() {
        var taken = records.withLock { records in
            defer { records = [:] }
            return records.map(\.value.data)
        }
        for i in taken.indices {
            taken[i].withUnsafeMutableBytes { raw in
                if let base = raw.baseAddress { memset(base, 0, raw.count) }
            }
        }
    }
}
