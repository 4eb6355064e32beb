import FoundationEssentials
import Glibc

/// `grant = "jwt_bearer"` with a JWT another issuer made: a workload's
/// identity (docs/providers.md, "Credentials from an identity"). The JWT is
/// sent as it is, read afresh at every use (Kubernetes rotates its projected
/// tokens; a CI job's is fetched on demand), with the table's client
/// authentication (none by default).
extension OAuth2Provider {
    /// `assertion_file` or `assertion_command`, one of them, and not beside a
    /// key that would sign an assertion of tokenvault's own.
    static func workloadAssertion(
        _ p: ProviderConfig, provider name: String, in child: ChildContext
    ) throws -> (source: SecretSource, shown: String)? {
        let table = "[providers.\(Config.tableKey(name))]"
        switch (p.assertion_file, p.assertion_command) {
        case (nil, nil): return nil
        case (_?, _?):
            throw TokenVaultError.config("provider \(name): set one of assertion_file and assertion_command, not both")
        case _ where p.private_key_file != nil || p.credentials_file != nil:
            throw TokenVaultError.config(
                "provider \(name): an assertion_file or assertion_command is sent as it is; private_key_file and credentials_file sign one of tokenvault's own: set one kind, not both",
                hint: "remove one of them from \(table)")
        case (let file?, nil): return (.file(file), file)
        case (nil, let command?):
            let setting = "the assertion_command of \(table)"
            return (.command(command, child, setting: setting), setting)
        }
    }

    /// The token request: the workload's JWT as the assertion, `scope` and
    /// the resource. A JWT that is missing, unreadable, not a JWT or expired
    /// is refused before anything is sent, naming where it was read.
    func workloadFields(scopes: [String], now: Int64) throws -> (fields: [(String, String)], secret: String) {
        guard let (source, shown) = assertionSource else { return ([], "") }
        let what = "the assertion"
        let assertion = try ForeignToken.read(source, what: what)
        let claims = try ForeignToken.checked(
            assertion, what: what, shown: shown, now: now,
            renewedBy:
                "its issuer replaces it (the kubelet renews a projected service-account token; a CI job asks for a new one)"
        )
        guard claims != nil else {
            throw TokenVaultError.config(
                "what was read from \(shown) is not a JWT (three base64url parts, the middle one a JSON object); nothing was sent"
            )
        }
        var fields = [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion)]
        if !scopes.isEmpty { fields.append(("scope", scopes.joined(separator: " "))) }
        fields += resourceFields
        return (fields, assertion)
    }
}
