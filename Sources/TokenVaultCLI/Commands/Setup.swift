import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct Setup: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "setup",
            abstract: "Set up git, kubectl or an MCP client to take their tokens from tokenvault, in one command.",
            subcommands: [Git.self, Kubectl.self, Mcp.self, ClientMetadata.self])
    }
}

extension TokenVault.Setup {
    struct Git: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "git",
            abstract: "Make tokenvault git's credential helper for a provider's git hosts.",
            discussion: """
                For each host a provider's git_hosts claims (github.com for github, gitlab.com for \
                gitlab, or your own): credential.https://HOST.helper is set to an empty value \
                first, so no helper set elsewhere (store, cache) ever receives the token, then to \
                tokenvault git-credential. Running it again changes nothing. Helpers of your own \
                for the host are named, kept aside (tokenvault.URL.replacedhelper) and put back \
                by --undo. Without HOST or PROVIDER: the hosts of every provider that has a \
                stored credential.

                  tokenvault setup git github --global
                  tokenvault setup git git.example.com --dry-run
                """)

        @Argument(
            help: ArgumentHelp(
                "A provider (github) or one of its git hosts (github.com).", valueName: "host-or-provider"),
            completion: .custom(Completions.providers))
        var target: String?

        @Flag(help: "Write the user's global git config, not the current repository's.")
        var global = false

        @Flag(name: .customLong("dry-run"), help: "Print the git commands instead of running them.")
        var dryRun = false

        @Flag(help: "Remove what setup git wrote.")
        var undo = false

        func run(in context: Session) throws {
            let env = context.settings
            let urls = try remotes(context)
            if !global, !dryRun {
                guard try Tool.run(["git", "rev-parse", "--git-dir"], settings: env).status == 0 else {
                    throw TokenVaultError.usage("not in a git repository", hint: "run it in one, or add --global")
                }
            }
            let scope = global ? "--global" : "--local"
            // A shell word, whatever the path holds (git runs '!…' helpers through sh).
            let helper = "!\(ShellWord.quoted(Tool.selfPath)) git-credential"
            for (url, provider) in urls {
                let key = "credential.\(url).helper"
                // Helpers of the user's own this replaces: kept aside, put back by --undo.
                let keptKey = "tokenvault.\(url).replacedhelper"
                func values(_ key: String) throws -> [String] {
                    try Tool.run(["git", "config", scope, "--get-all", key], settings: env).output
                        .split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
                }
                let current = try values(key)
                let kept = try values(keptKey)
                let ours = current == ["", helper]
                let replaced =
                    current.starts(with: ["", helper]) ? Array(current.dropFirst(2)) : current.filter { $0 != helper }
                var commands: [[String]] = []
                if undo {
                    if current.contains(helper) { commands.append(["git", "config", scope, "--unset-all", key]) }
                    for value in kept { commands.append(["git", "config", scope, "--add", key, value]) }
                    if !kept.isEmpty {
                        commands.append(["git", "config", scope, "--remove-section", "tokenvault.\(url)"])
                    }
                } else if !ours {
                    for value in replaced { commands.append(["git", "config", scope, "--add", keptKey, value]) }
                    if !current.isEmpty { commands.append(["git", "config", scope, "--unset-all", key]) }
                    commands.append(["git", "config", scope, "--add", key, ""])
                    commands.append(["git", "config", scope, "--add", key, helper])
                }
                if commands.isEmpty {
                    context.output.notice(
                        "\(url): \(undo ? "not set up by tokenvault; nothing to remove" : "already set up (provider \(provider))")"
                    )
                    continue
                }
                for argv in commands {
                    if dryRun {
                        context.output.value(Tool.shown(argv))
                    } else if try Tool.run(argv, settings: env).status != 0 {
                        throw TokenVaultError.config("\(Tool.shown(argv)) failed")
                    }
                }
                if dryRun { continue }
                let named = { (values: [String]) in
                    values.map { $0.isEmpty ? "''" : Quoted.text(OutsideText.line($0, limit: 200)) }.joined(
                        separator: ", ")
                }
                if undo {
                    context.output.notice(
                        "\(url): git no longer asks tokenvault"
                            + (kept.isEmpty ? "" : "; put back \(key) \(named(kept))"))
                } else {
                    if !replaced.isEmpty {
                        context.output.notice(
                            "\(url): replaces \(key) \(named(replaced)) (kept aside; --undo puts it back)")
                    }
                    context.output.notice("\(url): git asks tokenvault (provider \(provider)) for its token")
                }
            }
        }

        /// `scheme://host[:port]` of each remote to set up, with the provider that claims it.
        func remotes(_ context: Session) throws -> [(String, String)] {
            let directory = try context.providers
            let configPath = context.settings.configPath
            var claims: [(rule: GitHostRule, provider: String)] = []
            for name in directory.names {
                guard let hosts = directory.table(name)?.git_hosts else { continue }
                for h in hosts {
                    claims.append((try GitHostRule(parsing: h, provider: name, configPath: configPath), name))
                }
            }
            let chosen: [(rule: GitHostRule, provider: String)]
            if let target {
                let name = target.lowercased()
                if directory.names.contains(name) {
                    chosen = claims.filter { $0.provider == name }
                    guard !chosen.isEmpty else {
                        throw TokenVaultError.usage(
                            "provider \(name) claims no git host",
                            hint: "add git_hosts = [\"HOST\"] to [providers.\(Config.tableKey(name))] in \(configPath)")
                    }
                } else {
                    let rule = try GitHostRule(parsing: target, provider: "?", configPath: configPath)
                    chosen = claims.filter { $0.rule == rule }
                    guard !chosen.isEmpty else {
                        throw TokenVaultError.usage(
                            "no provider claims the git host \(Quoted.text(target))",
                            hint: "add it to git_hosts of its provider in \(configPath), then run this again")
                    }
                }
            } else {
                let stored = Set(try context.vault().listIDs().map(\.service))
                chosen = claims.filter { c in
                    directory.service(of: c.provider).map { s in stored.contains { $0.description == s } } ?? false
                }
                guard !chosen.isEmpty else {
                    throw TokenVaultError.usage(
                        "no stored credential belongs to a provider with git hosts",
                        hint: "name one: tokenvault setup git github (or log in first: tokenvault login github)")
                }
            }
            var seen = Set<String>()
            return chosen.compactMap { c in
                let url = "\(c.rule.scheme)://\(c.rule.key)"
                return seen.insert(url).inserted ? (url, c.provider) : nil
            }
        }
    }

    struct Kubectl: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "kubectl",
            abstract: "Write a kubeconfig user that takes its token from tokenvault.",
            discussion: """
                Runs kubectl config set-credentials USER with an exec plugin: tokenvault get \
                SERVICE --format kubectl, never interactive. Point a context at USER with kubectl \
                config set-context.

                  tokenvault setup kubectl dev --service k8s.example.com
                """)

        @Argument(help: ArgumentHelp("The kubeconfig user to write.", valueName: "user"))
        var user: String

        @Option(
            help: ArgumentHelp("The service whose token the user gets.", valueName: "service"),
            completion: .custom(Completions.services))
        var service: String?

        @Option(help: "Which of several logins to the service.", completion: .custom(Completions.accounts))
        var account: String?

        @Flag(name: .customLong("dry-run"), help: "Print the kubectl command instead of running it.")
        var dryRun = false

        @Flag(help: "Remove the user from the kubeconfig.")
        var undo = false

        func validate() throws {
            if !undo, service == nil {
                throw ValidationError("--service names the credential the user takes its token from")
            }
            if user.isEmpty || user.contains(where: { $0.isWhitespace || $0.isNewline }) {
                throw ValidationError("a kubeconfig user is one word")
            }
        }

        func run(in context: Session) throws {
            var argv: [String]
            if undo {
                argv = ["kubectl", "config", "unset", "users.\(user)"]
            } else {
                let key = try context.serviceKey(service ?? "")
                if let account { try CredentialID.validateAccount(account) }
                argv = [
                    "kubectl", "config", "set-credentials", user, "--exec-api-version=client.authentication.k8s.io/v1",
                    "--exec-command=\(Tool.selfPath)", "--exec-arg=get", "--exec-arg=\(key)",
                    "--exec-arg=--format", "--exec-arg=kubectl", "--exec-interactive-mode=Never",
                ]
                if let account { argv += ["--exec-arg=--account", "--exec-arg=\(account)"] }
            }
            if dryRun {
                context.output.value(Tool.shown(argv))
                return
            }
            let r = try Tool.run(argv, settings: context.settings)
            guard r.status == 0 else { throw TokenVaultError.config("\(Tool.shown(argv)) failed (exit \(r.status))") }
            context.output.notice(
                undo
                    ? "removed the kubeconfig user \(user)"
                    : "kubeconfig user \(user) takes its token from tokenvault (\(service ?? ""))")
        }
    }
}
