/// How a person takes part in an OAuth 2.0 login (docs/providers.md): a
/// browser and the loopback redirect, paste mode, the device flow, or
/// nobody (client credentials).
public enum LoginFlow: Sendable, Equatable {
    case browser, paste, device, clientCredentials

    /// What the user asked for (`--browser`, `--no-browser`, `--device`).
    public enum Asked: Sendable {
        case browser, noBrowser, device
    }

    /// The flow asked for, else the one that can work here: with no way to
    /// open a browser, the device flow when the provider has one, else paste
    /// mode; `said` is the line that tells the user so.
    public static func choose(
        asked: Asked?, grant: OAuth2Provider.Grant, hasDevice: Bool, settings: Settings
    ) -> (flow: LoginFlow, said: String?) {
        if asked == .device { return (.device, nil) }
        if grant.fetchesAgain { return (.clientCredentials, nil) }
        if asked == .noBrowser { return (.paste, nil) }
        if asked == .browser { return (.browser, nil) }
        guard let why = Browser.unavailable(settings) else { return (.browser, nil) }
        if hasDevice {
            return (.device, "no browser can open here (\(why)): using the device flow (--browser opens one anyway)")
        }
        return (
            .paste,
            "no browser can open here (\(why)): paste mode, open the URL on any device (--browser opens one anyway)"
        )
    }
}
