import FoundationEssentials
import Glibc

/// What a provider sends its token endpoint on its own account: how the
/// client authenticates (fields, Basic, a signed assertion), and the
/// requests of the grants that need no user (client credentials, a JWT
/// bearer, a token exchange).
extension OAuth2Provider {
    /// Client authentication for a token-endpoint request: body fields, a
    /// Basic header, or a signed client assertion (RFC 7523 §2.2) whose `aud`
    /// is `clientAssertionAudience`. `secret` is whatever must never appear in a message.
    func clientCredentials(now: Int64 = Int64(Date().timeIntervalSince1970)) throws -> ClientAuthentication {
        switch clientAuth {
        case .body:
            let secret = try secretSource?.read(what: "the client secret of \(name)")
            var fields = [("client_id", clientID)]
            if let secret { fields.append(("client_secret", secret)) }
            return (fields, [], secret)
        case .basic:
            // RFC 6749 §2.3.1: each part form-encoded, then Base64.
            let secret = try secretSource?.read(what: "the client secret of \(name)")
            let pair = FormEncoding.percentEncode(clientID) + ":" + FormEncoding.percentEncode(secret ?? "")
            return ([], ["Authorization: Basic " + Data(pair.utf8).base64EncodedString()], secret)
        case .privateKeyJWT, .clientSecretJWT:
            let key: JWT.Key
            if clientAuth == .privateKeyJWT {
                key = try SigningKey.load(
                    privateKeyFile: privateKeyFile, credentialsFile: credentialsFile, provider: name
                ).key
            } else {
                guard let secret = try secretSource?.read(what: "the client secret of \(name)") else {
                    throw TokenVaultError.config(
                        "provider \(name): client_auth = \"client_secret_jwt\" needs a client_secret (or client_secret_file, client_secret_command)"
                    )
                }
                key = .secret(SecureBytes(Array(secret.utf8)))
            }
            let claims = JWT.assertionClaims(
                issuer: clientID, subject: clientID, audience: clientAssertionAudience, now: now)
            let assertion = try JWT.sign(claims: claims, key: key)
            return (
                [
                    ("client_id", clientID),
                    ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
                    ("client_assertion", assertion),
                ], [], assertion
            )
        }
    }

    /// The `aud` of a client assertion (private_key_jwt, client_secret_jwt):
    /// the configured `audience`, else the authorization server's issuer
    /// identifier, else the token endpoint (docs/providers.md, "Discovery and
    /// machine identities"). The issuer, not an endpoint, since the update to
    /// RFC 7523: an audience a server cannot mistake for another's.
    var clientAssertionAudience: String { audience ?? issuer ?? tokenURL }

    /// Client authentication for a token-endpoint request (see `clientCredentials`).
    typealias ClientAuthentication = (fields: [(String, String)], headers: [String], secret: String?)

    /// The token request of a grant the client makes on its own, with no
    /// refresh token: client_credentials, or a jwt_bearer assertion (next to
    /// which only configured client authentication is sent: a secret, or a JWT
    /// method; the assertion itself says who asks). `secrets` must never
    /// appear in a message.
    /// `subjects`: where a token exchange's subject and an ID-JAG come from (docs/providers.md).
    func ownTokenRequest(
        scopes: [String], now: Int64, subjects: GrantSubjects? = nil, account: String = Credential.defaultAccount
    ) throws -> (fields: [(String, String)], client: ClientAuthentication, secrets: [String]) {
        if grant == .idJag {
            guard let subjects else { throw TokenVaultError.internal("id_jag without its IdP") }
            let assertion = try subjects.identityAssertion(for: self, scopes: scopes, account: account)
            return try identityAssertionRequest(grant: assertion, scopes: scopes, now: now)
        }
        if grant == .tokenExchange, let exchange {
            let held = try exchange.subjectProvider.flatMap {
                try subjects?.subjectCredential($0, account: account)
            }
            let (fields, subject) = try exchange.fields(
                scopes: scopes, audience: audience, resource: resourceFields, now: now, stored: held)
            let client: ClientAuthentication =
                secretSource != nil || clientAuth == .privateKeyJWT
                ? try clientCredentials(now: now) : (clientID.isEmpty ? [] : [("client_id", clientID)], [], nil)
            return (fields, client, [subject] + (client.secret.map { [$0] } ?? []))
        }
        if grant == .jwtBearer {
            let (fields, assertion) = try jwtBearerFields(scopes: scopes, now: now)
            let client: ClientAuthentication =
                secretSource != nil || clientAuth == .privateKeyJWT ? try clientCredentials(now: now) : ([], [], nil)
            return (fields, client, [assertion] + (client.secret.map { [$0] } ?? []))
        }
        var fields = [("grant_type", "client_credentials")]
        if !scopes.isEmpty { fields.append(("scope", scopes.joined(separator: " "))) }
        fields += resourceFields
        let client = try clientCredentials(now: now)
        return (fields, client, client.secret.map { [$0] } ?? [])
    }

