import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    /// `lock`'s other half (docs/reference.md): the passphrase asked once, the
    /// key cached in the kernel keyring for its time to live, so that
    /// commands without a passphrase source (an MCP client's bridge, a cron
    /// job, the agent) open the vault until it expires or `lock` runs.
    struct Unlock: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "unlock",
            abstract:
                "Ask for the vault passphrase once and cache the key (file or etcd) for key_ttl seconds."
        )

        @Flag(help: "Print what was done as JSON: vault, cached_for (seconds).")
        var json = false

        func run(in context: Session) throws {
            let ttl = try context.settings.keyTTL
            var backends = Backends(settings: context.settings, keyCache: KernelKeyring())
            backends.config = { try context.config }
            backends.interactive = true
            let what: String
            switch try context.backendChoice {
            case .etcd:
                let etcd = try backends.etcdStore()
                _ = try etcd.listIDs()
                what = "the fleet vault (prefix \(etcd.settings.prefix))"
            case .secretService:
                _ = try context.store().list()  // the keyring's own unlock prompt, where one is needed
                context.result(
                    "the Secret Service is unlocked (it keeps its own collections unlocked, not tokenvault)",
                    json: json, ["vault": .string("secret-service"), "cached_for": .integer(0)])
                return
            case .none:
                context.result(
                    "backend is none: nothing is stored, so there is nothing to unlock", json: json,
                    ["vault": .string("none"), "cached_for": .integer(0)])
                return
            case .auto, .file:
                let vault = try backends.fileVault()
                guard vault.exists else {
                    context.result(
                        "no file vault at \(vault.path) yet: nothing to unlock; the first command that stores a credential creates it, asking for a new passphrase on a terminal (or taking it from \(EnvironmentVariable.passphraseFile.name))",
                        json: json,
                        ["vault": .string(vault.path), "cached_for": .integer(0)])
                    return
                }
                _ = try vault.listIDs()
                // For the time it names, also when the key was cached already.
                vault.cacheKeyAgain(ttl: ttl)
                what = vault.path
            }
            if ttl == 0 {
                context.result(
                    "opened \(what), but nothing stays unlocked: \(context.settings.keyNeverCached)", json: json,
                    ["vault": .string(what), "cached_for": .integer(0)])
                return
            }
            context.result(
                "unlocked \(what); the key is cached for \(Format.ago(Int64(ttl))) (tokenvault lock forgets it)",
                json: json, ["vault": .string(what), "cached_for": .integer(Int64(ttl))])
        }
    }
}
