import ArgumentParser
import Foundation
import TokenVaultKit

extension TokenVault {
    struct Lock: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Forget the cached file-vault key; the next use asks for the passphrase again.")

        func run() throws {
            let n = KernelKeyring().forgetAll()
            Output.notice(n == 0 ? "no cached vault key" : "forgot \(n) cached vault key\(n == 1 ? "" : "s")")
        }
    }
}
