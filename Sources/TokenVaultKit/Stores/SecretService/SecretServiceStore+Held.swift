internal import CTokenVault
import Dispatch
import FoundationEssentials
import Glibc

/// A call the Secret Service holds (docs/config.md, "Backends").
extension SecretServiceStore {
    /// What the Secret Service answered, or the deadline's error when it did
    /// not in time. A provider that is there (it owns its name on the bus) but
    /// holds the call — KeePassXC and KWallet do while their database waits to
    /// be unlocked or an access request waits for an answer — is waited for up
    /// to the unlock timeout, then 77 (docs/config.md): never taken for a
    /// Secret Service that is not there, so nothing reads as "not stored" and
    /// nothing is written to the file vault instead.
    func answered<T: Sendable>(
        _ what: String, _ body: @escaping @Sendable () -> Result<T, TokenVaultError>
    ) throws -> Result<T, TokenVaultError> {
        let (bound, bus, headStart) = (timeout, self.bus, self.headStart)
        let pending = PendingCall<Result<T, TokenVaultError>> {
            headStart?.wait()
            return body()
        }
        let answer = pending.wait(timeout) {
            "waiting for the Secret Service: \(WaitLine.left(bound, $0)) of \(bound.shortText) s to \(what) (bus \(bus))"
        }
        if let answer { return answer }
        let owned = withDeadline(1, { tv_secret_owned() })
        if owned == 0 {
            // It quit while the call was under way: nobody holds it.
            throw TokenVaultError.backendUnavailable("the Secret Service could not \(what): \(Self.notRunning)")
        }
        guard owned == 1 else {
            throw TokenVaultError.backendUnavailable(
                "the Secret Service did not answer within \(timeout.shortText) s while trying to \(what)",
                hint:
                    "is the keyring locked or the session bus stuck? unlock it, or use \(EnvironmentVariable.backend.name)=file"
            )
        }
        // It is there, and holds the call: its collection waits to be
        // unlocked, or an access request for an answer. Which one, its
        // collection's state says (a property read, answered meanwhile).
        let held = Held(
            state: withDeadline(1) { () -> (Int32, String?) in
                var label: UnsafeMutablePointer<CChar>?
                let state = tv_default_collection_state(&label)
                return (state, label.map { _ in SecretServiceStore.takeMessage(&label) })
            }, provider: SecretServiceProvider.answering(timeout: 1), desktop: unlock.desktop)
        let more = max(unlock.timeout - timeout, 0)
        if more > 0 {
            WaitLine.announce("\(held.waitsFor), for at most \(more.shortText) s")
            // The wait is the unlock timeout's, not D-Bus's: a call D-Bus gave up
            // on while the provider still holds it (its dialog open) is made again.
            let end = DispatchTime.now().uptimeNanoseconds + UInt64(more * 1e9)
            func remaining() -> Double {
                let now = DispatchTime.now().uptimeNanoseconds
                return now < end ? Double(end - now) / 1e9 : 0
            }
            var call = pending
            while remaining() > 0,
                let late = call.wait(
                    remaining(), waiting: { "\(held.waitsFor) (\($0) s of at most \(more.shortText) s)" })
            {
                guard case .failure(let error) = late, error.errorText.contains(TV_SECRET_NO_ANSWER) else {
                    return late
                }
                call = PendingCall { body() }
            }
        }
        throw held.error(what, waited: timeout + more)
    }
}

/// What a provider that holds a call waits for (docs/config.md): its
/// collection to be unlocked, or an access request to be answered.
private struct Held {
    /// The default collection's name, and whether it is locked (nil: unknown).
    var name: String
    var locked: Bool?
    var provider: SecretServiceProvider?
    var desktop: Bool
    /// It answered, and has no collection the `default` alias names (a write
    /// then asks its user to create one).
    var noDefault: Bool

    init(state: (Int32, String?)?, provider: SecretServiceProvider?, desktop: Bool) {
        name = state?.1.map { $0.isEmpty ? "(unnamed)" : "\u{201C}\($0)\u{201D}" } ?? "(default)"
        locked = state.flatMap { $0.0 < 0 ? nil : $0.0 == 1 }
        noDefault = state.map { $0.0 < 0 } ?? false
        self.provider = provider
        self.desktop = desktop
    }

    var waitsFor: String {
        if noDefault { return "waiting for the Secret Service, which has no default collection, to answer" }
        switch locked {
        case true?: return "waiting for the Secret Service collection \(name) to be unlocked in its application"
        case false?: return "waiting for an answer to the Secret Service's access request in its application"
        case nil: return "waiting for the Secret Service to answer (an unlock or an access request is pending)"
        }
    }

    func error(_ what: String, waited: Double) -> TokenVaultError {
        let within = "within \(waited.shortText) s"
        let wait = "\(EnvironmentVariable.unlockTimeout.name)=SECONDS waits that long for it"
        if noDefault {
            let who = provider.map { " (\($0.program))" } ?? ""
            return .permission(
                "the Secret Service\(who) has no default collection and holds the request to \(what) (it asks its user to create one); nothing was changed",
                hint: "\((provider ?? .other("")).defaultCollectionHint), then try again")
        }
        switch locked {
        case true?:
            return SecretServiceStore.locked(
                name, why: "it was not unlocked \(within)", what: what,
                how: provider?.unlockHint(desktop: desktop) ?? "unlock it in its application")
        case false?:
            return .permission(
                "the Secret Service holds the request to \(what): its access request for collection \(name) was not answered \(within); nothing was changed",
                hint: "\((provider ?? .other("")).accessHint), then try again; \(wait)")
        case nil:
            return .permission(
                "the Secret Service holds the request to \(what) and did not answer \(within): its database is locked, or an access request waits for an answer; nothing was changed",
                hint: "unlock it (or answer its access request), then try again; \(wait)")
        }
    }
}
