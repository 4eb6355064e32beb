import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct Lock: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "lock",
            abstract: "Forget the cached vault key (file or etcd); the next use asks for the passphrase again.")

        @Flag(help: "Forget the cached keys of every vault, not only the one in use.")
        var all = false

        @Flag(help: "Print what was done as JSON: forgotten (the number of keys).")
        var json = false

        func run(in context: Context) throws {
            // A derivation under way (in the agent or any process) will not cache
            // its key from here on; the agent stops using a passphrase source of
            // its own, so that it does not put the key back (docs/agent.md, "Locked").
            KernelKeyring().advanceGeneration()
            if !context.isAgent { try AgentClient.lock(settings: context.settings) }
            if all {
                let n = KernelKeyring().forgetAll()
                context.result(
                    n == 0 ? "no cached vault key" : "forgot \(n) cached vault key\(n == 1 ? "" : "s")", json: json,
                    ["forgotten": .integer(Int64(n))])
                return
            }
            var backends = Backends(settings: context.settings, keyCache: KernelKeyring())
            backends.config = { try context.config }
            if try context.backendChoice == .etcd {
                let etcd = try backends.etcdStore()
                let forgot = etcd.forgetCachedKey()
                context.result(
                    forgot
                        ? "forgot the cached key of the fleet vault (prefix \(etcd.settings.prefix))"
                        : "no cached key for the fleet vault (prefix \(etcd.settings.prefix))", json: json,
                    ["forgotten": .integer(forgot ? 1 : 0), "vault": .string("etcd " + etcd.settings.prefix)])
                return
            }
            let vault = try backends.fileVault()
            let forgot = vault.forgetCachedKey()
            context.result(
                forgot ? "forgot the cached key of \(vault.path)" : "no cached key for \(vault.path)", json: json,
                ["forgotten": .integer(forgot ? 1 : 0), "vault": .string(vault.path)])
        }
    }
}
