import FoundationEssentials

/// The header line `get --format header` and `header` print for a bearer
/// credential (docs/reference.md): its provider's `header` template filled
/// in, else `Authorization: Bearer TOKEN`; refused, with the command that
/// serves it, for a credential each request must prove or sign itself.
public enum HeaderLine {
    /// `template`: the provider's checked `header` setting, if any.
    public static func line(for c: Credential, template: String?) throws -> String {
        guard c.type != .oauth1 else { return try bearer(for: c) }  // explains: sign per request
        if let template { return template.replacing("{token}", with: c.accessToken) }
        return try bearer(for: c)
    }

    /// `Authorization: Bearer TOKEN` for bearer-style credentials.
    public static func bearer(for c: Credential) throws -> String {
        guard c.type != .oauth1 else {
            throw TokenVaultError.usage(
                "\(c.id) is an OAuth 1.0a credential: each request needs its own signature, not a bearer header",
                hint:
                    "sign a request with: tokenvault header \(ShellWord.word(c.service.description)) --method GET --url URL"
            )
        }
        if c.dpopKey != nil {
            throw TokenVaultError.usage(
                "\(c.id) holds a DPoP-bound token: each request needs a proof of its own, not a bearer header",
                hint:
                    "print the pair with: tokenvault header \(ShellWord.word(c.service.description)) --method GET --url URL"
            )
        }
        return PresentedToken(c.accessToken).header
    }
}
