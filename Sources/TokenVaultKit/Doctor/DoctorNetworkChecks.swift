import Dispatch
import FoundationEssentials
import Glibc

/// `doctor --network`: what only the providers can say (docs/reference.md,
/// "Commands"): each one's clock, its authorization endpoint's answer to
/// the client id, and each configured client metadata document.
extension DoctorChecks {
    public func checkProviders(_ config: Config) {
        let proxies = ProxySettings(settings: settings)
        let transport = CurlTransport(timeout: config.httpTimeout, proxies: proxies)
        for (name, table) in config.providers.sorted(by: { $0.key < $1.key }) {
            guard let url = table.issuer.map({ Discovery.urls($0)[0] }) ?? table.token_url ?? table.access_token_url
            else { continue }
            // Which way it is reached: directly, or through which proxy (never its credentials).
            let proxy = try? proxies.proxy(for: url)
            let via = proxy.map { " through the proxy \($0.shown) (\($0.variable))" } ?? ""
            let started = DispatchTime.now()
            do {
                let r = try transport.send(HTTPRequest(method: "GET", url: url, headers: []))
                let ms = (DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000
                // Through a proxy, a 401 with a Basic challenge may be the proxy's own refusal
                // (a wrong password): this check cannot tell, and says so.
                if let proxy, r.status == 401, r.header("WWW-Authenticate")?.lowercased().hasPrefix("basic") == true {
                    add(
                        "provider \(name)", .failed,
                        "\(url) answered HTTP 401 with a Basic challenge\(via): that may be the proxy refusing its credentials, not \(name)",
                        fix: "check the user name and password in \(proxy.variable)")
                    continue
                }
                guard let at = r.dateSeconds else {
                    add(
                        "provider \(name)", .ok,
                        "\(url) answered HTTP \(r.status) in \(ms) ms\(via) (no Date header to compare clocks)")
                    continue
                }
                let skew = at - SystemClock().now
                if abs(skew) > 60 {
                    add(
                        "provider \(name)", .failed, "\(url)'s clock differs from this one by \(skew) s",
                        fix: "set the clock (timedatectl set-ntp true)")
                } else {
                    add(
                        "provider \(name)", .ok,
                        "\(url) answered HTTP \(r.status) in \(ms) ms\(via); clocks agree within \(abs(skew)) s")
                }
            } catch {
                add(
                    "provider \(name)", .failed, error.errorText,
                    fix: "check the network and the provider's URLs in \(settings.configPath)")
                continue
            }
            checkAuthorization(name, config: config, transport: transport)
        }
    }

    /// What the authorization endpoint answers to the client id: a provider
    /// that does not know it shows an error page, and a browser login would
    /// wait for a redirect that never comes. A page or a redirect without an
    /// error is a client it knows; an error names the setting to check.
    func checkAuthorization(_ name: String, config: Config, transport: HTTPTransport) {
        guard let table = ProviderDirectory(config: config).table(name), (table.type ?? "oauth2") == "oauth2",
            (table.grant ?? "authorization_code") == "authorization_code", let authorize = table.authorize_url,
            let clientID = table.client_id, !clientID.isEmpty
        else { return }
        var query = URLComponents(string: authorize)
        let given = query?.queryItems ?? []
        query?.queryItems =
            given + [
                URLQueryItem(name: "response_type", value: "code"), URLQueryItem(name: "client_id", value: clientID),
                // As a login sends it: the fixed one, else a loopback port free now.
                URLQueryItem(
                    name: "redirect_uri",
                    value: table.redirect_uri ?? (try? ResourceClient.newRedirectURI())
                        ?? "http://127.0.0.1:8085/callback"),
                URLQueryItem(name: "state", value: "tokenvault-doctor"),
                URLQueryItem(name: "code_challenge", value: PKCE().challenge),
                URLQueryItem(name: "code_challenge_method", value: "S256"),
            ]
        guard let url = query?.url?.absoluteString,
            let r = try? transport.send(HTTPRequest(method: "GET", url: url, headers: ["Accept: text/html"]))
        else { return }
        let place = "[providers.\(Config.tableKey(name))] of \(settings.configPath)"
        let location = r.header("Location").flatMap { URLComponents(string: $0) }
        let redirectError = location?.queryItems?.first { $0.name == "error" }?.value
        // A redirect that is not an answer to the client (no code, no error: a sign-in page
        // for a visitor not signed in) says nothing about the client id.
        if (300..<400).contains(r.status), redirectError == nil,
            location?.queryItems?.contains(where: { $0.name == "code" }) != true
        {
            let to =
                location.map { OutsideText.line(($0.host.map { "\($0)" } ?? "") + $0.path, limit: 80) } ?? "elsewhere"
            add(
                "login \(name)", .info,
                "cannot tell whether the authorization endpoint knows client_id \(OutsideText.line(clientID, limit: 80)): it sends a visitor who is not signed in to \(to) first (HTTP \(r.status))",
                fix:
                    "log in once (tokenvault login \(ShellWord.word(name))): an error page there means client_id or redirect_uri in \(place)"
            )
            return
        }
        let bodyError: String? = {
            guard case .object(let o)? = JSONValue.parsed(r.body), let error = o["error"]?.string else { return nil }
            return error + (o["error_description"]?.string.map { " (\($0))" } ?? "")
        }()
        if let error = redirectError ?? bodyError ?? ((400..<500).contains(r.status) ? "HTTP \(r.status)" : nil) {
            add(
                "login \(name)", .failed,
                "the authorization endpoint refuses client_id \(OutsideText.line(clientID, limit: 80)): \(OutsideText.line(error, limit: 120))",
                fix: "check client_id (and redirect_uri) in \(place)")
        } else {
            add(
                "login \(name)", .ok,
                "the authorization endpoint takes client_id \(OutsideText.line(clientID, limit: 80)) (HTTP \(r.status))"
            )
        }
    }

    /// Each configured client metadata document fetched, and compared with
    /// the one tokenvault's logins need (docs/providers.md, "Client ID Metadata Documents").
    public func checkClientMetadata(_ config: Config) {
        let transport = CurlTransport(timeout: config.httpTimeout, proxies: ProxySettings(settings: settings))
        for (setting, url) in ResourceClient.metadataURLs(config) {
            let fix = "host what tokenvault setup client-metadata \(ShellWord.word(url)) prints at that URL"
            do {
                try ClientMetadataDocument.check(url, setting: setting)
                let r = try transport.send(HTTPRequest(method: "GET", url: url, headers: ["Accept: application/json"]))
                guard r.status == 200, let document = JSONValue.parsed(r.body) else {
                    add(setting, .failed, "\(url) answered HTTP \(r.status), not a JSON document", fix: fix)
                    continue
                }
                let differing = ClientMetadataDocument.differences(document, for: url)
                if differing.isEmpty {
                    add(setting, .ok, "\(url) is tokenvault's client metadata document")
                } else {
                    add(
                        setting, .failed, "the document at \(url) differs in \(differing.joined(separator: ", "))",
                        fix: fix)
                }
            } catch {
                add(setting, .failed, error.errorText, fix: fix)
            }
        }
    }
}
