internal import CLibSecret
import Foundation

/// The freedesktop Secret Service through libsecret (SPEC §5): schema
/// `io.tokenvault.Credential`, attributes `service`, `account`, `type`,
/// label `tokenvault: SERVICE (ACCOUNT)`, the JSON record as the secret.
public final class SecretServiceStore: CredentialStore, @unchecked Sendable {
    public let name = "secret-service"
    let timeout: Double

    /// What the probe found.
    public struct Status: Sendable {
        public var available: Bool
        /// Why not, or who answers ("gnome-keyring-daemon").
        public var detail: String
        /// Whether the default collection is locked, when known.
        public var locked: Bool?
        /// False when there is no session bus at all, as on a server.
        public var sessionBusConfigured = true
    }

    init(timeout: Double) { self.timeout = timeout }

    /// Connects within `timeout` seconds, or says why it could not.
    public static func connect(environment env: [String: String], timeout: Double) -> Result<SecretServiceStore, TokenVaultError> {
        let status = probe(environment: env, timeout: timeout, detailed: false)
        guard status.available else { return .failure(.backendUnavailable("the Secret Service is not available: \(status.detail)")) }
        return .success(SecretServiceStore(timeout: timeout))
    }

    /// Probes the session bus. `detailed` also asks who provides the service and
    /// whether the default collection is locked (for `tokenvault backend`).
    public static func probe(environment env: [String: String], timeout: Double, detailed: Bool) -> Status {
        // GLib would otherwise try to autolaunch a bus (dbus-launch, X11).
        let address = env["DBUS_SESSION_BUS_ADDRESS"] ?? ""
        if address.isEmpty {
            let runtimeBus = (env["XDG_RUNTIME_DIR"] ?? "/run/user/\(getuid())") + "/bus"
            if access(runtimeBus, F_OK) != 0 {
                return Status(available: false, detail: "no D-Bus session bus: DBUS_SESSION_BUS_ADDRESS is not set",
                              sessionBusConfigured: false)
            }
        }
        let answer = withDeadline(timeout) { () -> Status in
            var error: UnsafeMutablePointer<GError>?
            guard let service = tv_service_open(&error) else {
                defer { g_clear_error(&error) }
                return Status(available: false, detail: describe(String(cString: tv_error_message(error))))
            }
            defer { g_object_unref(service) }
            guard detailed else { return Status(available: true, detail: "") }
            let lockedState = tv_default_collection_locked(service, &error)
            g_clear_error(&error)
            let pid = tv_secrets_owner_pid(Int32(timeout * 1000))
            var who = "a Secret Service"
            if pid > 0, let cmdline = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
               let argv0 = cmdline.split(separator: 0).first {
                who = (String(decoding: argv0, as: UTF8.self) as NSString).lastPathComponent
            }
            return Status(available: true, detail: who, locked: lockedState < 0 ? nil : lockedState == 1)
        }
        return answer ?? Status(available: false, detail: "the session bus did not answer within \(Int(timeout)) s")
    }

    private static func describe(_ glibMessage: String) -> String {
        if glibMessage.contains("not provided by any .service files") || glibMessage.contains("ServiceUnknown") {
            return "no Secret Service (org.freedesktop.secrets) on the session bus"
        }
        return glibMessage
    }

    private func call<T: Sendable>(_ what: String, _ body: @escaping @Sendable () -> Result<T, TokenVaultError>) throws -> T {
        guard let result = withDeadline(timeout, body) else {
            throw TokenVaultError.backendUnavailable(
                "the Secret Service did not answer within \(Int(timeout)) s while trying to \(what)",
                hint: "is the keyring locked? unlock it, or use TOKENVAULT_BACKEND=file")
        }
        return try result.get()
    }

    private static func failure<T>(_ what: String, _ error: inout UnsafeMutablePointer<GError>?) -> Result<T, TokenVaultError> {
        defer { g_clear_error(&error) }
        return .failure(.backendUnavailable("the Secret Service could not \(what): \(describe(String(cString: tv_error_message(error))))"))
    }

    // MARK: CredentialStore

