internal import CTokenVault
import FoundationEssentials
import Glibc

/// Listing the Secret Service's credentials (docs/config.md, "Backends"):
/// anyone's items with tokenvault's attribute names are listed, tokenvault's
/// own first where both hold one.
extension SecretServiceStore {
    /// Which credentials exist, from the attributes alone: no secret is loaded
    /// and nothing is unlocked, so it never prompts (for shell completion).
    public func listIDs() throws -> [CredentialID] {
        final class IDs: @unchecked Sendable { var items: [(String, String)] = [] }
        let pairs: [(String, String)] = try call("list credentials") {
            let found = IDs()
            for type in CredentialType.allCases {
                var message: UnsafeMutablePointer<CChar>?
                let ok = SecretServiceStore.withTypes { types in
                    tv_search(
                        type.rawValue, types, 0, Unmanaged.passUnretained(found).toOpaque(),
                        { context, service, account, _, _ in
                            Unmanaged<IDs>.fromOpaque(context!).takeUnretainedValue().items.append(
                                (String(cString: service!), String(cString: account!)))
                        }, &message)
                }
                if ok == 0 { return SecretServiceStore.failure("list credentials", &message) }
            }
            return .success(found.items)
        }
        return Set(
            pairs.compactMap { s, a in (try? ServiceKey(parsing: s)).map { CredentialID(service: $0, account: a) } }
        )
        .sorted()
    }

    public func list() throws -> [Credential] {
        try ensureUnlocked("list credentials")
        final class Rows: @unchecked Sendable { var items: [(String, String, Data, Bool)] = [] }
        let rows: [(String, String, Data, Bool)] = try call("list credentials") {
            let found = Rows()
            // One search per type, not matching the schema name: items stored with
            // `secret-tool store service H account A type token` are listed too.
            for type in CredentialType.allCases {
                var message: UnsafeMutablePointer<CChar>?
                let ok = SecretServiceStore.withTypes { types in
                    tv_search(
                        type.rawValue, types, 1, Unmanaged.passUnretained(found).toOpaque(),
                        { context, service, account, secret, ours in
                            let rows = Unmanaged<Rows>.fromOpaque(context!).takeUnretainedValue()
                            rows.items.append(
                                (
                                    String(cString: service!), String(cString: account!),
                                    Data(bytes: secret!, count: strlen(secret!)), ours == 0
                                ))
                        }, &message)
                }
                if ok == 0 { return SecretServiceStore.failure("list credentials", &message) }
            }
            return .success(found.items)
        }
        // One row a credential: tokenvault's own item where it has one, as a lookup reads.
        var byID: [CredentialID: Credential] = [:]
        for (service, account, record, foreign) in rows {
            guard let key = try? ServiceKey(parsing: service) else { continue }
            let id = CredentialID(service: key, account: account)
            var c = Credential.listed(record, id: id)
            c.foreignItem = foreign
            if let kept = byID[id], kept.foreignItem == foreign ? !c.isNewer(than: kept) : foreign { continue }
            byID[id] = c
        }
        return byID.values.sorted { $0.id < $1.id }
    }
}
