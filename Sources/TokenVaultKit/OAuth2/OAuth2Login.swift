import Dispatch
import FoundationEssentials
import Glibc

/// Logging in to an OAuth 2.0 provider (docs/providers.md): authorization code with PKCE
/// through a loopback redirect or a pasted URL, and client credentials.
public struct OAuth2Login {
    public var provider: OAuth2Provider
    public var transport: HTTPTransport
    public var clock: Clock
    /// Messages for the user (stderr).
    public var notify: (String) -> Void
    /// The key the tokens are bound to (DPoP, docs/security.md): every token
    /// request carries a proof of it, and the authorization request its thumbprint.
    public var dpop: DPoPKey?
    /// The servers' latest DPoP nonces: the run's.
    public var nonces = DPoPNonces()

    public init(provider: OAuth2Provider, transport: HTTPTransport, clock: Clock, notify: @escaping (String) -> Void) {
        self.provider = provider
        self.transport = transport
        self.clock = clock
        self.notify = notify
    }

    /// The URL the user opens to approve.
    public func authorizationURL(
        redirectURI: String, state: String, pkce: PKCE?, scopes: [String], nonce: String? = nil
    ) throws -> String {
        guard let base = provider.authorizeURL else {
            throw TokenVaultError.config(
                "provider \(provider.name) has no authorize_url",
                hint:
                    "set authorize_url in [providers.\(Config.tableKey(provider.name))], or use grant = \"client_credentials\""
            )
        }
        var fields = [
            ("response_type", "code"), ("client_id", provider.clientID), ("redirect_uri", redirectURI),
            ("state", state),
        ]
        if !scopes.isEmpty { fields.append(("scope", scopes.joined(separator: " "))) }
        if let pkce { fields += [("code_challenge", pkce.challenge), ("code_challenge_method", "S256")] }
        if let nonce { fields.append(("nonce", nonce)) }
        if let dpop { fields.append(("dpop_jkt", dpop.thumbprint)) }
        fields += provider.resourceFields
        fields += provider.authParams.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        if let par = provider.parURL {
            fields = [("client_id", provider.clientID), ("request_uri", try pushed(fields, to: par))]
        }
        return base + (base.contains("?") ? "&" : "?") + FormEncoding.encode(fields)
    }

    /// The scopes to ask for: the provider's, plus `--scope` ones.
    public func scopes(adding extra: [String]) -> [String] {
        var all = provider.scopes
        for s in extra where !all.contains(s) { all.append(s) }
        return all
    }

    /// Loopback login: listen, let `openBrowser` show the URL, take one redirect, exchange the code.
    public func loopback(
        id: CredentialID, scopes: [String], port: Int?, timeout: Double,
        openBrowser: (String) -> Void
    ) throws -> Credential {
        let fixed = provider.redirectURI.flatMap { URLComponents(string: $0) }
        let listener = try LoopbackListener(port: port ?? fixed?.port ?? 0)
        defer { listener.stop() }
        let path = fixed?.path.isEmpty == false ? fixed!.path : "/callback"
        let redirectURI = "http://127.0.0.1:\(listener.port)\(path)"
        let state = PKCE.state()
        let pkce = provider.pkce ? PKCE() : nil
        let nonce = Self.nonce(for: scopes)
        let url = try authorizationURL(redirectURI: redirectURI, state: state, pkce: pkce, scopes: scopes, nonce: nonce)
        try checkReachable()
        notify("open this URL to log in to \(provider.name):\n\n    \(url)\n")
        openBrowser(url)
        notify("waiting for the browser to come back to \(redirectURI) (up to \(Int(timeout)) s; Ctrl-C to stop)…")
        // A provider that does not know the client shows its own error page and never comes
        // back: after a while the line says what to check (docs/providers.md, "Login lifecycle").
        let check =
            "nothing came back yet: if the page shows an error, check client_id (and redirect_uri) of \(clientPlace)"
        let params = try WaitLine.during(
            { "waiting for the browser login: \(WaitLine.left(timeout, $0)) (Ctrl-C to stop)" },
            note: (min(Self.quietSeconds, max(1, Int(timeout) / 3)), check)
        ) {
            try listener.waitForRedirect(path: path, timeout: timeout, belongs: { $0["state"] == state }) { params in
                let ok = params["error"] == nil && params["state"] == state
                return """
                    <!doctype html><meta charset="utf-8"><title>tokenvault</title>
                    <p>\(ok ? "You are logged in to \(Self.html(provider.name)). You may close this window." : "Login failed: \(Self.html(params["error"] ?? "unexpected answer")). You may close this window and see the terminal.")</p>
                    """
            }
        }
        let code = try checkedCode(params, state: state, id: id)
        return try exchange(code: code, redirectURI: redirectURI, pkce: pkce, id: id, nonce: nonce)
    }

