import ArgumentParser
import TokenVaultKit

/// The root command.
public struct TokenVault: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "tokenvault",
        abstract: "A vault for OAuth credentials: stores tokens per API host and prints them for shell scripts.",
        discussion: """
            Credentials are kept per service, keyed by the API host (api.twitter.com), in the \
            freedesktop Secret Service through libsecret, or in a file encrypted with libsodium \
            where no Secret Service answers.

            EXIT STATUS
              0   success
              1   unexpected internal failure (a bug)
              3   no credential stored for that service/account
              4   login required: expired and cannot be refreshed
              64  usage error (bad arguments, invalid service name)
              65  bad input data: malformed stdin, unparseable provider response
              69  the requested backend is unavailable
              74  vault unreadable, unwritable, corrupted or tampered
              75  temporary failure: network error, timeout, provider 5xx; retry later
              76  provider refused: invalid_client, unauthorized_client, invalid_scope, ...
              77  no permission: vault locked and no passphrase source, wrong passphrase, unsafe permissions
              78  configuration error: unknown provider, missing client id, invalid config file

            ENVIRONMENT
              TOKENVAULT_BACKEND           auto | secret-service | file (overrides the config)
              TOKENVAULT_CONFIG            config file (default $XDG_CONFIG_HOME/tokenvault/config.toml)
              TOKENVAULT_VAULT             file vault (default $XDG_DATA_HOME/tokenvault/vault)
              TOKENVAULT_PASSPHRASE_FILE   file holding the vault passphrase
              TOKENVAULT_PASSPHRASE_COMMAND  command printing the vault passphrase
              TOKENVAULT_PASSPHRASE        the vault passphrase itself
              TOKENVAULT_KEY_TTL           seconds the derived vault key stays cached (default 900, 0 = never)
              TOKENVAULT_KDF_PROFILE       interactive | moderate | sensitive: Argon2id cost of a new vault
              TOKENVAULT_DBUS_TIMEOUT      seconds to wait for the Secret Service (default 3)
            """,
        version: "0.1.0",
        subcommands: [
            Login.self, Set.self, Get.self, List.self, Status.self, Refresh.self, Revoke.self, Header.self, Exec.self, Delete.self,
            Backend.self, Migrate.self, Lock.self, Providers.self,
        ]
    )

    public init() {}
}
