import FoundationEssentials
import Glibc

/// `grant = "id_jag"` (docs/providers.md, "One enterprise login"): the
/// enterprise identity provider's stored login (its ID token, or its refresh
/// token) is traded at the IdP's token endpoint for an identity assertion
/// grant (an ID-JAG, by token exchange), which this provider's authorization
/// server takes with the jwt-bearer grant. No browser opens for the
/// resource; renewal trades again, renewing the IdP's login first when its
/// ID token has expired.
struct IdentityAssertionGrant: Sendable {
    static let requestedType = "urn:ietf:params:oauth:token-type:id-jag"

    /// The provider table of the IdP.
    var idp: String
    /// `id_token` (default) or `refresh_token`: which of the IdP's stored tokens is the subject.
    var subjectField: String

    init(_ p: ProviderConfig, provider name: String, configPath: String) throws {
        let table = "[providers.\(Config.tableKey(name))]"
        guard let idp = p.idp, !idp.isEmpty else {
            throw TokenVaultError.config(
                "provider \(name): grant = \"id_jag\" needs idp, the provider you log in to your identity provider with",
                hint: "set idp = \"NAME\" in \(table) of \(configPath)")
        }
        guard idp != name else { throw TokenVaultError.config("provider \(name): idp names the provider itself") }
        let others = [p.subject_token_file, p.subject_token_command, p.subject_provider, p.assertion_file]
        guard others.allSatisfy({ $0 == nil }), p.assertion_command == nil else {
            throw TokenVaultError.config(
                "provider \(name): grant = \"id_jag\" takes its subject from the login of \(idp); subject_token_file, subject_token_command, subject_provider and assertion_file or assertion_command are for other grants",
                hint: "remove them from \(table) of \(configPath)")
        }
        let field = p.subject_token_type ?? "id_token"
        guard ["id_token", "refresh_token"].contains(field) else {
            throw TokenVaultError.config(
                "provider \(name): with grant = \"id_jag\", subject_token_type must be id_token or refresh_token, not \(Quoted.text(field))"
            )
        }
        (self.idp, subjectField) = (idp, field)
    }

    /// The token exchange at the IdP (RFC 8693 §2.1, with the ID-JAG profile's
    /// parameters): `audience` the resource's authorization server, `resource`
    /// the resource exactly as its metadata names it.
    func exchangeFields(subject: String, audience: String, resource: String, scopes: [String]) -> [(String, String)] {
        var fields = [
            ("grant_type", TokenExchange.grantType), ("requested_token_type", Self.requestedType),
            ("subject_token", subject), ("subject_token_type", TokenExchange.typeURI(subjectField) ?? subjectField),
            ("audience", audience), ("resource", resource),
        ]
        if !scopes.isEmpty { fields.append(("scope", scopes.joined(separator: " "))) }
        return fields
    }

    /// The JOSE `typ` of an ID-JAG.
    static let jwtType = "oauth-id-jag+jwt"

    /// The IdP's answer, checked as the ID-JAG profile has it before the grant
    /// goes anywhere: an ID-JAG (its token type; a JWT whose `typ` is
    /// `oauth-id-jag+jwt`) issued by the IdP (`iss`), for exactly this
    /// authorization server (`aud`: it alone), this resource and this client
    /// (`resource` and `client_id`, present and equal).
    static func grant(
        from object: [String: JSONValue], idp: String, issuer: String, audience: String, resource: String,
        clientID: String
    ) throws -> String {
        let type = object["issued_token_type"]?.text ?? ""
        guard type == requestedType, let grant = object["access_token"]?.string, !grant.isEmpty,
            let claims = JWT.claims(of: grant)
        else {
            throw TokenVaultError.badInput(
                "\(idp) did not answer the exchange with an identity assertion grant (issued_token_type \(Quoted.text(OutsideText.line(type, limit: 80)))); nothing was sent on: check that \(idp) issues ID-JAGs to this client"
            )
        }
        func refused(_ why: String) -> TokenVaultError {
            .badInput("the grant \(idp) issued \(why); nothing was sent on")
        }
        let typ = JWT.header(of: grant)?["typ"]?.text.lowercased() ?? ""
        guard typ == jwtType || typ == "application/" + jwtType else {
            throw refused("is not typed as an ID-JAG (typ \(Quoted.text(OutsideText.line(typ, limit: 80))))")
        }
        func bare(_ s: String) -> String { s.hasSuffix("/") ? String(s.dropLast()) : s }
        // `aud` is one value, or a list of that one alone: a grant also good elsewhere is not this one.
        var audiences: [String] = []
        switch claims["aud"] {
        case .string(let one)?: audiences = [one]
        case .array(let items)?: audiences = items.map(\.text)
        default: break
        }
        guard audiences.count == 1, bare(audiences[0]) == bare(audience) else {
            throw refused(
                audiences.isEmpty
                    ? "names no audience"
                    : audiences.count > 1
                        ? "names \(audiences.count) audiences; it must name \(OutsideText.line(audience, limit: 200)) alone"
                        : "names another audience than \(OutsideText.line(audience, limit: 200))")
        }
        for (key, expected) in [("iss", issuer), ("resource", resource), ("client_id", clientID)] {
            guard let value = claims[key]?.string else { throw refused("names no \(key)") }
            guard bare(value) == bare(expected) else {
                throw refused("names another \(key) than \(OutsideText.line(expected, limit: 200))")
            }
        }
        return grant
    }
}

