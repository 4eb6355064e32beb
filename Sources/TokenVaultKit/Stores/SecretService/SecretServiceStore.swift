internal import CTokenVault
import Dispatch
import FoundationEssentials
import Glibc

/// The freedesktop Secret Service through libsecret (docs/config.md): schema
/// `io.tokenvault.Credential`, attributes `service`, `account`, `type`,
/// label `tokenvault: SERVICE (ACCOUNT)`, the JSON record as the secret.
public final class SecretServiceStore: CredentialStore, @unchecked Sendable {
    public let name = "secret-service"
    let timeout: Double
    /// How a locked collection is unlocked (docs/providers.md).
    let unlock: UnlockPolicy

    /// `TOKENVAULT_UNLOCK_TIMEOUT` (default 60 s with a desktop session, 0
    /// without) and whether the keyring's prompt can be shown at all.
    public struct UnlockPolicy: Sendable {
        public var timeout: Double
        public var desktop: Bool

        public init(settings: Settings) throws {
            desktop = settings.desktop
            timeout = try settings.unlockTimeout
        }
    }

    /// What the probe found.
    public struct Status: Sendable {
        public var available: Bool
        /// Why not, or who answers ("gnome-keyring-daemon").
        public var detail: String
        /// Who answers, when known.
        public var provider: SecretServiceProvider? = nil
        /// Whether the default collection is locked, when known.
        public var locked: Bool?
        /// The default collection's label ("Login"); nil when there is none
        /// (or it was not asked).
        public var collection: String?
        /// False when there is no session bus at all, as on a server.
        public var sessionBusConfigured = true
    }

    /// The session bus as wait lines name it.
    let bus: String
    /// What a lookup noticed (copies of one credential in two collections), said once each.
    private let noticed = Locked<[String]>([])
    public var warnings: [String] { noticed.withLock { $0 } }

    /// The head start this run's plan began (`Plan.startHeadStart`): the first call waits for it.
    let headStart: SecretServiceHeadStart?
    /// Where items were last found: the agent's, handed to each store it
    /// opens; nil in a command, which looks up once.
    let itemPaths: ItemPathCache?
    /// The agent's decoded records (nil in a command).
    let decoded: DecodedRecords?

    init(
        timeout: Double, unlock: UnlockPolicy, bus: String, headStart: SecretServiceHeadStart? = nil,
        itemPaths: ItemPathCache? = nil, decoded: DecodedRecords? = nil
    ) {
        self.headStart = headStart
        self.itemPaths = itemPaths
        self.decoded = decoded
        self.timeout = timeout
        self.unlock = unlock
        self.bus = bus
    }

    /// Why there is no session bus to ask, or nil when there is one. GLib would
    /// otherwise try to autolaunch a bus (dbus-launch, X11).
    public static func missingBus(_ settings: Settings) -> String? {
        if settings.sessionBus != nil { return nil }
        return access(settings.runtimeBus, F_OK) == 0
            ? nil : "no D-Bus session bus: \(EnvironmentVariable.dbusSessionBusAddress.name) is not set"
    }

    /// Probes the session bus. `detailed` also asks who provides the service and
    /// whether the default collection is locked (for `tokenvault backend`).
    public static func probe(_ settings: Settings, timeout: Double, detailed: Bool) -> Status {
        if let missing = missingBus(settings) {
            return Status(available: false, detail: missing, sessionBusConfigured: false)
        }
        let bus = settings.sessionBusShown
        let answer = withDeadline(
            timeout,
            waiting: {
                "waiting for the Secret Service: \(WaitLine.left(timeout, $0)) of \(timeout.shortText) s (bus \(bus))"
            }
        ) { () -> Status in
            var message: UnsafeMutablePointer<CChar>?
            guard tv_service_open(&message) != 0 else {
                return Status(available: false, detail: describe(takeMessage(&message)))
            }
            guard detailed else { return Status(available: true, detail: "") }
            var label: UnsafeMutablePointer<CChar>?
            var lockedState = tv_default_collection_state(&label)
            // What a command would find: a collection that unlocks without asking anyone is not locked.
            if lockedState == 1, tv_unlock_quietly() == 1 { lockedState = 0 }
            let collection = label.map { _ in takeMessage(&label) }
            let provider = SecretServiceProvider.answering(timeout: timeout)
            return Status(
                available: true, detail: provider?.program ?? "a Secret Service", provider: provider,
                locked: lockedState < 0 ? nil : lockedState == 1, collection: collection)
        }
        return answer
            ?? Status(available: false, detail: "the session bus did not answer within \(timeout.shortText) s")
    }

