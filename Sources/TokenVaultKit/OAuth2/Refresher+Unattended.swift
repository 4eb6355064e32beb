import FoundationEssentials
import Glibc

/// Renewals of the grants that need no person (docs/reference.md,
/// "Credential state"; docs/providers.md, "Credentials from an identity"): a
/// refusal remembered with what the request was made from, and holding only
/// while that is unchanged; the first token fetched by a command itself.
extension Refresher {
    /// The provider of `current` when its renewal is a grant of its own (no refresh token).
    func unattendedProvider(of current: Credential) -> OAuth2Provider? {
        current.refreshToken == nil ? (try? provider(current.provider ?? "")) : nil
    }

    /// What `current`'s grant (by `p`, its unattended provider) is made from
    /// now, as a fingerprint; nil when it cannot be read. Read only to compare
    /// with a refusal or to remember one: a command is not run twice per renewal.
    func unattendedInput(of current: Credential, by p: OAuth2Provider) -> String? {
        try? p.unattendedInput(account: current.id.account, subjects: self)
    }

    /// While a refusal holds for what `current` is made from (and `refresh`
    /// did not ask whatever it is): the stored credential as long as it is
    /// valid, else the error, nothing sent. Nil: renew.
    func whileRefused(_ current: Credential, force: Bool) throws -> Credential? {
        guard !force, let p = unattendedProvider(of: current), let refusal = current.refusal,
            let refused = refusal.input, refused == unattendedInput(of: current, by: p)
        else { return nil }
        if let left = current.secondsLeft(at: clock.now), left > 0 { return current }
        throw TokenVaultError.loginRequired(
            "the token for \(current.id) expired, and \(p.name) refused its last renewal: \(refusal.reason); \(p.unattendedSource) has not changed since, so nothing was sent",
            hint:
                "it is sent again at the next use once it changes; to ask now: tokenvault refresh \(ShellWord.word(p.name))"
        )
    }

    /// A refusal of `current`'s renewal, remembered on its record (with what
    /// it was made from, for a grant that needs no person); the error to throw.
    func refused(_ current: Credential, _ error: TokenVaultError, read: WriteCondition) -> TokenVaultError {
        let id = current.id
        var marked = current
        let unattended = unattendedProvider(of: current)
        let input = unattended.flatMap { unattendedInput(of: current, by: $0) }
        marked.refusal = Refusal(reason: error.errorText, at: clock.now, input: input)
        marked.updatedAt = clock.now
        if (try? vault.write(marked, if: read)) != nil { events?(.loginRequired, id, error.errorText) }
        if let p = unattended, input != nil {
            // Nobody logs in to a grant that needs no person: what it is made from is the fix.
            let left = current.secondsLeft(at: clock.now).map { $0 > 0 ? ", valid \($0) s more" : "" } ?? ""
            return .loginRequired(
                "\(p.name) refused to renew the token for \(id): \(error.errorText); it was made from \(p.unattendedSource), and the stored token is kept\(left)",
                hint:
                    "it is asked again at the next use once that changes; to ask now: tokenvault refresh \(ShellWord.word(p.name))"
            )
        }
        return .loginRequired(
            "cannot renew the token for \(id): \(error.errorText); the stored record is kept",
            hint: error.hint ?? current.loginHint)
    }

    /// A provider's stored record of `account`, its `field` and generation,
    /// as it is: what a refusal's input is made from.
    public func storedSubject(_ name: String, account: String, field: String) -> String? {
        guard let p = try? provider(name),
            let c = try? vault.load(CredentialID(service: p.service, account: account))
        else { return nil }
        return "\(c.generation) \(c.field(field) ?? "")"
    }

    /// The first token of `id` from `p`, whose grant needs no person, stored
    /// while nothing is: under the renewal lock, so that many first uses at
    /// once make one request.
    /// A refused first token is remembered beside the locks, with what it
    /// was made from: the same request is not sent again until that changes.
    public func firstToken(of p: OAuth2Provider, id: CredentialID) throws -> Credential? {
        try vault.withRenewalLock(id, settled: { try vault.load(id).map { .some($0) } }) {
            if let stored = try vault.load(id) { return stored }
            let mark = vault.runtimeDirectory + "/refused-first-" + CredentialVault.fileName(id)
            let input = try? p.unattendedInput(account: id.account, subjects: self)
            if let text = try? String(contentsOfFile: mark, encoding: .utf8),
                let (refused, reason) = text.firstIndex(of: "\n").map({ (text[..<$0], text[text.index(after: $0)...]) }
                ),
                input != nil, String(refused) == input
            {
                throw TokenVaultError.loginRequired(
                    "\(p.name) refused the first token for \(id): \(reason); \(p.unattendedSource) has not changed since, so nothing was sent",
                    hint: "it is sent again once that changes; to ask now: tokenvault login \(ShellWord.word(p.name))")
            }
            var login = OAuth2Login(provider: p, transport: transport, clock: clock, notify: warn)
            login.nonces = nonces
            let c: Credential
            do {
                c = try login.clientCredentials(id: id, scopes: p.scopes, subjects: self)
            } catch let error as TokenVaultError {
                guard case .loginRequired = error, let input else { throw error }
                try? AtomicFile.replace(
                    mark, with: Array("\(input)\n\(OutsideText.line(error.errorText))".utf8), what: "the refusal mark")
                throw error
            }
            unlink(mark)
            exchanged?(id)
            return try vault.write(c, if: .unchanged(fingerprint: nil)) ?? vault.load(id)
        }
    }
}
