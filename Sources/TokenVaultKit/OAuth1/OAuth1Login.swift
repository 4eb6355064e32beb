import Dispatch
import FoundationEssentials
import Glibc

/// OAuth 1.0a login (RFC 5849 §2): temporary credentials, the user's approval
/// (loopback callback, or `oob` with a PIN), then token credentials.
public struct OAuth1Login {
    public var provider: OAuth1Provider
    public var transport: HTTPTransport
    public var clock: Clock
    public var notify: (String) -> Void

    public init(provider: OAuth1Provider, transport: HTTPTransport, clock: Clock, notify: @escaping (String) -> Void) {
        self.provider = provider
        self.transport = transport
        self.clock = clock
        self.notify = notify
    }

    /// Logs in through the browser and a loopback callback.
    public func loopback(
        id: CredentialID, port: Int?, timeout: Double, openBrowser: (String) -> Void
    ) throws -> Credential {
        let listener = try LoopbackListener(port: port ?? 0)
        defer { listener.stop() }
        let callback = "http://127.0.0.1:\(listener.port)/callback"
        let (token, secret) = try requestToken(callback: callback)
        let url = authorizeURL(token: token)
        notify("open this URL to log in to \(provider.name):\n\n    \(url)\n")
        openBrowser(url)
        notify("waiting for the browser to come back to \(callback) (up to \(Int(timeout)) s; Ctrl-C to stop)…")
        let params = try listener.waitForRedirect(
            timeout: timeout, belongs: { $0["oauth_token"] == token || $0["denied"] == token }
        ) { params in
            let ok = params["oauth_token"] == token && params["oauth_verifier"] != nil
            return """
                <!doctype html><meta charset="utf-8"><title>tokenvault</title>
                <p>\(ok ? "You are logged in to \(OAuth2Login.html(provider.name)). You may close this window." : "Login failed. You may close this window and see the terminal.")</p>
                """
        }
        if params["denied"] != nil {
            throw TokenVaultError.loginRequired(
                "the login to \(provider.name) was denied; nothing was stored",
                hint: "run: tokenvault login \(ShellWord.word(provider.name))")
        }
        guard params["oauth_token"] == token else {
            throw TokenVaultError.badInput(
                "the callback's oauth_token does not match this login (a stale or forged callback); nothing was stored")
        }
        guard let verifier = params["oauth_verifier"], !verifier.isEmpty else {
            throw TokenVaultError.badInput("the callback carries no oauth_verifier; nothing was stored")
        }
        return try accessToken(id: id, token: token, secret: secret, verifier: verifier)
    }

    /// `oob`: the provider shows a PIN, which the user types.
    public func pin(id: CredentialID, readLine: () -> String?) throws -> Credential {
        let (token, secret) = try requestToken(callback: "oob")
        notify(
            "open this URL in a browser on any machine and log in to \(provider.name):\n\n    \(authorizeURL(token: token))\n"
        )
        notify("then type the PIN it shows:")
        guard let pin = readLine()?.trimmedWhitespace(), !pin.isEmpty,
            !pin.contains(where: { $0.isWhitespace })
        else {
            throw TokenVaultError.badInput("no PIN was typed; nothing was stored")
        }
        return try accessToken(id: id, token: token, secret: secret, verifier: pin)
    }

    func authorizeURL(token: String) -> String {
        var fields = [("oauth_token", token)]
        if let perms = provider.perms { fields.append(("perms", perms)) }
        return provider.authorizeURL + (provider.authorizeURL.contains("?") ? "&" : "?") + FormEncoding.encode(fields)
    }

    /// Temporary credentials (§2.1).
    func requestToken(callback: String) throws -> (String, String) {
        let signer = try provider.signer()
        let header = try signer.authorization(
            method: "POST", url: provider.requestTokenURL, extra: [("oauth_callback", callback)],
            nonce: OAuth1Signer.freshNonce(), timestamp: clock.now)
        let fields = try exchange(provider.requestTokenURL, header: header)
        guard let token = fields["oauth_token"]?.string, let secret = fields["oauth_token_secret"]?.string else {
            throw TokenVaultError.badInput(
                "\(host(provider.requestTokenURL)) answered the request-token call without oauth_token and oauth_token_secret"
            )
        }
        return (token, secret)
    }

    /// Token credentials (§2.3), kept with every extra field (user_id, screen_name, user_nsid, …).
    func accessToken(id: CredentialID, token: String, secret: String, verifier: String) throws -> Credential {
        let signer = try provider.signer(token: token, tokenSecret: secret)
        let header = try signer.authorization(
            method: "POST", url: provider.accessTokenURL, extra: [("oauth_verifier", verifier)],
            nonce: OAuth1Signer.freshNonce(), timestamp: clock.now)
        var fields = try exchange(provider.accessTokenURL, header: header)
        fields.removeValue(forKey: "oauth_callback_confirmed")
        var c = try TokenInput.credential(from: fields, id: id, now: clock.now)
        c.provider = provider.name
        return c
    }

    func exchange(_ url: String, header: String) throws -> [String: JSONValue] {
        let response = try transport.send(
            HTTPRequest(
                method: "POST", url: url,
                headers: ["Authorization: " + header, "Content-Type: application/x-www-form-urlencoded"]))
        let fields = TokenResponse.fields(response.body)
        if (200..<300).contains(response.status), let fields, fields["oauth_problem"] == nil, fields["error"] == nil {
            return fields
        }
        throw Self.error(status: response.status, fields: fields, host: host(url), provider: provider.name)
    }

    /// `oauth_problem=…` (the OAuth Problem Reporting extension Twitter and Flickr use)
    /// or an `error=` code, to the documented exit codes.
    static func error(status: Int, fields: [String: JSONValue]?, host: String, provider: String) -> TokenVaultError {
        if let problem = fields?["oauth_problem"]?.string ?? fields?["error"]?.string {
            let advice = fields?["oauth_problem_advice"]?.string ?? fields?["error_description"]?.string
            switch problem {
            case "permission_denied", "token_rejected", "token_revoked", "token_expired", "access_denied":
                return .loginRequired(
                    "\(host) answered \(OutsideText.line(problem))\(advice.map { ": \(OutsideText.line($0))" } ?? "")",
                    hint: "run: tokenvault login \(ShellWord.word(provider))")
            default:
                return .providerRefused(
                    code: OutsideText.line(problem), description: advice.map { OutsideText.line($0) })
            }
        }
        if status >= 500 || status == 429 { return .temporary("\(host) answered HTTP \(status)") }
        if status == 401 {
            return .providerRefused(code: "HTTP 401", description: "\(host) refused the signed request")
        }
        return .badInput("\(host) answered HTTP \(status) with no OAuth answer")
    }

    func host(_ url: String) -> String { (try? ServiceKey(parsing: url).description) ?? url }
}
