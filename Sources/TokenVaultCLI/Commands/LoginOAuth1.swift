import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault.Login {
    /// OAuth 1.0a: loopback callback, or `oob` and a PIN with --no-browser.
    func loginOAuth1(_ name: String, account: String, context: Session) throws {
        if mode == .device {
            throw TokenVaultError.usage("OAuth 1.0a has no device flow; use --no-browser for the PIN")
        }
        if !scopes.isEmpty {
            throw TokenVaultError.usage("OAuth 1.0a has no scopes (Flickr: set perms in the config)")
        }
        let p = try context.oauth1Provider(name)
        let login = OAuth1Login(
            provider: p, transport: CurlTransport(timeout: try context.httpTimeout, proxies: context.proxies),
            clock: context.clock, notify: { Output.notice($0) })
        let id = CredentialID(service: p.service, account: account)
        var pin = mode == .noBrowser
        if mode == nil, let why = Browser.unavailable(context.settings) {
            Output.notice(
                "no browser can open here (\(why)): type the PIN the provider shows instead (--browser opens one anyway)"
            )
            pin = true
        }
        sayNothingStored(id, provider: p.name, before: try checkOwner(id, provider: p.name, context: context))
        guard let held = try pendingLogin(id, provider: p.name, context: context) else { return }
        defer { held.release() }
        let credential =
            pin
            ? try login.pin(id: id) { Swift.readLine() }
            : try login.loopback(id: id, port: port, timeout: Double(timeout)) {
                Browser.open($0, settings: context.settings, notices: context.notices)
            }
        try store(credential, provider: p.name, context: context)
        announce(credential, provider: p.name, context: context)
    }
}
