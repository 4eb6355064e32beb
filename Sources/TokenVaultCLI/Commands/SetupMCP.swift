import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault.Setup {
    /// The MCP client's server entry for `tokenvault mcp URL` (docs/adapters.md).
    struct Mcp: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "mcp",
            abstract: "Print, or merge into a client's config file, the MCP server entry that runs tokenvault mcp URL.",
            discussion: """
                The entry has the env the client must pass on this machine, if any (see tokenvault \
                mcp --help). --format mcpServers is the shape of the common desktop clients' \
                config; vscode, of VS Code's mcp.json (servers, type stdio). --write merges it into \
                FILE under its name (the file's other entries kept; running it again changes \
                nothing); --undo removes it.

                  tokenvault setup mcp https://mcp.example.com/mcp
                  tokenvault setup mcp https://mcp.example.com/mcp --write ~/.config/Claude/claude_desktop_config.json
                  tokenvault setup mcp https://mcp.example.com/mcp --format vscode --write .vscode/mcp.json
                """)

        enum Shape: String, ExpressibleByArgument, CaseIterable {
            case mcpServers, vscode
        }

        @Argument(help: ArgumentHelp("The remote MCP server's URL.", valueName: "url"))
        var url: String

        @Option(help: "The JSON shape: mcpServers (desktop clients) or vscode (mcp.json).")
        var format: Shape = .mcpServers

        @Option(help: ArgumentHelp("The entry's name (default: one derived from the URL).", valueName: "name"))
        var name: String?

        @Option(help: "Which of several logins to the server.", completion: .custom(Completions.accounts))
        var account: String?

        @Option(help: ArgumentHelp("Merge the entry into this JSON file.", valueName: "file"))
        var write: String?

        @Flag(name: .customLong("dry-run"), help: "With --write: print the file as it would be, write nothing.")
        var dryRun = false

        @Flag(help: "With --write: remove the entry.")
        var undo = false

        func validate() throws {
            if dryRun || undo, write == nil { throw ValidationError("--dry-run and --undo go with --write FILE") }
            if let name, name.isEmpty || name.unicodeScalars.contains(where: { $0.value < 0x20 }) {
                throw ValidationError("an entry's name is one line of text")
            }
        }

        func run(in context: Session) throws {
            guard url.contains("://"), OAuth2Provider.isSafeEndpoint(url) else {
                throw TokenVaultError.usage(
                    "\(Quoted.text(url)) is not an https URL (http only for loopback)",
                    hint: "give the MCP server's URL: https://HOST/PATH")
            }
            if let account { try CredentialID.validateAccount(account) }
            let entryName = name ?? DiscoveredProviders.name(for: url)
            var args: [JSONValue] = [.string("mcp"), .string(url)]
            if let account { args += [.string("--account"), .string(account)] }
            var entry: [String: JSONValue] = ["command": .string(Tool.selfPath), "args": .array(args)]
            if format == .vscode { entry["type"] = .string("stdio") }
            let env = TokenVault.MCP.clientEnvironment(context.settings)
            if !env.isEmpty { entry["env"] = .object(env.mapValues { .string($0) }) }
            let key = format == .vscode ? "servers" : "mcpServers"
            let shown = Self.text(.object([key: .object([entryName: .object(entry)])]))
            guard let given = write else {
                context.output.value(shown)
                TokenVault.MCP.warnOfOwnBus(env, output: context.output)
                return
            }
            // A client config that is a link (dotfiles kept elsewhere) is written where it points.
            let path = AtomicFile.linkTarget(given)
            var file = try Self.read(path)
            var servers: [String: JSONValue] = [:]
            switch file[key] {
            case .object(let o)?: servers = o
            case nil: break
            case let other?:
                // Never replace what the client has under that key with a shape it does not read.
                let kind = if case .array = other { "an array" } else { "not an object" }
                throw TokenVaultError.config(
                    "\(path): \(key) is \(kind), which tokenvault cannot merge into; nothing was written",
                    hint: "add this entry by hand: \(shown.split(separator: "\n").joined(separator: " "))")
            }
            if undo {
                guard servers.removeValue(forKey: entryName) != nil else {
                    context.output.notice("\(path) has no entry \(Quoted.text(entryName)); nothing to remove")
                    return
                }
            } else {
                if servers[entryName] == .object(entry) {
                    context.output.notice("\(path): \(entryName) is set up already")
                    return
                }
                servers[entryName] = .object(entry)
            }
            file[key] = .object(servers)
            let text = Self.text(.object(file))
            if dryRun {
                context.output.value(text)
                return
            }
            // The client may never have run yet: its folder is made (0700), as it would.
            let folder = Posix.dirname(path)
            if !FileManager.default.fileExists(atPath: folder) {
                do {
                    try FileManager.default.createDirectory(
                        atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                } catch {
                    throw TokenVaultError.vault(
                        "cannot create \(folder) for the MCP client's config",
                        hint: "create it, or give --write a file in a folder that exists")
                }
            }
            try AtomicFile.replace(path, with: Array((text + "\n").utf8), what: "the MCP client's config")
            context.output.notice(
                undo
                    ? "removed \(entryName) from \(path)"
                    : "\(path): \(entryName) runs tokenvault mcp \(url) (restart the client to load it)")
            if !undo { warnings(env, context: context) }
        }

        /// What the entry will meet that the user should know now: a session
        /// bus that ends with this shell's session, and no credential yet.
        func warnings(_ env: [String: String], context: Session) {
            TokenVault.MCP.warnOfOwnBus(env, output: context.output)
            guard let service = try? ServiceKey(parsing: url) else { return }
            let id = CredentialID(service: service, account: account ?? Credential.defaultAccount)
            if (try? context.vault().locate(id)) ?? nil == nil {
                let login =
                    "tokenvault login \(ShellWord.word(url))\(account.map { " --account \(ShellWord.word($0))" } ?? "")"
                if let nowhere = Browser.unavailable(context.settings) {
                    // A server: the client's bridge could not open a browser either.
                    context.output.notice(
                        "no credential is stored for \(url) yet, and no browser can open here (\(nowhere)): log in now, before the client starts: \(login) (it offers the device flow or paste mode)"
                    )
                } else {
                    context.output.notice(
                        "no credential is stored for \(url) yet: the client's first call asks for a login in the browser; or log in now: \(login)"
                    )
                }
            }
        }

        static func text(_ value: JSONValue) -> String {
            (try? JSONValue.prettyEncoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? value.text
        }

        /// The client's config as a JSON object; an empty one when there is no file.
        static func read(_ path: String) throws -> [String: JSONValue] {
            guard let data = FileManager.default.contents(atPath: path) else {
                if FileManager.default.fileExists(atPath: path) {
                    throw TokenVaultError.config("cannot read \(path)")
                }
                return [:]
            }
            if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return [:] }
            var rules = JSONSyntax.Rules()
            (rules.refuseDuplicateKeys, rules.refuseInexactIntegers) = (true, true)
            let parsed = Result { try JSONSyntax.parse(data, rules: rules) }
            if case .failure(let problem as JSONSyntax.Problem) = parsed {
                throw TokenVaultError.config(
                    "\(path):\(problem.line):\(problem.column): \(problem.what); nothing was written",
                    hint:
                        "add the entry by hand (tokenvault setup mcp URL prints it), or fix the file and run this again"
                )
            }
            guard case .success(.object(let o)) = parsed else {
                throw TokenVaultError.config(
                    "\(path) is not a plain JSON object (comments or trailing commas?); nothing was written",
                    hint: "add the entry by hand: tokenvault setup mcp URL prints it")
            }
            return o
        }
    }
}
