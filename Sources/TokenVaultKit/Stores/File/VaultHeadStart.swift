import Glibc

/// The file vault opened on the read-ahead thread while `get` is parsed
/// (docs/benchmarks.md, "The vault read ahead"): with the cached key only
/// (never a prompt, a passphrase source or a derivation), and taken by the
/// run's first read of the same vault file -- the same file by device,
/// inode, size and times, or it is read again. Whatever goes wrong ahead is
/// left for that read to meet and report.
enum VaultHeadStart {
    struct Opened {
        var plain: VaultPlaintext
        var key: SecureBytes
        var header: VaultFormat.Header
        var identity: [Int]
    }

    /// What was opened ahead (`ahead`), when `st` (the file opened now) is
    /// the same file; waited for, and taken once. Anything else is wiped.
    static func take(_ ahead: HeadStart<Opened>?, path: String, _ st: stat) -> Opened? {
        guard let ahead, ahead.path == path, let opened = ahead.take() else { return nil }
        guard opened.identity == Posix.identity(st) else {
            opened.plain.wipe()
            return nil
        }
        return opened
    }
}

extension FileStore {
    /// The `get` hot path's vault read ahead (`Plan.startHeadStart`, on its
    /// thread): opened only where the command will read it first
    /// (`BackendChoice.readsFirst`, of the backend the environment and the
    /// config's `backend` name), and with the cached key alone.
    static func openForHeadStart(_ settings: Settings, missingBus: String?) -> VaultHeadStart.Opened? {
        guard Config.backendChoice(settings)?.readsFirst(missingBus: missingBus) == .file,
            let store = try? Backends(settings: settings).fileVault()
        else { return nil }
        return try? store.openWithCachedKey()
    }
}
