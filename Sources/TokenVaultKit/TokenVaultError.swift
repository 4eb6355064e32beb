import Dispatch
import FoundationEssentials
import Glibc

/// Every failure tokenvault reports. Each case maps to exactly one documented
/// exit code (`exitCode`), so the CLI never decides codes on its own.
public enum TokenVaultError: Error, Equatable, LocalizedError, Sendable {
    /// Bad arguments or an invalid service name (64).
    case usage(String, hint: String? = nil)
    /// Nothing stored under that service and account (3).
    case notFound(service: String, account: String, unchecked: String? = nil, hint: String? = nil)
    /// Expired and cannot be refreshed (4).
    case loginRequired(String, hint: String? = nil)
    /// Malformed input on stdin or an unparseable provider response (65).
    case badInput(String)
    /// The backend that was asked for, or a system library (libsecret, libcurl), cannot be used (69).
    case backendUnavailable(String, hint: String? = nil)
    /// Vault unreadable, unwritable, corrupted or tampered with (74).
    case vault(String, hint: String? = nil)
    /// Network error, timeout, provider 5xx: retry later (75); a hint where more than "later" helps.
    case temporary(String, hint: String? = nil)
    /// The provider refused the request (76).
    case providerRefused(code: String, description: String?, hint: String? = nil)
    /// Locked without a passphrase source, wrong passphrase, unsafe permissions (77).
    case permission(String, hint: String? = nil)
    /// Unknown provider, missing client id, invalid config file (78).
    case config(String, hint: String? = nil)
    /// A config file TOML cannot read, or several mistakes in it (78): the message, then the
    /// lines shown beneath it (the line and a caret under the column; or the other mistakes).
    case configDetail(String, excerpt: [String], hint: String?)
    /// A bug (1).
    case `internal`(String)

    /// docs/reference.md: every exit code tokenvault itself sets, and what it means.
    /// `tokenvault --help` and the man page's EXIT STATUS both print this table.
    public static let exitCodes: [(code: Int32, meaning: String)] = [
        (0, "success"),
        (1, "unexpected internal failure (a bug)"),
        (2, "doctor: a check failed (its line says what to fix)"),
        (3, "no credential stored for that service/account"),
        (
            4,
            "login required: expired and cannot be refreshed (no refresh token, or the provider answered invalid_grant, access_denied or expired_token)"
        ),
        (64, "usage error (bad arguments, invalid service name)"),
        (65, "bad input data: malformed stdin, unparseable provider response"),
        (
            69,
            "the requested backend is unavailable, or a system library it needs (libsecret, libcurl) cannot be loaded"
        ),
        (74, "vault unreadable, unwritable, corrupted or tampered"),
        (75, "temporary failure: network error, timeout, provider 5xx; nothing was lost, retry later"),
        (
            76,
            "provider refused: invalid_client, unauthorized_client, invalid_scope, invalid_request, unsupported_grant_type"
        ),
        (77, "no permission: vault locked and no passphrase source, wrong passphrase, unsafe file permissions"),
        (78, "configuration error: unknown provider, missing client id, invalid config file"),
        (130, "interrupted (Ctrl-C): one line says what was and was not stored"),
    ]

    /// The exit code documented in docs/reference.md and the man page.
    public var exitCode: Int32 {
        switch self {
        case .usage: 64
        case .notFound: 3
        case .loginRequired: 4
        case .badInput: 65
        case .backendUnavailable: 69
        case .vault: 74
        case .temporary: 75
        case .providerRefused: 76
        case .permission: 77
        case .config, .configDetail: 78
        case .internal: 1
        }
    }

    public var errorDescription: String? {
        switch self {
        case .usage(let m, _), .loginRequired(let m, _), .badInput(let m),
            .backendUnavailable(let m, _), .vault(let m, _), .temporary(let m, _),
            .permission(let m, _), .config(let m, _), .configDetail(let m, _, _):
            return m
        case .notFound(let service, let account, let unchecked, _):
            var m = "no credential stored for \(service)" + (account.isEmpty ? "" : " (account \(account))")
            if let unchecked { m += "; \(unchecked)" }
            return m
        case .providerRefused(let code, let description, _):
            if let description, !description.isEmpty {
                return "the provider refused the request: \(code): \(description)"
            }
            return "the provider refused the request: \(code)"
        case .internal(let m):
            return "internal error: \(m)"
        }
    }

    /// What the user can do about it, when there is something to do.
    public var hint: String? {
        switch self {
        case .usage(_, let h), .loginRequired(_, let h), .backendUnavailable(_, let h),
            .vault(_, let h), .permission(_, let h), .config(_, let h), .configDetail(_, _, let h),
            .providerRefused(_, _, let h):
            return h
        case .notFound(let service, let account, _, let hint):
            if let hint { return hint }
            let acct = account == Credential.defaultAccount ? "" : " --account \(ShellWord.word(account))"
            return "store one with: tokenvault set \(ShellWord.word(service))\(acct) < token.json"
        case .temporary(_, let h):
            return h ?? "nothing was changed; try again later"
        case .badInput, .internal:
            return nil
        }
    }

    /// Lines to show between the error and the hint: a config line and a
    /// caret under the column where TOML could not read it, or the config's other mistakes.
    public var excerpt: [String] {
        if case .configDetail(_, let excerpt, _) = self { return excerpt }
        return []
    }

    /// Each mistake the error names, for a list that gives every one a line
    /// of its own (`doctor`): the message, then the config's other mistakes;
    /// a TOML syntax error's line and caret belong to its one message.
    public var mistakes: [String] {
        let caret = excerpt.last.map { $0.contains("^") && $0.allSatisfy { $0 == " " || $0 == "^" } } ?? false
        return caret ? [errorText] : [errorText] + excerpt
    }
}

extension Error {
    /// What `localizedDescription` gave with the whole of Foundation: a
    /// LocalizedError's description, else the error as text.
    public var errorText: String { (self as? LocalizedError)?.errorDescription ?? String(describing: self) }
}