extension OAuth2Provider {
    /// The resource the ID-JAG is asked for: the table's `resource`, else its one `resources` entry.
    func identityAssertionResource() throws -> String {
        if let resource { return resource }
        throw TokenVaultError.config(
            "provider \(name): grant = \"id_jag\" needs the resource its tokens are for",
            hint:
                "set resource = \"URL\" in [providers.\(Config.tableKey(name))]\(configPath.map { " of \($0)" } ?? ""), or log in to the resource by its URL"
        )
    }

    /// The token request of `grant = "id_jag"` at this provider's
    /// authorization server: the ID-JAG as a jwt-bearer assertion, with the
    /// table's client authentication.
    func identityAssertionRequest(
        grant: String, scopes: [String], now: Int64
    ) throws -> (fields: [(String, String)], client: ClientAuthentication, secrets: [String]) {
        var fields = [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", grant)]
        if !scopes.isEmpty { fields.append(("scope", scopes.joined(separator: " "))) }
        fields += resourceFields
        let client = try clientCredentials(now: now)
        return (fields, client, [grant] + (client.secret.map { [$0] } ?? []))
    }
}

extension Refresher {
    /// An ID-JAG for `p` (grant = "id_jag") from its IdP: the IdP's stored
    /// login, renewed first when it has to be (its access token, or an ID
    /// token that has expired), traded at the IdP's token endpoint. A login is
    /// needed (4) only when none is stored or the IdP refuses.
    public func identityAssertion(for p: OAuth2Provider, scopes: [String], account: String) throws -> String {
        guard let jag = p.identityGrant else { throw TokenVaultError.internal("no idp") }
        // What fails at the IdP is the IdP login's: the resource's credential is not blamed.
        return try SubjectFailure.blaming { try identityAssertion(for: p, jag, scopes: scopes, account: account) }
    }

    private func identityAssertion(
        for p: OAuth2Provider, _ jag: IdentityAssertionGrant, scopes: [String], account: String
    ) throws -> String {
        let idp = try provider(jag.idp)
        // The same account's login, checked like its own refresh (its issuer).
        let id = CredentialID(service: idp.service, account: account)
        let acct = account == Credential.defaultAccount ? "" : " --account \(ShellWord.word(account))"
        let login = "run: tokenvault login \(ShellWord.word(jag.idp))\(acct)"
        guard var held = try usable(id, minValid: 60) else {
            throw TokenVaultError.loginRequired(
                "\(p.name) is reached through your login to \(jag.idp), and none is stored; nothing was sent",
                hint: login)
        }
        // An ID token lives on its own clock: one that has expired is renewed with the IdP's refresh token.
        func expired(_ c: Credential) -> Bool {
            guard jag.subjectField == "id_token", let token = c.field("id_token") else { return false }
            return (JWT.claims(of: token)?["exp"]?.int64).map { $0 <= clock.now + 30 } ?? false
        }
        if expired(held), held.refreshToken != nil, let renewed = try usable(id, minValid: 60, force: true) {
            held = renewed
        }
        try idp.checkIssued(held)
        guard let subject = held.field(jag.subjectField), !expired(held) else {
            throw TokenVaultError.loginRequired(
                held.field(jag.subjectField) == nil
                    ? "the login to \(jag.idp) has no \(jag.subjectField) to trade for \(p.name); nothing was sent"
                    : "the ID token of your login to \(jag.idp) has expired and renewing the login brought no new one; nothing was sent",
                hint: login + (jag.subjectField == "id_token" ? " (with the openid scope)" : ""))
        }
        let audience = p.issuer ?? p.issuedBy
        let resource = try p.identityAssertionResource()
        let client = try idp.clientCredentials(now: clock.now)
        let request = HTTPRequest.form(
            idp.tokenURL,
            jag.exchangeFields(subject: subject, audience: audience, resource: resource, scopes: scopes)
                + client.fields, headers: client.headers)
        let host = idp.tokenHost
        let object = try TokenResponse.successFields(
            try transport.send(request), host: host, provider: jag.idp,
            sentSecrets: [subject] + (client.secret.map { [$0] } ?? []), configPath: idp.configPath)
        return try IdentityAssertionGrant.grant(
            from: object, idp: jag.idp, issuer: idp.issuedBy, audience: audience, resource: resource,
            clientID: p.clientID)
    }
}
