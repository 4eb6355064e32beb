import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

/// SERVICE and --account, shared by every command that names one credential.
struct CredentialOptions: ParsableArguments {
    @Argument(
        help: ArgumentHelp(
            "A host (api.weibo.com), a URL (https://api.twitter.com/1.1/) or a provider name (weibo).",
            valueName: "service"), completion: .custom(Completions.services))
    var service: String

    @Option(
        help: "Which of several logins to the service (default: $\(EnvironmentVariable.account.name), else default).",
        completion: .custom(Completions.accounts))
    var account: String?

    @Flag(help: "Say on stderr which account is used, and why.")
    var verbose = false

    /// With `registrations`, `--account` may name a kept client registration
    /// (`tokenvault:client:…`): only `delete` does, to remove one (docs/reference.md).
    func id(in context: Session, registrations: Bool = false) throws -> CredentialID {
        let key = try context.serviceKey(service)
        if registrations, let account, CredentialID(service: key, account: account).isRegistration {
            return CredentialID(service: key, account: account)
        }
        let chosen = try AccountChoice(option: account, settings: context.settings)
        if verbose { context.output.notice("account \(chosen.name) (\(chosen.reason))") }
        return CredentialID(service: key, account: chosen.name)
    }
}

/// An option whose value is one of a few words (`--format`, `--sasl`,
/// `--to`): a word it does not know is refused with the closest one and
/// every valid one, on one line (the parser's own list is cut to its first
/// line by the error path and has no suggestion).
protocol Choice: CaseIterable, RawRepresentable where RawValue == String {}

extension Choice {
    static var names: [String] { allCases.map(\.rawValue) }

    /// The value `text` names; throws a `ChoiceError` naming the valid ones.
    static func parse(_ text: String) throws -> Self {
        guard let value = Self(rawValue: text.lowercased()) else {
            throw ChoiceError(text: Suggestion.text(for: text, in: names, listName: "one of"))
        }
        return value
    }
}

struct ChoiceError: Error, CustomStringConvertible {
    var text: String
    var description: String { text }
}
