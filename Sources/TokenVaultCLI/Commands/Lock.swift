import ArgumentParser
import Foundation
import TokenVaultKit

extension TokenVault {
    struct Lock: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "lock",
            abstract: "Forget the cached file-vault key; the next use asks for the passphrase again.")

        @Flag(help: "Forget the cached keys of every vault, not only the one in use.")
        var all = false

        func run() throws {
            let context = Context()
            if all {
                let n = KernelKeyring().forgetAll()
                Output.notice(n == 0 ? "no cached vault key" : "forgot \(n) cached vault key\(n == 1 ? "" : "s")")
                return
            }
            let vault = try Backends(environment: context.environment, keyCache: KernelKeyring()).fileVault()
            Output.notice(vault.forgetCachedKey() ? "forgot the cached key of \(vault.path)" : "no cached key for \(vault.path)")
        }
    }
}
