import Glibc

/// The file vault opened on the read-ahead thread while `get` is parsed
/// (docs/benchmarks.md, "The vault read ahead"): with the cached key only
/// (never a prompt, a passphrase source or a derivation), and taken by the
/// process's first read of the same vault file -- the same file by device,
/// inode, size and times, or it is read again. Whatever goes wrong ahead is
/// left for that read to meet and report.
enum VaultAhead {
    struct Opened {
        var plain: VaultPlaintext
        var key: SecureBytes
        var header: VaultFormat.Header
        var identity: [Int]
    }

    /// The vault being opened ahead; `FileStore.readAhead` marks it.
    static let slot = AheadSlot<Opened>()

    /// What was opened ahead of `path`, when `st` (the file opened now) is
    /// the same file; waited for, and taken once. Anything else is wiped.
    static func take(path: String, _ st: stat) -> Opened? {
        guard let opened = slot.take(path: path) else { return nil }
        guard opened.identity == Posix.identity(st) else {
            opened.plain.wipe()
            return nil
        }
        return opened
    }

    /// Drops, and wipes, what was opened ahead and not taken.
    static func forget() { slot.take(path: nil)?.plain.wipe() }

}

extension FileStore {
    /// The `get` hot path's vault read ahead: marks the vault of `settings`
    /// now (call on the main thread, before any store reads it) and gives
    /// the work for the read-ahead thread. The vault is opened only where
    /// the command will read it first: backend file, or auto without a
    /// session bus (as the environment and the config's `backend` say).
    public static func readAhead(_ settings: Settings) -> @Sendable () -> Void {
        let ahead = VaultAhead.slot.mark(path: settings.vaultPath)
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