    /// What a grant that needs no person makes its request from, as a
    /// fingerprint: the table's client and endpoints, the client secret or
    /// key, the assertion or the subject token — read now, nothing sent. A
    /// refusal holds only while it is unchanged (docs/reference.md,
    /// "Credential state"). Nil for a grant that needs a person.
    func unattendedInput(account: String, subjects: GrantSubjects?) throws -> String? {
        guard grant.fetchesAgain else { return nil }
        var parts = [grant.rawValue, clientID, tokenURL, scopes.joined(separator: " "), audience ?? "", resource ?? ""]
        if let secretSource { parts.append(try secretSource.read(what: "the client secret of \(name)")) }
        for path in [privateKeyFile, credentialsFile].compactMap({ $0 }) {
            parts.append(Hex.encode(try TrustedFile.read(path, what: "the key file of \(name)") ?? []))
        }
        if let (source, _) = assertionSource { parts.append(try ForeignToken.read(source, what: "the assertion")) }
        if let exchange {
            if let subject = exchange.subject {
                parts.append(try ForeignToken.read(subject, what: "the subject token"))
            } else if let other = exchange.subjectProvider {
                parts.append(subjects?.storedSubject(other, account: account, field: exchange.subjectField) ?? "")
            }
        }
        if let identityGrant {
            parts.append(
                subjects?.storedSubject(identityGrant.idp, account: account, field: identityGrant.subjectField) ?? "")
        }
        var bytes = Array(parts.joined(separator: "\u{0}").utf8)
        defer { Sodium.wipe(&bytes) }
        return Hex.encode(Sodium.hash(bytes, bytes: 16))
    }

    /// Where a grant that needs no person takes what it sends, as messages name it.
    var unattendedSource: String {
        if let (_, shown) = assertionSource { return "the assertion in \(shown)" }
        if let exchange { return "the subject token from \(exchange.shown)" }
        if let identityGrant { return "your login to \(identityGrant.idp)" }
        if privateKeyFile != nil || credentialsFile != nil { return "its key" }
        return "its client secret"
    }

    /// The token request of `grant = "jwt_bearer"` (RFC 7523 §2.1): an
    /// assertion signed with the provider's key, `iss` the service account
    /// (credentials file) or the client id, `sub` the `subject` or the same,
    /// `aud` the `audience` or the token URL; `scope` in the form and, for
    /// Google, in the claims.
    func jwtBearerFields(scopes: [String], now: Int64) throws -> (fields: [(String, String)], secret: String) {
        if assertionSource != nil { return try workloadFields(scopes: scopes, now: now) }
        let signing = try SigningKey.load(
            privateKeyFile: privateKeyFile, credentialsFile: credentialsFile, provider: name)
        let issuer = signing.clientEmail ?? clientID
        var claims = JWT.assertionClaims(
            issuer: issuer, subject: subject ?? issuer, audience: audience ?? tokenURL, now: now)
        if !scopes.isEmpty { claims["scope"] = .string(scopes.joined(separator: " ")) }
        let assertion = try JWT.sign(claims: claims, key: signing.key)
        var fields = [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion)]
        if !scopes.isEmpty { fields.append(("scope", scopes.joined(separator: " "))) }
        fields += resourceFields
        return (fields, assertion)
    }
}
