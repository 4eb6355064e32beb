internal import CTokenVault
import Dispatch
import Glibc

/// A head start for the lookup a `get` is about to make: most of a lookup's
/// time is libsecret's own start (loading GLib, GIO and libgcrypt, connecting
/// to the bus, opening a session with its Diffie-Hellman exchange), and none
/// of it depends on which credential is asked for. Started first thing on a
/// thread of its own, it runs while the arguments are parsed on the main
/// thread; the lookup then waits for it (within the same D-Bus deadline) and
/// reuses libsecret's one shared backend and session.
/// It loads libsecret and asks the bus only when the command will: the
/// backend resolves to auto or secret-service (from TOKENVAULT_BACKEND, else
/// from the config's `backend` setting) and a session bus is configured: a
/// `get` from the file vault still maps no part of GLib.
public final class SecretServiceHeadStart: Sendable {
    private let ready = DispatchSemaphore(value: 0)

    /// Starts it (`Plan.startHeadStart`, on the main thread, before any store
    /// is opened). Nil when the Secret Service will not be asked (as far as
    /// the environment says).
    static func start(_ settings: Settings, missingBus: String?) -> SecretServiceHeadStart? {
        guard missingBus == nil else { return nil }
        // One that is not a backend is the command's error to report.
        guard let forced = try? settings.backendOverride.map({ $0 == .auto || $0 == .secretService }) ?? true, forced
        else { return nil }
        let started = SecretServiceHeadStart()
        Posix.spawnThread(stackSize: 1 << 22, beside: true) {
            // A config that cannot be read is reported by the command itself.
            if Config.backendChoice(settings)?.readsFirst(missingBus: missingBus) == .secretService {
                _ = tv_secret_prepare()
            }
            started.ready.signal()
        }
        return started
    }

    /// Returns once the head start is over.
    func wait() {
        ready.wait()
        ready.signal()
    }
}
