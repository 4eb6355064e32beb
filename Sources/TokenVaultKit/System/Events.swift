internal import CTokenVault
import Dispatch
import FoundationEssentials
import Glibc

/// Something about a credential that needs a person (docs/agent.md, "Events").
public enum Event: String, CaseIterable, Sendable {
    /// The provider refused a renewal: only a login helps now.
    case loginRequired = "login_required"
    /// The refresh token dies within `warn_before`.
    case refreshTokenExpiring = "refresh_token_expiring"
    /// A renewal failed for a reason that may pass (the network, the provider's 5xx).
    case refreshFailed = "refresh_failed"

    var title: String {
        switch self {
        case .loginRequired: "tokenvault: log in again"
        case .refreshTokenExpiring: "tokenvault: a login expires soon"
        case .refreshFailed: "tokenvault: a token could not be renewed"
        }
    }
}

/// Runs the `[hooks]` command of an event, with the service, account, event
/// and reason in its environment (never a secret, no passphrase variable), in
/// the background, and shows a desktop notification
/// (org.freedesktop.Notifications, through GIO; a second at most) unless
/// `notify = false`. `refresh_failed` is told at most once an hour per
/// credential (a mark in the runtime directory), as the others happen once.
public struct EventSink {
    public var settings: Settings
    public var hooks: HooksConfig?
    public var runtimeDirectory: String

    public init(settings: Settings, hooks: HooksConfig?, runtimeDirectory: String) {
        self.settings = settings
        self.hooks = hooks
        self.runtimeDirectory = runtimeDirectory
    }

    public func emit(_ event: Event, _ id: CredentialID, reason: String) {
        if event == .refreshFailed, !firstInAnHour(event, id) { return }
        let reason = OutsideText.line(reason, limit: 500)
        if let command = self.command(for: event), !command.trimmedSpaces().isEmpty {
            var env = ChildEnvironment.scrubbed(settings.environment)
            env[EnvironmentVariable.service.name] = id.service.description
            env[EnvironmentVariable.account.name] = id.account
            env[EnvironmentVariable.event.name] = event.rawValue
            env[EnvironmentVariable.reason.name] = reason
            background(["/bin/sh", "-c", command], env: env)
        }
        if hooks?.notify ?? true, settings.desktop, settings.sessionBus != nil {
            _ = tv_notify(event.title, Self.notificationBody("\(id): \(reason)"), 1000)
        }
    }

    /// A notification's body may be read as markup (the specification's
    /// `body-markup`): a provider's words are escaped, so no link or image of
    /// theirs is ever shown as one (docs/security.md).
    static func notificationBody(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(c)
            }
        }
        return out
    }

    func command(for event: Event) -> String? {
        switch event {
        case .loginRequired: hooks?.on_login_required
        case .refreshTokenExpiring: hooks?.on_refresh_token_expiring
        case .refreshFailed: hooks?.on_refresh_failed
        }
    }

    /// Runs `argv` detached: a shell that starts it in the background and
    /// exits at once, so no child is left to wait for.
    private func background(_ argv: [String], env: [String: String]) {
        let script = #""$@" </dev/null >/dev/null 2>&1 &"#
        _ = try? Posix.spawn(["/bin/sh", "-c", script, "sh"] + argv, env: env, capture: false, wait: true)
    }

    /// True, and marked, when `event` was not told for `id` within the last hour.
    private func firstInAnHour(_ event: Event, _ id: CredentialID) -> Bool {
        try? PrivateDirectory.ensure(runtimeDirectory)
        let mark = runtimeDirectory + "/event-\(event.rawValue)-" + CredentialVault.fileName(id)
        if OnceMark.seen(mark, within: 3600, now: Int64(Date().timeIntervalSince1970)) { return false }
        OnceMark.mark(mark)
        return true
    }
}
