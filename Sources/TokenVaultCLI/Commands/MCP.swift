import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct MCP: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "mcp",
            abstract: "Serve a remote MCP server on stdio, with the vault's token.",
            discussion: """
                A stdio MCP server for an MCP client (an editor, a desktop assistant, an agent) \
                that forwards every JSON-RPC message to the remote MCP server at URL over \
                Streamable HTTP, with the token stored for URL (see tokenvault login URL): \
                renewed before it expires, one refresh for every bridge and every other \
                tokenvault process, and renewed once and the message sent again when the server \
                answers 401. When the server asks for more scopes (403 insufficient_scope), or \
                when no credential is usable, a login runs where a browser can open (one at a \
                time); otherwise the client gets a JSON-RPC error and stderr one line. stdout \
                carries only MCP messages.

                MCP clients usually start it with only HOME, PATH, SHELL and TERM: it then finds \
                the runtime directory (/run/user/UID) and the session bus in it as a login does. \
                Where your session keeps them elsewhere, or TOKENVAULT_* settings or XDG \
                directories differ from their defaults, --print-config adds the env entry the \
                client must pass. The command is this binary's absolute path, as setup mcp \
                writes it.

                  tokenvault mcp https://mcp.example.com/mcp --print-config
                  {"command": "/usr/bin/tokenvault", "args": ["mcp", "https://mcp.example.com/mcp"]}
                """)

        @Argument(help: ArgumentHelp("The remote MCP server's URL.", valueName: "url"))
        var url: String

        @Option(
            help:
                "Which of several logins to the server (default: $\(EnvironmentVariable.account.name), else default).")
        var account: String?

        @Flag(name: .customLong("print-config"), help: "Print the MCP client configuration that runs this bridge.")
        var printConfig = false

        func run(in context: Session) throws {
            guard url.contains("://") else {
                throw TokenVaultError.usage(
                    "\(Quoted.text(url)) is not a URL", hint: "give the MCP server's URL: https://HOST/PATH")
            }
            let account = try AccountChoice(option: self.account, settings: context.settings)
            if printConfig {
                var args: [JSONValue] = [.string("mcp"), .string(url)]
                if account.source == .option { args += [.string("--account"), .string(account.name)] }
                // The binary's absolute path, as `setup mcp` writes it: clients start servers
                // with a PATH of their own, which may not hold where tokenvault is.
                var entry: [String: JSONValue] = ["command": .string(Tool.selfPath), "args": .array(args)]
                let env = Self.clientEnvironment(context.settings)
                if !env.isEmpty { entry["env"] = .object(env.mapValues { .string($0) }) }
                context.output.value(JSONValue.object(entry).text)
                Self.warnOfOwnBus(env, output: context.output)
                return
            }
            // Nothing that needs the vault or the config stops the bridge before it
            // serves: each request that meets a failure gets it as its JSON-RPC error.
            let credential = BridgeCredential(
                session: context, account: account.name, url: url, say: context.output.errorWriter())
            let timeout = (try? context.httpTimeout) ?? Config().httpTimeout
            let bridge = try MCPBridge(
                url: url, transport: CurlTransport(timeout: timeout, proxies: context.proxies), tokens: credential,
                nonces: context.nonces,
                writeLine: context.output.lineWriter())
            bridge.run()
        }
    }
}

extension TokenVault.MCP {
    /// Said wherever an MCP entry is printed or written (`setup mcp`, `mcp
    /// --print-config`): an entry that names this shell's own session bus
    /// reaches the keyring only while that session lasts.
    static func warnOfOwnBus(_ env: [String: String], output: RunOutput) {
        let bus = EnvironmentVariable.dbusSessionBusAddress.name
        guard let address = env[bus] else { return }
        output.warning(
            "the entry names this shell's own session bus (\(bus)=\(OutsideText.line(address, limit: 120))), not the desktop's: the client reaches the keyring only while that session lasts (a dbus-run-session ends with its shell); run this from your desktop session, or remove env.\(bus) from the entry"
        )
    }

    /// What an MCP client must pass for the bridge to find this session, when
    /// it passes only HOME, PATH, SHELL and TERM: the variables set here that
    /// it would not find on its own (docs/adapters.md). Never a passphrase source.
    static func clientEnvironment(_ settings: Settings) -> [String: String] {
        var env: [String: String] = [:]
        let runtime = settings[.xdgRuntimeDir]
        if let runtime, runtime != Settings.systemRuntimeDirectory() {
            env[EnvironmentVariable.xdgRuntimeDir.name] = runtime
        }
        if let bus = settings[.dbusSessionBusAddress],
            bus != (runtime ?? Settings.systemRuntimeDirectory()).flatMap(Settings.busAddress(in:))
        {
            env[EnvironmentVariable.dbusSessionBusAddress.name] = bus
        }
        let home = settings.home
        for (v, fallback) in [
            (EnvironmentVariable.xdgConfigHome, home + "/.config"), (.xdgDataHome, home + "/.local/share"),
            (.xdgCacheHome, home + "/.cache"),
        ] {
            if let value = settings[v], value != fallback { env[v.name] = value }
        }
        // What decides where the credential is (a new vault's KDF cost does not).
        for v in [
            EnvironmentVariable.backend, .config, .vault, .keyTTL, .dbusTimeout, .unlockTimeout, .etcdEndpoints,
            .etcdPrefix,
        ] {
            if let value = settings[v] { env[v.name] = value }
        }
        if !settings.agentAllowed { env[EnvironmentVariable.agent.name] = settings[.agent] }
        return env
    }
}
