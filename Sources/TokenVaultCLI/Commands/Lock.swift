import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct Lock: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "lock",
            abstract: "Forget the cached vault key (file or etcd); the next use asks for the passphrase again.")

        @Flag(help: "Forget the cached keys of every vault, not only the one in use.")
        var all = false

        @Flag(help: "Print what was done as JSON: forgotten (the number of keys).")
        var json = false

        func run(in context: Session) throws {
            // A derivation under way (in the agent or any process) will not cache
            // its key from here on. The key is forgotten first; then the agent
            // is told, so that it stops using a passphrase source of its own and
            // does not put the key back (docs/agent.md, "Locked"); then it is
            // forgotten again, in case the agent cached it in between. An agent
            // that did not confirm is reported after, the key gone all the same.
            KernelKeyring().advanceGeneration()
            let forget = try forgetter(in: context)
            let result = forget()
            var agentFailure: Error?
            if !context.isAgent {
                do { try AgentClient.lock(settings: context.settings) } catch { agentFailure = error }
                _ = forget()
            }
            context.result(result.text, json: json, result.fields)
            if let agentFailure { throw agentFailure }
        }

        /// What forgets the key this `lock` is about, and says what it did.
        private func forgetter(in context: Session) throws -> () -> (text: String, fields: [String: JSONValue]) {
            if all {
                return {
                    let n = KernelKeyring().forgetAll()
                    return (
                        n == 0 ? "no cached vault key" : "forgot \(n) cached vault key\(n == 1 ? "" : "s")",
                        ["forgotten": .integer(Int64(n))]
                    )
                }
            }
            var backends = Backends(settings: context.settings, keyCache: KernelKeyring())
            backends.config = { try context.config }
            if try context.backendChoice == .etcd {
                let etcd = try backends.etcdStore()
                return {
                    let forgot = etcd.forgetCachedKey()
                    return (
                        forgot
                            ? "forgot the cached key of the fleet vault (prefix \(etcd.settings.prefix))"
                            : "no cached key for the fleet vault (prefix \(etcd.settings.prefix))",
                        ["forgotten": .integer(forgot ? 1 : 0), "vault": .string("etcd " + etcd.settings.prefix)]
                    )
                }
            }
            let vault = try backends.fileVault()
            return {
                let forgot = vault.forgetCachedKey()
                return (
                    forgot ? "forgot the cached key of \(vault.path)" : "no cached key for \(vault.path)",
                    ["forgotten": .integer(forgot ? 1 : 0), "vault": .string(vault.path)]
                )
            }
        }
    }
}
