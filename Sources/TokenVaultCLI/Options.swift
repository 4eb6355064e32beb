import ArgumentParser
import Foundation
import TokenVaultKit

/// SERVICE and --account, shared by every command that names one credential.
struct CredentialOptions: ParsableArguments {
    @Argument(help: ArgumentHelp(
        "A host (api.weibo.com), a URL (https://api.twitter.com/1.1/) or a provider name (weibo).",
        valueName: "service"), completion: .custom(Completions.services))
    var service: String

    @Option(help: "Which of several logins to the service.", completion: .custom(Completions.accounts))
    var account: String = Credential.defaultAccount

    func id(in context: Context) throws -> CredentialID {
        let key = try context.serviceKey(service)
        try CredentialID.validateAccount(account)
        return CredentialID(service: key, account: account)
    }
}

extension Credential {
    /// Exit 4 when the access token is no longer usable.
    func requireUsable(at now: Int64) throws {
        guard isExpired(at: now) else { return }
        throw TokenVaultError.loginRequired(
            "the token for \(id) expired \(Format.ago(now - (expiresAt ?? now))) ago and cannot be refreshed",
            hint: loginHint)
    }
}

enum Format {
    /// "3m", "2h 5m", "4d 1h": for humans.
    static func ago(_ seconds: Int64) -> String {
        let s = max(seconds, 0)
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m" }
        if s < 86400 { return "\(s / 3600)h \(s % 3600 / 60)m" }
        return "\(s / 86400)d \(s % 86400 / 3600)h"
    }

    static func expiry(_ c: Credential, now: Int64) -> String {
        guard let left = c.secondsLeft(at: now) else { return "never" }
        return left > 0 ? "in \(ago(left))" : "expired \(ago(-left)) ago"
    }

    static func date(_ unix: Int64) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: Date(timeIntervalSince1970: TimeInterval(unix)))
    }

    /// `'value'` for a POSIX shell, safe to eval.
    static func shellQuoted(_ s: String) -> String {
        "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
