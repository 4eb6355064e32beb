import ArgumentParser
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    /// Sets up the file vault as a server needs it (docs/headless.md): created
    /// now, recorded as the backend, and its key sealed by the TPM so that no
    /// one types a passphrase and no disk holds the key in the clear.
    struct Init: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Create the file vault, make it the backend, and choose what opens it (a passphrase or the TPM).",
            discussion: """
                With --key tpm the vault's key is sealed by this machine's TPM 2.0: commands, cron jobs and the \
                agent open the vault without a passphrase. The passphrase chosen (or typed) here stays the recovery \
                passphrase: it opens the vault when the TPM cannot (a replaced board, a cleared TPM), and running \
                init --key tpm again with it seals the key to the TPM as it is then. --key passphrase forgets the \
                sealed key. Run again on an existing vault, init asks its passphrase and changes only the key.
                """)

        enum Key: String, ExpressibleByArgument, CaseIterable {
            case passphrase, tpm
        }

        @Option(help: "What opens the vault: passphrase, or tpm (sealed by this machine's TPM 2.0).")
        var key: Key = .passphrase

        @Option(
            help: ArgumentHelp(
                "Bind the sealed key to these PCRs of the SHA-256 bank (comma-separated, e.g. 7): a changed boot chain then needs the recovery passphrase.",
                valueName: "list"))
        var pcrs: String?

        @Flag(help: "Print what was done as JSON: vault, key, pcrs, backend_recorded.")
        var json = false

        func validate() throws {
            if pcrs != nil, key != .tpm {
                throw ValidationError("a PCR list (--pcrs) binds a TPM-sealed key: use it with --key tpm")
            }
            _ = try pcrMask()
        }

        private func pcrMask() throws -> UInt32 {
            guard let pcrs else { return 0 }
            var mask: UInt32 = 0
            for part in pcrs.split(separator: ",", omittingEmptySubsequences: false) {
                guard let n = Int(String(part).trimmedSpaces()), (0...23).contains(n) else {
                    throw ValidationError(
                        "the PCR list (--pcrs) is a comma-separated list of PCR numbers from 0 to 23, not \(pcrs)")
                }
                mask |= 1 << n
            }
            return mask
        }

        func run(in context: Session) throws {
            let (choice, chosenBy) = try context.backend
            if choice == .etcd || choice == .secretService, chosenBy == .environment {
                throw TokenVaultError.usage(
                    "\(EnvironmentVariable.backend.name) is \(choice.rawValue): init sets up the file vault",
                    hint: "unset \(EnvironmentVariable.backend.name), or set it to file")
            }
            if choice == .etcd {
                throw TokenVaultError.usage(
                    "backend is etcd in \(context.settings.configPath): init sets up the file vault, and the fleet vault's key is its own (docs/fleet.md)"
                )
            }
            var backends = context.backends
            backends.interactive = true
            let vault = try backends.fileVault()
            let created = !vault.exists
            if created { try vault.modify { _ in } } else { try vault.prepareToWrite() }
            // The user chose the file vault: a Secret Service that answers later does not take over.
            var recorded = false
            if choice != .file {
                try Config.setBackend(BackendChoice.file.rawValue, context.settings)
                recorded = true
            }
            var lines = [created ? "created the file vault \(vault.path)" : "the file vault is \(vault.path)"]
            if recorded {
                lines.append(
                    "recorded backend = \"file\" in \(context.settings.configPath) (a Secret Service that starts later does not take over)"
                )
            }
            var fields: [String: JSONValue] = [
                "vault": .string(vault.path), "key": .string(key.rawValue), "backend_recorded": .bool(recorded),
                "created": .bool(created),
            ]
            switch key {
            case .tpm:
                let sealed = try vault.sealKey(tcti: context.settings[.tpmTCTI], pcrs: try pcrMask())
                let bound =
                    sealed.pcrList.isEmpty
                    ? "" : ", bound to PCR " + sealed.pcrList.map(String.init).joined(separator: ",")
                lines.append(
                    "the vault key is sealed by the TPM\(bound) in \(SealedKey.path(forVault: vault.path)): commands open the vault without a passphrase"
                )
                lines.append(
                    "keep the passphrase somewhere safe: it is the recovery passphrase, the only way in when the TPM cannot unseal the key"
                )
                fields["pcrs"] = .array(sealed.pcrList.map { .integer(Int64($0)) })
            case .passphrase:
                if try vault.removeSealedKey() {
                    lines.append("forgot the TPM-sealed key: the passphrase opens the vault")
                } else {
                    lines.append("the passphrase opens the vault")
                }
            }
            context.result(lines.joined(separator: "\n"), json: json, fields)
        }
    }
}
