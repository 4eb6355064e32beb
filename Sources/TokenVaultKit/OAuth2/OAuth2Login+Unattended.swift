import FoundationEssentials

/// The grants that need no person (docs/providers.md, "Credentials from an
/// identity"): the client fetches its token on its own.
extension OAuth2Login {
    /// `grant = "client_credentials"` (RFC 6749 §4.4), or `"jwt_bearer"`
    /// (RFC 7523 §2.1): the client fetches a token on its own.
    /// `subjects`: where a token exchange's subject and an ID-JAG come from.
    public func clientCredentials(
        id: CredentialID, scopes: [String], subjects: GrantSubjects? = nil
    ) throws -> Credential {
        let request: (fields: [(String, String)], client: OAuth2Provider.ClientAuthentication, secrets: [String])
        do {
            request = try provider.ownTokenRequest(
                scopes: scopes, now: clock.now, subjects: subjects, account: id.account)
        } catch let failure as SubjectFailure {
            throw failure.error
        }
        do {
            return try tokenRequest(request.fields, id: id, sent: request.secrets, client: request.client)
        } catch TokenVaultError.loginRequired(let why, _) {
            // Nobody logs in to a grant that needs no person: the same request would be refused again.
            throw TokenVaultError.loginRequired(
                "\(why); it was made from \(provider.unattendedSource)",
                hint: "the same is refused again: once \(provider.unattendedSource) changes, get or login asks again")
        }
    }
}
