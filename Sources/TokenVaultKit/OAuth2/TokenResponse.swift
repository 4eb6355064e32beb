import Dispatch
import FoundationEssentials
import Glibc

/// Reads what a token endpoint answered, tolerantly (docs/providers.md): JSON whatever
/// the Content-Type (Weibo sends text/plain), form-encoded (GitHub's default),
/// numbers sent as strings, no `expires_in` (no expiry). Errors follow RFC 6749
/// §5.2 and map to the documented exit codes.
public enum TokenResponse {
    /// The fields of a body that is a JSON object or form data; nil otherwise.
    public static func fields(_ body: Data) -> [String: JSONValue]? {
        if let v = JSONValue.parsed(body), case .object(let o) = v { return o }
        guard let text = String(data: body, encoding: .utf8)?.trimmedWhitespace(),
            !text.hasPrefix("<"), !text.contains("\n"), let pairs = FormEncoding.decode(text)
        else { return nil }
        var o: [String: JSONValue] = [:]
        for (k, v) in pairs { o[k] = .string(v) }
        return o
    }

    /// The credential in a successful answer, received at `now`; or the error it carries.
    public static func credential(
        from response: HTTPResponse, id: CredentialID, provider: String,
        host: String, now: Int64, sentSecrets: [String] = [], configPath: String? = nil, clientTable: String? = nil
    ) throws -> Credential {
        let object = try successFields(
            response, host: host, provider: provider, sentSecrets: sentSecrets, configPath: configPath,
            clientTable: clientTable)
        var c = try TokenInput.credential(from: object, id: id, now: now)
        c.provider = provider
        return c
    }

    /// The fields of a 2xx answer without an `error`; throws the mapped error otherwise.
    /// `sentSecrets` are what the request carried as secrets (a refresh token,
    /// the client secret): a provider that echoes one in its error never gets it
    /// onto the terminal.
    public static func successFields(
        _ response: HTTPResponse, host: String, provider: String,
        sentSecrets: [String] = [], configPath: String? = nil, clientTable: String? = nil,
        refusesWithoutWords: Bool = false
    ) throws -> [String: JSONValue] {
        let object = fields(response.body)
        if let object, let code = object["error"]?.text {
            // A server that is down may still wrap its 5xx in an error of its own
            // naming: that is the outage, not a refusal (docs/reference.md, exit 75).
            let refusals = ["invalid_grant", "access_denied", "expired_token", "invalid_client", "unauthorized_client"]
            if response.status >= 500 || response.status == 429, !refusals.contains(code) {
                let shown = OutsideText.line(code, redacting: sentSecrets, limit: 80)
                throw TokenVaultError.temporary("\(host) answered HTTP \(response.status) (\(shown))")
            }
            throw error(
                code: code, description: object["error_description"]?.text, provider: provider,
                sentSecrets: sentSecrets,
                configPath: configPath, clientTable: clientTable)
        }
        guard (200..<300).contains(response.status) else {
            let what = looksLikeHTML(response) ? "an HTML page" : "no OAuth error"
            if response.status >= 500 || response.status == 429 {
                throw TokenVaultError.temporary("\(host) answered HTTP \(response.status) (\(what))")
            }
            // RFC 6749 §5.2: a token endpoint answers a bad grant with 400. One that
            // says no more (a server breaking a reused rotating chain this way) is
            // refusing all the same: recorded as invalid_grant would be (exit 4).
            if response.status == 400, refusesWithoutWords {
                throw error(
                    code: "invalid_grant", description: "HTTP 400 with \(what)", provider: provider,
                    sentSecrets: sentSecrets, configPath: configPath, clientTable: clientTable)
            }
            throw TokenVaultError.badInput("\(host) answered HTTP \(response.status) with \(what)")
        }
        guard let object else {
            throw TokenVaultError.badInput(
                "\(host) answered with \(looksLikeHTML(response) ? "an HTML page" : "something that is neither JSON nor form data"), not a token"
            )
        }
        return object
    }

    /// RFC 6749 §5.2 (and RFC 8628 §3.5) error codes to exit codes.
    /// `login`: the command that logs in again (its `--account` included),
    /// and whether the answer came at the end of a login the user was asked
    /// to approve (`access_denied` then means the approval was refused).
    public static func error(
        code: String, description: String?, provider: String, sentSecrets: [String] = [], configPath: String? = nil,
        clientTable: String? = nil, login: (command: String, approving: Bool)? = nil
    ) -> TokenVaultError {
        let desc = description.map { OutsideText.line($0, redacting: sentSecrets) }
        let shown = OutsideText.line(code, redacting: sentSecrets)
        let again = login?.command ?? "tokenvault login \(ShellWord.word(provider))"
        switch code {
        case "access_denied" where login?.approving == true:
            return .loginRequired(
                "the access was not approved at \(provider)'s page (access_denied\(desc.map { ": \($0)" } ?? "")); nothing was stored",
                hint: "to try again, run: \(again) and approve the access it asks for")
        case "invalid_grant", "access_denied", "expired_token":
            return .loginRequired(
                "the provider answered \(shown)\(desc.map { ": \($0)" } ?? "")",
                hint: "run: \(again)")
        case "server_error", "temporarily_unavailable":
            return .temporary("the provider answered \(shown)\(desc.map { ": \($0)" } ?? "")")
        case "invalid_client", "unauthorized_client":
            // The client is the user's to fix: say where it is set.
            return .providerRefused(
                code: shown, description: desc,
                hint:
                    "check client_id and client_secret (or its _file or _command) of [providers.\(Config.tableKey(clientTable ?? provider))]\(configPath.map { " in \($0)" } ?? " in the config")"
            )
        default:
            return .providerRefused(code: shown, description: desc)
        }
    }

    private static func looksLikeHTML(_ r: HTTPResponse) -> Bool {
        (r.contentType ?? "").lowercased().contains("html")
            || String(decoding: r.body.prefix(64), as: UTF8.self).trimmedWhitespace().hasPrefix("<")
    }
}
