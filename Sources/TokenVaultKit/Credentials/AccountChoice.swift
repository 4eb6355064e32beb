/// The account a command acts on (docs/providers.md): `--account`, else
/// `TOKENVAULT_ACCOUNT`, else `default`; with the reason, for `status` and `--verbose`.
public struct AccountChoice: Sendable {
    public enum Source: Sendable { case option, environment, standard }

    public var name: String
    public var source: Source

    /// The reason, in `status`'s and `--verbose`'s words.
    public var reason: String {
        switch source {
        case .option: "--account"
        case .environment: "from \(EnvironmentVariable.account.name)"
        case .standard: "the default"
        }
    }

    public init(option: String?, settings: Settings) throws {
        let variable = EnvironmentVariable.account.name
        if let option {
            (name, source) = (option, .option)
        } else if let given = settings.account {
            (name, source) = (given, .environment)
        } else {
            (name, source) = (Credential.defaultAccount, .standard)
        }
        do {
            try CredentialID.validateAccount(name)
        } catch let error as TokenVaultError where option == nil {
            throw TokenVaultError.usage("\(variable): \(error.errorText)")
        }
    }
}
