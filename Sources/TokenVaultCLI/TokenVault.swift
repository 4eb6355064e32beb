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
            Backend.self, Migrate.self, Lock.self, Unlock.self, Providers.self, GitCredential.self, MCP.self,
            Agent.self,
            Doctor.self,
            Setup.self,
        ]
    )

    public init() {}
}
