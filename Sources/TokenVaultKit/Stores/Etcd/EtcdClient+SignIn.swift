import Dispatch
import FoundationEssentials
import Glibc

/// Signing in to etcd: once per host (docs/fleet.md, "One sign-in per host").
extension EtcdClient {
    /// Signs in to `endpoint` when needed; a passing failure is returned (the
    /// next endpoint is tried), anything else thrown.
    func signInPassing(_ endpoint: String, seconds: Double) throws -> String? {
        do {
            try authenticateIfNeeded(endpoint, seconds: seconds)
            return nil
        } catch TokenVaultError.temporary(let why, _) {
            return why
        }
    }

    /// The auth token this host's processes share (docs/fleet.md, "One
    /// sign-in per host"): kept in the user's kernel keyring for 240 s, less
    /// than etcd's default `--auth-token-ttl` of 300 s, so a kept token is
    /// rarely one etcd has already dropped; one it refuses all the same is
    /// replaced by the first process that meets the refusal, under a lock the
    /// others wait on, and they take its new token.
    static let authTokenSeconds = 240

    private var authTokenName: String {
        // Per runtime directory too: one per login session of a host, and tests' simulated hosts apart.
        let who = (settings.endpoints.sorted() + [settings.username ?? "", settings.runtimeDirectory]).joined(
            separator: "\n")
        return "etcd-auth:" + Hex.encode(Sodium.hash(Array(who.utf8), bytes: 16))
    }

    private func keptAuthToken() -> String? {
        settings.authTokenCache.load(name: authTokenName).map { bytes in
            bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        }.flatMap { Self.isUsableToken($0) ? $0 : nil }
    }

    /// A token goes into a header line of every later request: only visible
    /// ASCII, 1 to 4096 bytes (etcd's simple tokens are 16 letters, its JWTs
    /// a few hundred), is taken; anything else (a CR/LF that would add header
    /// lines) is a member's mistake, signed in from, never sent.
    static func isUsableToken(_ t: String) -> Bool {
        (1...4096).contains(t.utf8.count) && t.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }

    /// Signs in when this process has no token: with the token another process
    /// of this host keeps, else by one sign-in (bcrypt on every member, so
    /// not one per process), under a host lock. `refused`: the token etcd just
    /// refused, never taken again.
    func authenticateIfNeeded(_ endpoint: String, seconds: Double, refused: String? = nil) throws {
        if state.withLock({ $0.authenticated }) { return }
        guard settings.username != nil else { return }
        func adopt(_ t: String) {
            state.withLock { ($0.token, $0.authenticated) = (t, true) }
        }
        if let kept = keptAuthToken(), kept != refused { return adopt(kept) }
        guard !settings.runtimeDirectory.isEmpty, (try? PrivateDirectory.ensure(settings.runtimeDirectory)) != nil
        else { return try signIn(endpoint, seconds: seconds) }
        try FileLock.holding(settings.runtimeDirectory + "/etcd-signin.lock") {
            if let kept = keptAuthToken(), kept != refused { return adopt(kept) }
            try signIn(endpoint, seconds: seconds)
        }
    }

    private func signIn(_ endpoint: String, seconds: Double) throws {
        guard let user = settings.username else { return }
        guard let source = settings.password else {
            throw TokenVaultError.config("[etcd] sets username \(user) but neither password_file nor password_command")
        }
        let password = try source.read(what: "the etcd password")
        let body = Data(JSONValue.object(["name": .string(user), "password": .string(password)]).text.utf8)
        let response: HTTPResponse
        do {
            response = try CurlTransport.exchange(
                HTTPRequest(
                    method: "POST", url: endpoint + "/v3/auth/authenticate",
                    headers: ["Content-Type: application/json"], body: body),
                timeoutMilliseconds: Int(seconds * 1000), connectMilliseconds: min(Int(seconds * 1000), 1000),
                maxBody: 1 << 16, tls: settings.tls)
        } catch let failure as HTTPFailure {
            try Self.unusable(failure, endpoint: endpoint)
            throw failure.error(peer: "etcd at \(endpoint)", what: "etcd")
        }
        guard let v = JSONValue.parsed(response.body), case .object(let o) = v else {
            throw TokenVaultError.backendUnavailable("\(endpoint) is not an etcd v3 gateway (HTTP \(response.status))")
        }
        if let t = o["token"]?.string, !t.isEmpty {
            guard Self.isUsableToken(t) else {
                throw TokenVaultError.backendUnavailable(
                    "etcd at \(endpoint) answered the sign-in with a token that cannot go in a header (control characters, spaces or over 4096 bytes); refused"
                )
            }
            state.withLock { ($0.token, $0.authenticated) = (t, true) }
            settings.authTokenCache.store(
                name: authTokenName, key: SecureBytes(Array(t.utf8)), ttl: Self.authTokenSeconds)
            return
        }
        let message = OutsideText.line(o["message"]?.string ?? "HTTP \(response.status)")
        if message.contains("authentication is not enabled") {
            throw TokenVaultError.config(
                "etcd at \(endpoint) has authentication off, but [etcd] sets a username",
                hint: "remove username from [etcd], or enable auth on the cluster")
        }
        if response.status == 503 || GRPCCode(o["code"]?.int64).isRetryable {
            throw TokenVaultError.temporary("etcd at \(endpoint) cannot sign in now: \(message)")
        }
        throw TokenVaultError.permission(
            "etcd refused user \(user): \(message)", hint: "check etcd.password_file or etcd.password_command")
    }
}
