import Dispatch
import FoundationEssentials
import Glibc

/// Whether a credential can be used, and why not (docs/reference.md). Every command
/// that says or acts on it (`get`, `header`, `exec`, `status`, `list`,
/// `refresh`, completion) takes the answer from here.
public enum CredentialState: String, Sendable, CaseIterable {
    /// No expiry, or at least `min_valid` seconds left.
    case valid
    /// Fewer than `min_valid` seconds left, not yet expired, cannot be renewed.
    case expiring
    /// Expired or expiring, and can be renewed.
    case refreshable
    /// Expired and cannot be renewed, or the provider refused the last renewal.
    case loginRequired = "login required"
}

/// How a credential can get a new access token without the user.
public enum Renewal: Equatable, Sendable {
    /// A refresh token and a provider to send it to.
    case refreshToken
    /// A configured `client_credentials` provider fetches a new token.
    case clientCredentials
    /// It cannot; the reason, for messages.
    case impossible(String)

    public var isPossible: Bool {
        if case .impossible = self { return false }
        return true
    }
}

/// A credential's state at one moment, with what led to it.
public struct CredentialStatus: Equatable, Sendable {
    public var state: CredentialState
    public var renewal: Renewal
    /// Seconds of validity left; nil when it never expires.
    public var secondsLeft: Int64?
    /// The provider's refusal of the last renewal, while it stands.
    public var refusal: Refusal?

    /// Works out the state of `c` at `now`. `grant` names the grant of a
    /// provider (nil: unknown or not configured); it is asked only for a
    /// credential without a refresh token that names a provider.
    public init(of c: Credential, now: Int64, minValid: Int64, grant: (String) -> OAuth2Provider.Grant?) {
        secondsLeft = c.secondsLeft(at: now)
        refusal = c.refusal
        renewal = CredentialStatus.renewal(of: c, grant: grant)
        let margin = Self.margin(minValid, for: c)
        // A refusal a login ends holds until then; one of a grant that needs no person
        // holds only for what it was made from: its token is served while valid, and
        // renewed once that changes (the refresher compares).
        if let refusal, refusal.input == nil {
            state = .loginRequired
        } else if secondsLeft.map({ $0 > 0 && $0 >= margin }) ?? true {
            state = .valid
        } else if renewal.isPossible {
            state = .refreshable
        } else if let left = secondsLeft, left > 0 {
            state = .expiring
        } else {
            state = .loginRequired
        }
    }

    /// The renewal margin (docs/reference.md, "The renewal margin"): `wanted` seconds,
    /// but never more than half the lifetime the provider gave the token
    /// (from the write that stored it to its expiry), so that a 20 s token is
    /// not renewed at every use under the default 60 s. The one rule for every
    /// command, the bridge and the agent's schedule (`AheadOfNeed.lead`).
    public static func margin(_ wanted: Int64, for c: Credential) -> Int64 {
        guard let lifetime = lifetime(of: c) else { return wanted }
        return min(wanted, lifetime / 2)
    }

    /// The token's lifetime as issued: from the write that stored it to its
    /// expiry; nil when that is unknown.
    public static func lifetime(of c: Credential) -> Int64? {
        guard let expires = c.expiresAt, c.updatedAt > 0, expires > c.updatedAt else { return nil }
        return expires - c.updatedAt
    }

    static func renewal(of c: Credential, grant: (String) -> OAuth2Provider.Grant?) -> Renewal {
        switch c.type {
        case .oauth1:
            return .impossible("OAuth 1.0a tokens are not renewed")
        case .oauth2, .token:
            guard let name = c.provider else {
                return .impossible("it is tied to no provider (tokenvault set --provider)")
            }
            if c.refreshToken != nil, c.type == .oauth2 { return .refreshToken }
            // Without a refresh token only a client-credentials provider can help; one
            // that is not (fully) configured cannot, and that is "log in again", not 78.
            return grant(name)?.fetchesAgain == true ? .clientCredentials : .impossible("there is no refresh token")
        }
    }

    /// True when the access token may be handed out as it is.
    public var canHandOut: Bool {
        switch state {
        case .valid, .expiring: return true
        case .refreshable: return (secondsLeft ?? 1) > 0
        case .loginRequired: return false
        }
    }

    /// Whether a command would renew it now if asked ("can refresh" in
    /// `status` and `list`): a way to renew, and no refusal standing.
    public var canRenew: Bool { renewal.isPossible && (refusal == nil || refusal?.input != nil) }

    /// `status SERVICE`'s answer: usable (0) unless a login is required (4).
    public var isUsable: Bool { state != .loginRequired }

    /// The exit-4 error for a credential whose state is `login required`.
    public func loginRequiredError(for c: Credential) -> TokenVaultError {
        if let refusal {
            return .loginRequired(
                "the provider refused to renew the token for \(c.id) (\(refusal.reason)); it will not be asked again until you log in",
                hint: c.loginHint)
        }
        let why: String
        if case .impossible(let reason) = renewal { why = reason } else { why = "it could not be renewed" }
        let when = secondsLeft.map { $0 > 0 ? "expires in \($0) s" : "expired" } ?? "expired"
        return .loginRequired("the token for \(c.id) \(when) and cannot be renewed: \(why)", hint: c.loginHint)
    }
}

extension Credential {
    /// The hint for a credential the user must log in to again.
    public var loginHint: String {
        let acct = account == Credential.defaultAccount ? "" : " --account \(ShellWord.word(account))"
        if let provider { return "run: tokenvault login \(ShellWord.word(provider))\(acct)" }
        return "store a new token: tokenvault set \(ShellWord.word(service.description))\(acct) < token.json"
    }
}
