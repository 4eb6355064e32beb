import ArgumentParser
import TokenVaultKit

/// The root command.
public struct TokenVault: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "tokenvault",
        abstract: "A vault for OAuth credentials: stores tokens per API host and prints them for shell scripts.",
        discussion: ManualText.helpDiscussion,
        version: "0.1.0",
        subcommands: [
            Login.self, SetCredential.self, Get.self, List.self, Status.self, Refresh.self, Revoke.self, Header.self,
            Exec.self, Delete.self, Logout.self,
            Init.self, Export.self, Import.self, Backend.self, Migrate.self, Lock.self, Unlock.self, Providers.self,
            GitCredential.self, MCP.self,
            Agent.self,
            Doctor.self,
            Setup.self, HelpEnvironment.self, HelpExitCodes.self,
        ]
    )

    public init() {}
}

extension TokenVault {
    /// `tokenvault help environment` (a topic, not a command in the list):
    /// every variable, from the same table as the man page's ENVIRONMENT.
    struct HelpEnvironment: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "environment", abstract: "The environment variables tokenvault reads or sets.",
            discussion: ManualText.environmentText, shouldDisplay: false)

        func run(in context: Session) { context.output.value(ManualText.environmentText) }
    }

    /// `tokenvault help exit-codes`: the exit status table of the man page.
    struct HelpExitCodes: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "exit-codes", abstract: "What each exit status means.",
            discussion: ManualText.exitCodesText, shouldDisplay: false)

        func run(in context: Session) { context.output.value(ManualText.exitCodesText) }
    }
}
