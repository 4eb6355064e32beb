import Dispatch
import Glibc

/// The file vault opened on the read-ahead thread while `get` is parsed
/// (docs/benchmarks.md, "The vault read ahead"): with the cached key only
/// (never a prompt, a passphrase source or a derivation), and taken by the
/// process's first read of the same vault file -- the same file by device,
/// inode, size and times, or it is read again. Whatever goes wrong ahead is
/// left for that read to meet and report.
final class VaultAhead: @unchecked Sendable {
    struct Opened {
        var plain: VaultPlaintext
        var key: SecureBytes
        var header: VaultFormat.Header
        var identity: [Int]
    }

    private static let pending = Locked<VaultAhead?>(nil)
    let path: String
    private let done = DispatchSemaphore(value: 0)
    /// Written once, before `done` is signalled.
    private var opened: Opened?

    private init(path: String) { self.path = path }

    /// Marks `path` as being opened ahead: the first read of it in this
    /// process waits for `finish`, which the caller runs on another thread.
    static func mark(path: String) -> VaultAhead {
        let ahead = VaultAhead(path: path)
        pending.withLock { $0 = ahead }
        return ahead
    }

    func finish(_ opened: Opened?) {
        self.opened = opened
        done.signal()
    }

    /// What was opened ahead of `path`, when `st` (the file opened now) is
    /// the same file; waited for, and taken once. Anything else is wiped.
    static func take(path: String, _ st: stat) -> Opened? {
        guard
            let ahead = pending.withLock({ p -> VaultAhead? in
                guard let a = p, a.path == path else { return nil }
                p = nil
                return a
            })
        else { return nil }
        ahead.done.wait()
        guard let opened = ahead.opened else { return nil }
        guard opened.identity == identity(st) else {
            opened.plain.wipe()
            return nil
        }
        return opened
    }

    /// Drops, and wipes, what was opened ahead and not taken.
    static func forget() {
        guard
            let ahead = pending.withLock({ p -> VaultAhead? in
                defer { p = nil }
                return p
            })
        else { return }
        ahead.done.wait()
        ahead.opened?.plain.wipe()
    }

    static func identity(_ st: stat) -> [Int] {
        [
            Int(st.st_dev), Int(st.st_ino), Int(st.st_size), Int(st.st_mtim.tv_sec), Int(st.st_mtim.tv_nsec),
            Int(st.st_ctim.tv_sec), Int(st.st_ctim.tv_nsec),
        ]
    }
}

extension FileStore {
    /// The `get` hot path's vault read ahead: marks the vault of `settings`
    /// now (call on the main thread, before any store reads it) and gives
    /// the work for the read-ahead thread. The vault is opened only where
    /// the command will read it first: backend file, or auto without a
    /// session bus (as the environment and the config's `backend` say).
    public static func readAhead(_ settings: Settings) -> @Sendable () -> Void {
        let ahead = VaultAhead.mark(path: settings.vaultPath)
        return {
            var opened: VaultAhead.Opened?
            if let choice = Config.backendChoice(settings),
                choice == .file || (choice == .auto && SecretServiceStore.missingBus(settings) != nil),
                let store = try? Backends(settings: settings).fileVault()
            {
                opened = try? store.openWithCachedKey()
            }
            ahead.finish(opened)
        }
    }

    /// Forgets a vault read ahead and not taken (a command that failed first).
    public static func forgetReadAhead() { VaultAhead.forget() }
}
