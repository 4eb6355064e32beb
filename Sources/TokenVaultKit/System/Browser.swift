import Dispatch
import FoundationEssentials
import Glibc

/// Opens a URL for the user: `$BROWSER` (the URL as its last argument), else xdg-open.
public enum Browser {
    /// Why no browser can open here, or nil when one can: over SSH without a
    /// forwarded display, or with neither `$BROWSER` nor a display, nor a
    /// graphical session reached through the session bus (`DesktopSession`).
    public static func unavailable(_ settings: Settings) -> String? {
        if settings[.sshConnection] != nil, !settings.desktop { return "an SSH session without a display" }
        if settings[.browser] == nil, !settings.desktop, DesktopSession.way(settings) == nil {
            return
                "no $\(EnvironmentVariable.browser.name), \(EnvironmentVariable.display.name) or \(EnvironmentVariable.waylandDisplay.name), and no desktop portal or graphical session on the session bus"
        }
        return nil
    }

    /// Starts the browser; one that cannot start, or exits with a failure
    /// within its first half second, is reported at once (the URL is on the
    /// terminal already), so nobody waits out the login's timeout for nothing.
    public static func open(_ url: String, settings: Settings, notices: Notices) {
        var environment = ChildEnvironment.scrubbed(settings.environment)
        // No browser or display of its own (an MCP client's bridge): the session's.
        if settings[.browser] == nil, !settings.desktop, settings[.sshConnection] == nil {
            switch DesktopSession.way(settings) {
            case .portal?:
                if DesktopSession.openThroughPortal(url) { return }
            case .display(let graphical)?:
                environment.merge(graphical) { $1 }
            case nil:
                break
            }
        }
        let command: String
        if let browser = settings[.browser] {
            command = browser
        } else if let xdg = ["/usr/bin/xdg-open", "/usr/local/bin/xdg-open"].first(where: { (path: String) in
            access(path, X_OK) == 0
        }) {
            command = xdg
        } else {
            notices.notice(
                "no browser to open (set \(EnvironmentVariable.browser.name), or install xdg-utils): open the URL above yourself"
            )
            return
        }
        // $BROWSER may carry arguments ("firefox --new-window"): the shell splits it. The
        // browser lives on in the background; the shell reports how it ended if that was
        // within half a second, else 0.
        let watch =
            #"$1 "$2" & b=$!; for i in 1 2 3 4 5; do kill -0 "$b" 2>/dev/null || { wait "$b"; exit $?; }; sleep 0.1; done; exit 0"#
        do {
            let (status, _) = try Posix.spawn(
                ["/bin/sh", "-c", watch, "sh", command, url], env: environment,
                capture: false, wait: true)
            if status != 0 {
                notices.warning(
                    "the browser (\(OutsideText.line(command, limit: 80))) failed (exit \(status)\(status == 127 ? ": not found" : "")): open the URL above yourself"
                )
            }
        } catch {
            notices.warning("cannot start the browser: \(error.errorText); open the URL above yourself")
        }
    }
}
