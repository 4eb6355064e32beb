internal import CTokenVault
import FoundationEssentials
import Glibc

/// A page shown in the user's graphical session by a process that has no
/// display of its own (docs/adapters.md, "MCP servers", where a login for
/// more scopes opens): MCP
/// clients start the bridge with HOME, PATH, SHELL and TERM alone, but the
/// session bus (found as a login finds it) offers the XDG desktop portal's
/// OpenURI, and the systemd user manager knows the session's DISPLAY or
/// WAYLAND_DISPLAY, which xdg-open needs.
public enum DesktopSession {
    /// How a page can be opened from here.
    public enum Way: Equatable, Sendable {
        /// org.freedesktop.portal.OpenURI on the session bus.
        case portal
        /// A browser started with these variables of the graphical session.
        case display([String: String])
    }

    static let portalName = "org.freedesktop.portal.Desktop"
    /// The graphical session's variables a browser needs, from the user manager.
    static let displayVariables = [
        EnvironmentVariable.display.name, EnvironmentVariable.waylandDisplay.name, "XAUTHORITY",
    ]

    /// The way this session offers, asked of the session bus (a second at
    /// most each); nil when there is no bus, no portal and no display known
    /// to the user manager.
    public static func way(_ settings: Settings) -> Way? {
        guard settings.sessionBus != nil else { return nil }
        if tv_bus_offers(portalName, 1000) == 1 { return .portal }
        guard let raw = tv_user_manager_environment(1000) else { return nil }
        defer { free(raw) }
        var found: [String: String] = [:]
        for line in String(cString: raw).split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            let name = String(line[..<eq])
            if displayVariables.contains(name) { found[name] = String(line[line.index(after: eq)...]) }
        }
        let shows =
            found[EnvironmentVariable.display.name] != nil || found[EnvironmentVariable.waylandDisplay.name] != nil
        return shows ? .display(found) : nil
    }

    /// Asks the portal to open `url`; true when it took the request.
    public static func openThroughPortal(_ url: String) -> Bool {
        tv_portal_open_uri(url, 5000) == 1
    }
}
