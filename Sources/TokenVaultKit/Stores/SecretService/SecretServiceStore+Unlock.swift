internal import CTokenVault
import FoundationEssentials
import Glibc

/// A locked collection (docs/config.md, "Backends"): unlocked through the
/// keyring's own prompt on a desktop, or waited for, else 77 naming it.
extension SecretServiceStore {
    /// Waits for a locked default collection to be unlocked: through the
    /// keyring's own prompt on a desktop session, else by whoever unlocks it,
    /// for at most `unlock.timeout` seconds; 77 naming the collection when it
    /// stays locked. False when it was not locked, true when it was unlocked.
    @discardableResult
    func ensureUnlocked(_ what: String) throws -> Bool {
        let (locked, label) = try call("check whether the keyring is locked") {
            () -> Result<(Bool, String?), TokenVaultError> in
            var label: UnsafeMutablePointer<CChar>?
            let state = tv_default_collection_state(&label)
            return .success((state == 1, label.map { _ in SecretServiceStore.takeMessage(&label) }))
        }
        guard locked else { return false }
        // Unlocked where nobody needs to be asked (KWallet's open wallet reads as locked until then).
        if withDeadline(timeout, { tv_unlock_quietly() }) == 1 { return true }
        let name = label.map { "\u{201C}\($0)\u{201D}" } ?? "(the default one)"
        let deadline = Date().addingTimeInterval(unlock.timeout)
        var why =
            unlock.timeout > 0
            ? "it was not unlocked within \(unlock.timeout.shortText) s"
            : "\(EnvironmentVariable.unlockTimeout.name) is 0 (the default without a desktop session)"
        let most = unlock.timeout.shortText
        let drawn = { (seconds: Int) in
            "waiting for the keyring \(name) to be unlocked (\(seconds) s of at most \(most) s)"
        }
        if unlock.timeout > 0 {
            WaitLine.announce("waiting for the keyring \(name) to be unlocked, for at most \(most) s")
        }
        if unlock.timeout > 0, unlock.desktop {
            let answer = withDeadline(unlock.timeout, waiting: drawn) { () -> Int32 in
                var message: UnsafeMutablePointer<CChar>?
                let r = tv_unlock_default_collection(&message)
                if message != nil { _ = SecretServiceStore.takeMessage(&message) }
                return r
            }
            if answer == 1 { return true }
            if answer == 0 { why = "its unlock prompt was dismissed" }
        } else if unlock.timeout > 0 {
            // No prompt can be shown here: wait for it to be unlocked elsewhere, saying so on a terminal.
            let started = Date()
            var shown = 0
            defer { if shown > 0 { WaitLine.clear() } }
            while Date() < deadline {
                Posix.sleep(0.25)
                if withDeadline(timeout, { tv_default_collection_state(nil) }) == 0 { return true }
                let elapsed = Int(Date().timeIntervalSince(started))
                if WaitLine.enabled, elapsed > shown {
                    shown = elapsed
                    WaitLine.draw(drawn(elapsed))
                }
            }
        }
        // On a desktop its own prompt or seahorse unlocks it; without one, the daemon itself does.
        let how = (SecretServiceProvider.answering(timeout: timeout) ?? .gnomeKeyring).unlockHint(
            desktop: unlock.desktop)
        throw Self.locked(name, why: why, what: what, how: how)
    }

    /// 77 for a collection that stayed locked, however the wait went: the
    /// same words for every provider (docs/config.md, "Backends").
    static func locked(_ name: String, why: String, what: String, how: String) -> TokenVaultError {
        .permission(
            "the Secret Service collection \(name) is locked and \(why); cannot \(what); nothing was changed",
            hint: "\(how), then try again; \(EnvironmentVariable.unlockTimeout.name)=SECONDS waits for it")
    }
}