    public func load(_ id: CredentialID) throws -> Credential? {
        let service = id.service.description, account = id.account
        let record: Data? = try call("look up \(id)") {
            var error: UnsafeMutablePointer<GError>?
            let attrs = tv_attributes(service, account, nil)
            defer { g_hash_table_unref(attrs) }
            let secret = secret_password_lookupv_sync(tv_lookup_schema(), attrs, nil, &error)
            if error != nil { return SecretServiceStore.failure("look up \(id)", &error) }
            guard let secret else { return .success(nil) }
            defer { secret_password_free(secret) }
            return .success(Data(bytes: secret, count: strlen(secret)))
        }
        guard let record else { return nil }
        return try Credential.fromRecord(record, id: id)
    }

    public func save(_ credential: Credential) throws {
        let service = credential.service.description, account = credential.account
        let type = credential.type.rawValue
        let label = "tokenvault: \(service) (\(account))"
        var json = Array(credential.recordJSON())
        json.append(0)
        let secret = SecureBytes(json)
        Sodium.wipe(&json)
        try call("store \(credential.id)") { () -> Result<Void, TokenVaultError> in
            var error: UnsafeMutablePointer<GError>?
            // An item of another type would otherwise stay beside the new one.
            for other in CredentialType.allCases where other.rawValue != type {
                let attrs = tv_attributes(service, account, other.rawValue)
                secret_password_clearv_sync(tv_lookup_schema(), attrs, nil, &error)
                g_hash_table_unref(attrs)
                if error != nil { return SecretServiceStore.failure("replace \(credential.id)", &error) }
            }
            let attrs = tv_attributes(service, account, type)
            defer { g_hash_table_unref(attrs) }
            let ok = secret.withUnsafeBytes { s in
                secret_password_storev_sync(tv_schema(), attrs, SECRET_COLLECTION_DEFAULT, label,
                                            s.baseAddress!.assumingMemoryBound(to: CChar.self), nil, &error)
            }
            if ok == 0 || error != nil { return SecretServiceStore.failure("store \(credential.id)", &error) }
            return .success(())
        }
    }

    @discardableResult
    public func delete(_ id: CredentialID) throws -> Bool {
        let service = id.service.description, account = id.account
        return try call("delete \(id)") {
            var error: UnsafeMutablePointer<GError>?
            let attrs = tv_attributes(service, account, nil)
            defer { g_hash_table_unref(attrs) }
            var removed = false
            // Several items can match (other types, or ones stored by secret-tool).
            while secret_password_clearv_sync(tv_lookup_schema(), attrs, nil, &error) != 0 { removed = true }
            if error != nil { return SecretServiceStore.failure("delete \(id)", &error) }
            return .success(removed)
        }
    }

    public func list() throws -> [Credential] {
        let rows: [(String, String, Data)] = try call("list credentials") {
            var error: UnsafeMutablePointer<GError>?
            var rows: [(String, String, Data)] = []
            let flags = SecretSearchFlags(rawValue: SECRET_SEARCH_ALL.rawValue | SECRET_SEARCH_UNLOCK.rawValue | SECRET_SEARCH_LOAD_SECRETS.rawValue)
            // One search per type, not matching the schema name: items stored with
            // `secret-tool store service H account A type token` are listed too.
            for type in CredentialType.allCases {
                let attrs = tv_attributes(nil, nil, type.rawValue)
                defer { g_hash_table_unref(attrs) }
                let found = secret_password_searchv_sync(tv_lookup_schema(), attrs, flags, nil, &error)
                if error != nil { return SecretServiceStore.failure("list credentials", &error) }
                defer { tv_list_free_objects(found) }
                var node = found
                while let n = node {
                    defer { node = n.pointee.next }
                    let item = OpaquePointer(n.pointee.data)
                    guard let s = tv_item_attribute(item, "service"), let a = tv_item_attribute(item, "account") else { continue }
                    defer { g_free(s); g_free(a) }
                    guard let secret = tv_item_secret(item, &error) else {
                        g_clear_error(&error)
                        continue
                    }
                    defer { secret_password_free(secret) }
                    rows.append((String(cString: s), String(cString: a), Data(bytes: secret, count: strlen(secret))))
                }
            }
            return .success(rows)
        }
        return rows.compactMap { service, account, record in
            guard let key = try? ServiceKey(parsing: service) else { return nil }
            return try? Credential.fromRecord(record, id: CredentialID(service: key, account: account))
        }.sorted { $0.id < $1.id }
    }
}