    /// Seconds of waiting for the browser before a line says what to check
    /// (a third of a shorter wait).
    static let quietSeconds = 20

    /// Where this provider's client is set, for hints: its table and file.
    var clientPlace: String {
        let table = "[providers.\(Config.tableKey(provider.clientTable ?? provider.name))]"
        return provider.configPath.map { "\(table) in \($0)" } ?? "\(table) in the config"
    }

    /// A fresh nonce for a login that asks for `openid` (OpenID Connect Core
    /// 3.1.2.1: some providers refuse without one), checked in the ID token.
    static func nonce(for scopes: [String]) -> String? { scopes.contains("openid") ? PKCE.state() : nil }

    /// Paste mode (`--no-browser`): the user opens the URL anywhere and pastes
    /// back the URL the browser was sent to (or the bare code).
    public func paste(id: CredentialID, scopes: [String], readLine: () -> String?) throws -> Credential {
        let redirectURI = provider.redirectURI ?? "http://127.0.0.1:\(Self.pastePort)/callback"
        let state = PKCE.state()
        let pkce = provider.pkce ? PKCE() : nil
        let nonce = Self.nonce(for: scopes)
        let url = try authorizationURL(redirectURI: redirectURI, state: state, pkce: pkce, scopes: scopes, nonce: nonce)
        notify("open this URL in a browser on any machine and log in to \(provider.name):\n\n    \(url)\n")
        notify("the browser then fails to load \(redirectURI)…; paste that whole URL (or just the code) here:")
        guard let line = readLine()?.trimmedWhitespace(), !line.isEmpty else {
            throw TokenVaultError.badInput("nothing was pasted; nothing was stored")
        }
        if line.contains("://") || line.hasPrefix("?") || line.contains("code=") || line.contains("error=") {
            let query = line.split(separator: "?", maxSplits: 1).last.map(String.init) ?? ""
            let params = Dictionary(
                FormEncoding.decode(query.split(separator: "#").first.map(String.init) ?? "") ?? [],
                uniquingKeysWith: { first, _ in first })
            let code = try checkedCode(params, state: state, id: id)
            return try exchange(code: code, redirectURI: redirectURI, pkce: pkce, id: id, nonce: nonce)
        }
        guard !line.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw TokenVaultError.badInput("that is neither the redirected URL nor a code")
        }
        return try exchange(code: line, redirectURI: redirectURI, pkce: pkce, id: id, nonce: nonce)
    }

    /// The device flow (RFC 8628): shows where to go and the code to type, then
    /// polls at the given interval, 5 s slower on each `slow_down`, until the user
    /// approves, denies (`access_denied`, exit 4) or the code expires (`expired_token`, 4).
    /// `show` gets the URL to draw as a QR code: `verification_uri_complete`
    /// (the code inside) when the provider sent one, else `verification_uri`.
    public func device(
        id: CredentialID, scopes: [String], timeout: Double, show: (String) -> Void = { _ in },
        sleep: (Double) -> Void
    ) throws -> Credential {
        guard let url = provider.deviceAuthorizationURL else {
            throw TokenVaultError.config(
                "provider \(provider.name) has no device_authorization_url",
                hint:
                    "set device_authorization_url in [providers.\(Config.tableKey(provider.name))], or log in with the browser"
            )
        }
        let client = try provider.clientCredentials(now: clock.now)
        var fields = client.fields
        if !scopes.isEmpty { fields.append(("scope", scopes.joined(separator: " "))) }
        fields += provider.resourceFields
        if client.fields.isEmpty { fields.insert(("client_id", provider.clientID), at: 0) }
        let host = (try? ServiceKey(parsing: url).description) ?? url
        let start = try TokenResponse.successFields(
            try transport.send(.form(url, fields, headers: client.headers)),
            host: host, provider: provider.name, sentSecrets: client.secret.map { [$0] } ?? [],
            configPath: provider.configPath,
            clientTable: provider.clientTable)
        guard let deviceCode = start["device_code"]?.string, let userCode = start["user_code"]?.string,
            let verification = (start["verification_uri"] ?? start["verification_url"])?.string
        else {
            throw TokenVaultError.badInput(
                "\(host) answered the device authorization without device_code, user_code or verification_uri")
        }
        // Numbers from the provider are checked before use: an interval of 5000 s
        // or -1 must be a clear error, not a crash.
        func number(_ key: String, default value: Int64, _ range: ClosedRange<Int64>) throws -> Double {
            guard let v = start[key], v != .null else { return Double(value) }
            guard let n = TokenInput.seconds(v, in: range) else {
                throw TokenVaultError.badInput(
                    "\(host) sent \(key) \(OutsideText.line(v.text)), not a number of seconds from \(range.lowerBound) to \(range.upperBound)"
                )
            }
            return Double(n)
        }
        let interval = max(try number("interval", default: 5, 0...600), 1)
        let lifetime = try number("expires_in", default: 900, 1...86400)
        // What the provider says is shown on a terminal: only a web URL, and no control characters.
        let shownURL = try Self.displayableURL(verification, host: host)
        notify("on any device, open \(shownURL) and enter the code: \(OutsideText.line(userCode))")
        var drawn = shownURL
        if let complete = start["verification_uri_complete"]?.string,
            let shown = try? Self.displayableURL(complete, host: host)
        {
            notify("(or open \(shown))")
            drawn = shown
        }
        show(drawn)
        notify("waiting for approval (up to \(Int(min(lifetime, timeout))) s; Ctrl-C to stop)…")
        return try poll(
            deviceCode: deviceCode, client: client, interval: interval,
            deadline: Date().addingTimeInterval(min(lifetime, timeout)),
            reminder: "enter \(OutsideText.line(userCode)) at \(shownURL)", id: id, sleep: sleep)
    }

    /// The device flow's polling (RFC 8628 §3.4, §3.5): every `interval`
    /// seconds, 5 s slower on each `slow_down`, until an answer or `deadline`.
    private func poll(
        deviceCode: String, client: OAuth2Provider.ClientAuthentication, interval start: Double, deadline: Date,
        reminder: String, id: CredentialID, sleep: (Double) -> Void
    ) throws -> Credential {
        var interval = start
        let tokenHost = provider.tokenHost
        let sent = [deviceCode] + (client.secret.map { [$0] } ?? [])
        // One line for the whole polling, so a 1 s interval shows it too.
        return try WaitLine.during({ _ in
            "waiting for approval: \(max(0, Int(deadline.timeIntervalSinceNow))) s left; \(reminder) (Ctrl-C to stop)"
        }) {
            while true {
                sleep(interval)
                guard Date() < deadline else {
                    throw TokenVaultError.loginRequired(
                        "the device code expired before it was approved; nothing was stored",
                        hint: "run: \(loginCommand(id)) --device")
                }
                let poll =
                    [("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("device_code", deviceCode)]
                    + provider.resourceFields
                let response = try send(.form(provider.tokenURL, poll + client.fields, headers: client.headers))
                if let fields = TokenResponse.fields(response.body), let code = fields["error"]?.string {
                    switch code {
                    case "authorization_pending": continue
                    case "slow_down":
                        interval += 5
                        continue
                    default:
                        throw TokenResponse.error(
                            code: code, description: fields["error_description"]?.text, provider: provider.name,
                            sentSecrets: sent, configPath: provider.configPath, clientTable: provider.clientTable,
                            login: ("\(loginCommand(id)) --device", true))
                    }
                }
                let c = try TokenResponse.credential(
                    from: response, id: id, provider: provider.name, host: tokenHost, now: clock.now,
                    sentSecrets: sent)
                return provider.issued(boundToKey(c), previous: nil, now: clock.now)
            }
        }
    }

    /// A verification URL fit for a terminal: an http(s) URL written out again
    /// by `OutsideText.url` (no escape, bidi override or line separator stays
    /// as it is), else refused.
    static func displayableURL(_ url: String, host: String) throws -> String {
        guard let shown = OutsideText.url(url) else {
            throw TokenVaultError.badInput(
                "\(host) sent a verification_uri that is not a plain http(s) URL: \(OutsideText.line(url))")
        }
        return shown
    }

    /// A port nothing listens on, for the paste-mode redirect URI.
    static let pastePort = 1

    /// The code of a redirect, after checking who sent it (RFC 9207 `iss`,
    /// also on an error), `state` and any `error`.
    func checkedCode(_ params: [String: String], state: String, id: CredentialID) throws -> String {
        // RFC 9207: a response that names its issuer names this one (mix-up defence).
        if let iss = params["iss"], let expected = provider.issuer, iss != expected {
            throw TokenVaultError.badInput(
                "mix-up: the redirect comes from another authorization server (iss \(OutsideText.line(iss, limit: 200)), not \(expected)); nothing was stored"
            )
        }
        if params["iss"] == nil, provider.issParameterRequired, let expected = provider.issuer {
            throw TokenVaultError.badInput(
                "possible mix-up: the redirect does not name its authorization server (no iss), though \(expected) says it always does; nothing was stored"
            )
        }
        if let error = params["error"] {
            throw TokenResponse.error(
                code: error, description: params["error_description"], provider: provider.name,
                login: (loginCommand(id), true))
        }
        guard params["state"] == state else {
            throw TokenVaultError.badInput(
                "the redirect's state does not match this login (a stale or forged redirect); nothing was stored")
        }
        guard let code = params["code"], !code.isEmpty else {
            throw TokenVaultError.badInput("the redirect carries no code; nothing was stored")
        }
        return code
    }

    /// Exchanges an authorization code (RFC 6749 §4.1.3, RFC 7636 §4.5).
    public func exchange(
        code: String, redirectURI: String, pkce: PKCE?, id: CredentialID, nonce: String? = nil
    ) throws -> Credential {
        var fields = [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI)]
        if let pkce { fields.append(("code_verifier", pkce.verifier)) }
        fields += provider.resourceFields
        let c = try tokenRequest(fields, id: id, sent: [code] + (pkce.map { [$0.verifier] } ?? []))
        // OpenID Connect Core 3.1.3.7: the ID token carries the nonce this login sent,
        // else it was issued for another authentication (replayed, injected).
        if let nonce, let idToken = c.extra["id_token"]?.string, JWT.claims(of: idToken)?["nonce"]?.string != nonce {
            throw TokenVaultError.badInput(
                "the ID token \(OutsideText.line(provider.name, limit: 80)) sent does not carry the nonce this login sent (an ID token of another login); nothing was stored"
            )
        }
        return c
    }

    func tokenRequest(
        _ fields: [(String, String)], id: CredentialID, sent: [String],
        client given: OAuth2Provider.ClientAuthentication? = nil
    ) throws -> Credential {
        let client = try given ?? provider.clientCredentials(now: clock.now)
        let request = HTTPRequest.form(provider.tokenURL, fields + client.fields, headers: client.headers)
        var login = self
        var response = try send(request)
        if dpop == nil, DPoPNonces.refusesWithoutProof(response) {
            // A server that binds every token (docs/security.md, "Sender-constrained tokens").
            login.dpop = try DPoPKey.generate(algorithm: DPoPKey.algorithm(for: provider.dpopAlgorithms))
            notify("\(provider.name) binds its tokens to a key (DPoP): this credential gets a key of its own")
            response = try login.send(request)
        }
        let host = provider.tokenHost
        let c = try TokenResponse.credential(
            from: response, id: id, provider: provider.name, host: host, now: clock.now,
            sentSecrets: sent + (client.secret.map { [$0] } ?? []), configPath: provider.configPath,
            clientTable: provider.clientTable)
        return provider.issued(login.boundToKey(c), previous: nil, now: clock.now)
    }

    /// The start of the notice for a userinfo endpoint that wants another scope
    /// (said once per provider by the command, docs/providers.md).
    public static let userinfoNotShown = "who logged in is not shown"

    /// Adds who logged in (screen_name, name, login, email) from `userinfo_url`;
    /// best effort: a failure only says so.
    public func withUserInfo(_ c: Credential) -> Credential {
        // A client's own grant has no user to ask about.
        guard let base = provider.userinfoURL, !provider.grant.fetchesAgain else { return c }
        var url = base
        var headers = [PresentedToken(c.accessToken).header, "Accept: application/json"]
        if base.contains("api.weibo.com/2/users/show.json") {
            // Weibo takes the token and uid as query parameters.
            url += "?" + FormEncoding.encode([("access_token", c.accessToken), ("uid", c.extra["uid"]?.text ?? "")])
            headers = ["Accept: application/json"]
        }
        do {
            let request = HTTPRequest(method: "GET", url: url, headers: headers)
            let r: HTTPResponse
            if let pem = c.dpopKey, let dpop = try? DPoPKey(pem: SecureBytes(Array(pem.utf8))) {
                var bound = request
                bound.headers[0] = PresentedToken(c.accessToken, key: dpop).header
                r = try dpop.send(bound, accessToken: c.accessToken, via: transport, now: clock.now, nonces: nonces)
            } else {
                r = try transport.send(request)
            }
            if r.status == 401 || r.status == 403 {
                // Usually a scope (openid, profile, read:user) this login did not ask for: nothing is wrong.
                notify(
                    Self.userinfoNotShown
                        + " (userinfo_url answered HTTP \(r.status): it needs a scope this login did not ask for; add it with --scope to see who)"
                )
                return c
            }
            guard (200..<300).contains(r.status), let fields = TokenResponse.fields(r.body) else {
                notify("could not read who logged in (HTTP \(r.status) from userinfo_url)")
                return c
            }
            var out = c
            for key in Credential.displayKeys + ["avatar_large"] {
                if let v = fields[key]?.string, !v.isEmpty { out.extra[key] = .string(OutsideText.line(v)) }
            }
            return out
        } catch {
            notify("could not read who logged in (\(error.errorText))")
            return c
        }
    }

    static func html(_ s: String) -> String {
        s.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
    }
}