    /// A session bus that answers, where no program owns org.freedesktop.secrets:
    /// the keyring quit, or was never started (docs/config.md, "A provider that quit").
    public static let notRunning = "no Secret Service (org.freedesktop.secrets) on the session bus"

    private static func describe(_ glibMessage: String) -> String {
        if tv_secret_library_available() == 0 {
            return "libsecret cannot be loaded (\(glibMessage)); install it (Debian: apt-get install libsecret-1-0)"
        }
        if glibMessage.contains("not provided by any .service files") || glibMessage.contains("ServiceUnknown")
            || glibMessage.contains("NameHasNoOwner")
        {
            return notRunning
        }
        return glibMessage
    }

    /// One call, under the D-Bus deadline. A call the Secret Service answered
    /// with a failure is made once more when its owner on the bus changed
    /// meanwhile (a keyring restarted): libsecret's cached session is dropped
    /// first, so a long-lived process (the agent) follows the new daemon
    /// (docs/config.md). A session kwalletd5 refused, or whose key it derived
    /// otherwise than libsecret, is opened anew, up to three times, whoever
    /// owns the bus name (docs/config.md, "KWallet").
    /// A call that was not answered in time is not repeated.
    func call<T: Sendable>(
        _ what: String, _ body: @escaping @Sendable () -> Result<T, TokenVaultError>
    ) throws -> T {
        // A long-lived process asks first: KWallet started again numbers its
        // sessions afresh, so the old session's path can name another
        // client's session there, and its answer would be encrypted for that one.
        if let itemPaths, withDeadline(timeout, { tv_secret_reconnect(0) }) == 1 { itemPaths.forgetAll() }
        var answer = try answered(what, body)
        for attempt in 0..<3 {
            guard case .failure(let error) = answer, case .backendUnavailable = error else { break }
            let refused = Self.sessionFailures.contains { error.errorText.contains($0) }
            guard attempt == 0 || refused, withDeadline(timeout, { tv_secret_reconnect(refused ? 1 : 0) }) == 1
            else { break }
            itemPaths?.forgetAll()
            answer = try answered(what, body)
        }
        return try answer.get()
    }

    /// What a session with kwalletd5 fails with now and then (docs/config.md,
    /// "KWallet"): its refusal of a Diffie-Hellman public key libsecret sent
    /// one byte short, secrets under a key kwalletd5 derived otherwise, and
    /// its answer to a secret it could not decrypt in a write (or whose
    /// session it no longer knows). A new session has new keys.
    static let sessionFailures = [
        "Client public key size is invalid", TV_SECRET_UNDECODABLE, "Can't find session",
    ]

    /// The secret of another application's item with these attributes, as
    /// that application wrote it (gh's: `service` `gh:HOST`, `username`);
    /// nil when there is none. Read only: nothing here changes or deletes
    /// another application's item (docs/security.md, "Other applications' secrets").
    public func otherApplicationsSecret(_ attributes: [(name: String, value: String)], what: String) throws -> String? {
        try call("read \(what)") {
            var message: UnsafeMutablePointer<CChar>?
            let flat = attributes.flatMap { [strdup($0.name), strdup($0.value)] } + [nil]
            defer { flat.forEach { free($0) } }
            let secret = flat.map { UnsafePointer($0) }.withUnsafeBufferPointer {
                tv_lookup_other($0.baseAddress!, &message)
            }
            guard let secret else {
                return message == nil ? .success(nil) : SecretServiceStore.failure("read \(what)", &message)
            }
            defer { tv_password_free(secret) }
            return .success(String(cString: secret))
        }
    }

    /// The text of a message the shim allocated, freed.
    static func takeMessage(_ message: inout UnsafeMutablePointer<CChar>?) -> String {
        guard let m = message else { return "unknown error" }
        defer {
            tv_free(m)
            message = nil
        }
        return String(cString: m)
    }

    static func failure<T>(
        _ what: String, _ message: inout UnsafeMutablePointer<CChar>?
    ) -> Result<T, TokenVaultError> {
        .failure(.backendUnavailable("the Secret Service could not \(what): \(describe(takeMessage(&message)))"))
    }

    // MARK: CredentialStore

