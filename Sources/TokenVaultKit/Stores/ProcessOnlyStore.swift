/// `backend = "none"` and `get --no-store` (docs/headless.md, "CI jobs"): a
/// store that keeps what it is given for this process only. A token fetched
/// by a grant that needs no person (client credentials, a workload identity)
/// is printed and forgotten when the process ends; nothing is written
/// anywhere, and no agent keeps it.
public final class ProcessOnlyStore: CredentialStore {
    public let name = "none"
    private var items: [CredentialID: Credential] = [:]

    public init() {}

    public func load(_ id: CredentialID) throws -> Credential? { items[id] }
    public func save(_ credential: Credential) throws { items[credential.id] = credential }
    @discardableResult public func delete(_ id: CredentialID) throws -> Bool { items.removeValue(forKey: id) != nil }
    public func list() throws -> [Credential] { items.values.sorted { $0.id < $1.id } }

    /// Why a credential it does not hold is not there.
    public var uncheckedNote: String? { "backend none keeps nothing past a command" }
}
