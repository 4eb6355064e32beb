import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

/// `delete` and `logout`: delete a credential locally.
protocol DeletesCredential: SessionCommand {
    var credential: CredentialOptions { get }
    var json: Bool { get }
}

extension DeletesCredential {
    func run(in context: Session) throws {
        let id = try credential.id(in: context, registrations: true)
        let stored = try? context.vault().load(id)
        let removed = try context.vault().delete(id)
        guard removed else {
            // Another application's item under that name is never deleted (docs/security.md).
            if let foreign = try context.store().foreignNote(id) {
                throw TokenVaultError.notFound(
                    service: id.service.description, account: id.account,
                    hint: "\(foreign), which tokenvault never deletes; \(id.foreignItemRemoval)"
                )
            }
            throw try context.notFound(id, deleting: true)
        }
        if let issuer = stored?.issuer, !id.isRegistration { Self.retireRegistrations(of: issuer, context: context) }
        context.result(
            "deleted \(id)", json: json,
            ["service": .string(id.service.description), "account": .string(id.account), "deleted": .bool(true)])
    }
}

extension DeletesCredential {
    /// With the last credential of an authorization server gone, the
    /// registrations tokenvault made there that the server lets it manage
    /// (RFC 7592) are deleted at the server, then here (docs/providers.md).
    static func retireRegistrations(of issuer: String, context: Session) {
        guard let vault = try? context.vault(), let all = try? vault.listLocated(),
            !all.contains(where: { $0.credential.issuer == issuer }),
            let kept = try? vault.registrations(for: issuer)
        else { return }
        let transport = CurlTransport(timeout: (try? context.httpTimeout) ?? 30, proxies: context.proxies)
        for r in kept where r.registrationClientURI != nil {
            guard r.deleteAtServer(transport: transport),
                let regID = try? ClientRegistration.id(issuer: issuer, clientID: r.clientID),
                (try? vault.delete(regID)) == true
            else { continue }
            context.output.notice(
                "deleted tokenvault's registration \(OutsideText.line(r.clientID, limit: 80)) at \(OutsideText.line(issuer)): no credential uses it now"
            )
        }
    }
}

extension TokenVault {
    struct Delete: DeletesCredential {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete a credential locally (the provider is not told; see revoke).")

        @OptionGroup var credential: CredentialOptions

        @Flag(help: "Print what was done as JSON: service, account, deleted.")
        var json = false
    }

    /// `delete` under the name other tools use. A command of its own rather
    /// than an alias: the generated completion scripts know commands, not
    /// aliases, so `logout <TAB>` offered the subcommands instead of services.
    struct Logout: DeletesCredential {
        static let configuration = CommandConfiguration(
            commandName: "logout",
            abstract: "The same as delete: delete a credential locally.")

        @OptionGroup var credential: CredentialOptions

        @Flag(help: "Print what was done as JSON: service, account, deleted.")
        var json = false
    }
}