    public func load(_ id: CredentialID) throws -> Credential? {
        let seen = Copies()
        if let found = try lookup(id, seen) { return found }
        // Nothing found may mean "locked": libsecret's lookup answers nothing
        // when the unlock prompt cannot be shown. Only then is the lock asked
        // about; and an item the search saw locked is looked up again even
        // when the collection reads unlocked by then (KWallet closes a wallet
        // its last client left, and the next client's unlock may come
        // between the search and this question).
        guard try ensureUnlocked("look up \(id)") || seen.locked > 0 else { return nil }
        return try lookup(id, Copies())
    }

    /// A credential's copies (the item in each collection that holds one).
    /// `locked`: how many items the search saw in a locked collection.
    private final class Copies: @unchecked Sendable {
        var found: [(path: String, record: Data)] = []
        var locked: Int32 = 0
        /// The items found are not tokenvault's: it has none for the credential.
        var foreign: Int32 = 0
    }

    /// `body` given tokenvault's types (but `except`), NULL-terminated, for the
    /// C calls that match only its own items.
    static func withTypes<T>(
        except: CredentialType? = nil, _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T
    ) -> T {
        let types = CredentialType.allCases.filter { $0 != except }.map { strdup($0.rawValue) } + [nil]
        defer { types.forEach { free($0) } }
        return types.map { UnsafePointer($0) }.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    /// The credential stored under `id`; what the search saw goes into `found`.
    private func lookup(_ id: CredentialID, _ found: Copies) throws -> Credential? {
        let service = id.service.description, account = id.account, bus = self.bus
        let key = [bus, service, account].joined(separator: "\u{0}")
        found.foreign = 0
        let itemPaths = self.itemPaths
        let copies: [(path: String, record: Data)] = try call("look up \(id)") {
            var message: UnsafeMutablePointer<CChar>?
            if let known = itemPaths?.path(key) {
                // The item found last time, in one call, while it is still there and unlocked.
                var found: UnsafeMutablePointer<CChar>?
                if let secret = tv_lookup_item(service, account, known, &found, &message) {
                    defer { tv_password_free(secret) }
                    let path = found.map { _ in SecretServiceStore.takeMessage(&found) } ?? known
                    return .success([(path, Data(bytes: secret, count: strlen(secret)))])
                }
                if message != nil { return SecretServiceStore.failure("look up \(id)", &message) }
            }
            // Every unlocked copy of tokenvault's, whatever collection holds it (docs/config.md:
            // one item per credential); where it has none, another schema's (docs/security.md).
            let n = tv_lookup_copies(
                service, account, Unmanaged.passUnretained(found).toOpaque(),
                { context, path, secret in
                    Unmanaged<Copies>.fromOpaque(context!).takeUnretainedValue().found.append(
                        (String(cString: path!), Data(bytes: secret!, count: strlen(secret!))))
                }, &found.locked, &found.foreign, &message)
            if n < 0 { return SecretServiceStore.failure("look up \(id)", &message) }
            if !found.found.isEmpty { return .success(found.found) }
            // None unlocked: libsecret's lookup decides (it unlocks, or answers nothing); an item of
            // another schema only where tokenvault has none, locked or not.
            let foreignToo: Int32 = found.foreign == 1 ? 1 : 0
            guard let secret = tv_lookup(service, account, foreignToo, &found.foreign, &message) else {
                return message == nil ? .success([]) : SecretServiceStore.failure("look up \(id)", &message)
            }
            defer { tv_password_free(secret) }
            return .success([("", Data(bytes: secret, count: strlen(secret)))])
        }
        guard !copies.isEmpty else {
            itemPaths?.set(key, nil)
            return nil
        }
        // A copy that cannot be read is passed over where another can; alone, its error is the answer.
        let foreign = found.foreign == 1
        let read = copies.compactMap { c in
            (try? Credential.fromRecord(c.record, id: id, decoded: decoded)).map {
                record -> (path: String, credential: Credential) in
                var marked = record
                marked.foreignItem = foreign
                return (c.path, marked)
            }
        }
        guard !read.isEmpty else { return try Credential.fromRecord(copies[0].record, id: id, decoded: decoded) }
        // Copies in two collections (a second database, a moved default alias): the newest is
        // the credential; an older one holds a refresh token already used. Said once.
        let newest = read.max {
            ($0.credential.generation, $0.credential.updatedAt) < ($1.credential.generation, $1.credential.updatedAt)
        }!
        if read.count > 1 {
            let collections = Set(read.map { Posix.dirname($0.path) }).sorted().joined(separator: ", ")
            let note =
                foreign
                ? "\(read.count) items of other applications for \(id) are in the Secret Service (\(collections)); the newest, in \(Posix.dirname(newest.path)), is read, and none is changed"
                : "\(read.count) copies of \(id) are in the Secret Service (\(collections)); the newest, in \(Posix.dirname(newest.path)), is used, and the next write keeps only it"
            notice(note)
        }
        if let itemPaths, !newest.path.isEmpty, read.count == 1, !foreign {
            itemPaths.set(key, newest.path)
        }
        return newest.credential
    }

    public func save(_ credential: Credential) throws {
        do {
            try store(credential)
        } catch let error as TokenVaultError {
            // A locked collection refuses new items: unlock (or 77), then once more.
            guard try ensureUnlocked("store \(credential.id)") else { throw error }
            try store(credential)
        }
        // One item per credential: the copies other collections hold (where the default alias
        // pointed before, a second database) go, so that no read finds a stale refresh token.
        // Only tokenvault's own: another application's item is never changed (docs/security.md).
        let service = credential.service.description, account = credential.account
        _ = try? call("remove the other copies of \(credential.id)") { () -> Result<Int32, TokenVaultError> in
            var message: UnsafeMutablePointer<CChar>?
            let n = SecretServiceStore.withTypes { tv_prune_copies(service, account, $0, &message) }
            if message != nil { _ = SecretServiceStore.takeMessage(&message) }
            return .success(n)
        }
        if let beside = foreignNote(credential.id) {
            notice(
                "\(beside); tokenvault wrote its own item beside it, which it reads first, and left that one as it was")
        }
    }

    private func notice(_ note: String) {
        noticed.withLock { if !$0.contains(note) { $0.append(note) } }
    }

    /// What the Secret Service holds for `id` that is not tokenvault's (another
    /// schema, as another application or `secret-tool` stores), said for a
    /// message; nil when there is none, or when it cannot be asked.
    public func foreignNote(_ id: CredentialID) -> String? {
        let service = id.service.description, account = id.account
        let found = try? call("look for other applications' items for \(id)") {
            () -> Result<(Int32, String), TokenVaultError> in
            var message: UnsafeMutablePointer<CChar>?
            var schema: UnsafeMutablePointer<CChar>?
            let n = SecretServiceStore.withTypes { tv_foreign_items(service, account, $0, &schema, &message) }
            if n < 0 { return SecretServiceStore.failure("look for other applications' items for \(id)", &message) }
            return .success((n, schema.map { _ in SecretServiceStore.takeMessage(&schema) } ?? ""))
        }
        guard let (count, schema) = found, count > 0 else { return nil }
        let whose =
            schema.isEmpty ? "with no schema (one stored by hand?)" : "of schema \(OutsideText.line(schema, limit: 80))"
        let items = count == 1 ? "an item" : "\(count) items"
        return "the Secret Service holds \(items) of another application for \(id), \(whose)"
    }

    private func store(_ credential: Credential) throws {
        let service = credential.service.description, account = credential.account
        let type = credential.type.rawValue
        let label = "tokenvault: \(service) (\(account))"
        var json = Array(credential.recordJSON())
        json.append(0)
        let secret = SecureBytes(json)
        Sodium.wipe(&json)
        try call("store \(credential.id)") { () -> Result<Void, TokenVaultError> in
            // Only tokenvault's own items of the other types go (docs/security.md).
            var message: UnsafeMutablePointer<CChar>?
            let ok = SecretServiceStore.withTypes(except: credential.type) { otherTypes in
                secret.withUnsafeBytes { s in
                    tv_store(
                        service, account, type, otherTypes, label,
                        s.baseAddress!.assumingMemoryBound(to: CChar.self), &message)
                }
            }
            return ok == 1 ? .success(()) : SecretServiceStore.failure("store \(credential.id)", &message)
        }
    }

    @discardableResult
    public func delete(_ id: CredentialID) throws -> Bool {
        try ensureUnlocked("delete \(id)")
        let service = id.service.description, account = id.account
        return try call("delete \(id)") {
            var message: UnsafeMutablePointer<CChar>?
            // tokenvault's items of every type; never another schema's (`foreignNote` says so).
            let removed = SecretServiceStore.withTypes { tv_clear(service, account, $0, &message) }
            return removed < 0 ? SecretServiceStore.failure("delete \(id)", &message) : .success(removed == 1)
        }
    }
}

extension CredentialID {
    /// How to remove another application's item under this name, which
    /// tokenvault never deletes (docs/security.md).
    public var foreignItemRemoval: String {
        "remove it with that application, or: secret-tool clear service \(ShellWord.word(service.description)) account \(ShellWord.word(account))"
    }
}
