import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct Exec: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "exec",
            abstract: "Run a command with the access token in its environment.",
            discussion: """
                Sets \(EnvironmentVariable.accessToken.name) (and \(EnvironmentVariable.tokenSecret.name) for OAuth 1.0a), removes \
                every \(EnvironmentVariable.passphrase.name)* variable, and replaces itself with CMD, so it exits with CMD's status (127 when CMD cannot be run).

                  tokenvault exec api.weibo.com -- ./upload.sh
                """)

        @OptionGroup var credential: CredentialOptions

        @Argument(
            parsing: .postTerminator, help: ArgumentHelp("The command and its arguments, after --.", valueName: "cmd"),
            completion: .shellCommand(Completions.commandThenFiles))
        var command: [String]

        func run(in context: Session) throws {
            let c = try context.usable(try credential.id(in: context), minValid: nil)
            context.output.flushLater()  // before the process becomes CMD
            ChildEnvironment.scrubProcess()
            setenv(EnvironmentVariable.accessToken.name, c.accessToken, 1)
            if let secret = c.tokenSecret {
                setenv(EnvironmentVariable.tokenSecret.name, secret, 1)
            } else {
                unsetenv(EnvironmentVariable.tokenSecret.name)
            }
            var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) }
            argv.append(nil)
            execvp(command[0], &argv)
            let reason = String(cString: strerror(errno))
            context.output.error("cannot run \(command[0]): \(reason)", hint: nil)
            throw ExitCode(127)
        }
    }
}
