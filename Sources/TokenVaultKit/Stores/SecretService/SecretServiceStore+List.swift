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
        Set(
            try items(withSecrets: false).compactMap { item in
                (try? ServiceKey(parsing: item.service)).map { CredentialID(service: $0, account: item.account) }
            }
        )
        .sorted()
    }

    public func list() throws -> [Credential] {
        try ensureUnlocked("list credentials")
        let rows = try items(withSecrets: true)
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

    private typealias Item = (service: String, account: String, secret: Data, foreign: Bool)

    /// Every item with tokenvault's attribute names, one search per type and
    /// not by schema name: items stored with `secret-tool store service H
    /// account A type token` are listed too. The secret is loaded only
    /// `withSecrets` (else empty); `foreign` marks another application's item.
    private func items(withSecrets: Bool) throws -> [Item] {
        final class Found: @unchecked Sendable { var items: [Item] = [] }
        return try call("list credentials") {
            let found = Found()
            for type in CredentialType.allCases {
                var message: UnsafeMutablePointer<CChar>?
                let ok = SecretServiceStore.withTypes { types in
                    tv_search(
                        type.rawValue, types, withSecrets ? 1 : 0, Unmanaged.passUnretained(found).toOpaque(),
                        { context, service, account, secret, ours in
                            Unmanaged<Found>.fromOpaque(context!).takeUnretainedValue().items.append(
                                (
                                    String(cString: service!), String(cString: account!),
                                    secret.map { Data(bytes: $0, count: strlen($0)) } ?? Data(), ours == 0
                                ))
                        }, &message)
                }
                if ok == 0 { return SecretServiceStore.failure("list credentials", &message) }
            }
            return .success(found.items)
        }
    }
}
