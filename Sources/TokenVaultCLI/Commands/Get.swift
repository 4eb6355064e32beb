import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

enum GetFormat: String, Choice {
    case raw, json, header, env, kubectl, sasl

    /// Whether it hands out the access token itself, which must then be
    /// usable (docs/reference.md, "Credential state"); the record and its
    /// other fields are printed whatever the state.
    func handsOutAccessToken(field: String?) -> Bool {
        switch self {
        case .header, .kubectl, .sasl: true
        case .json: false
        case .raw, .env: field.map(Credential.accessTokenFields.contains) ?? true
        }
    }

    /// Whether `--field` goes with it.
    var takesField: Bool { self == .raw || self == .env }

    /// Whether `--user` and `--sasl` go with it (and `--user` must be given).
    var isSASL: Bool { self == .sasl }
}

extension SASLMechanism: Choice {}

extension TokenVault {
    struct Get: SessionCommand {
        // `_superCommandName` only counts where `get` is parsed as the root
        // (docs/benchmarks.md, "`get` is parsed alone"): it spares that parse
        // the parser's two completion-script parsers, which cost a cold `get`
        // more than its own arguments. Under `tokenvault` it changes nothing.
        static let configuration = CommandConfiguration(
            commandName: "get",
            _superCommandName: "tokenvault",
            abstract: "Print a stored credential for a shell script.",
            discussion: """
                Prints the access token (OAuth 1.0a: the token) and a newline, nothing else. \
                --field picks another field: refresh_token, token_secret, expires_at (unix seconds), \
                scope, token_type, or an extra field such as uid. An access token that cannot be \
                used (expired and not renewable, or renewal refused) exits 4 with a hint; \
                --format json and every other --field print what is stored whatever its state.

                  TOKEN=$(tokenvault get api.weibo.com) || exit
                  eval "$(tokenvault get api.weibo.com --format env)"

                --format kubectl prints an ExecCredential for a kubeconfig exec user \
                (client.authentication.k8s.io/v1beta1, or v1 when KUBERNETES_EXEC_INFO asks for it; \
                no prompt when kubectl says the session is not interactive). --format sasl --user EMAIL \
                prints the base64 SASL initial response for IMAP and SMTP (XOAUTH2; --sasl oauthbearer \
                for RFC 7628).
                """)

        @OptionGroup var credential: CredentialOptions

        @Option(
            help: ArgumentHelp("Print this field instead of the access token.", valueName: "name"),
            completion: .custom(Completions.fields))
        var field: String?

        @Option(
            help: ArgumentHelp(
                "raw: the value; json: the whole record; header: an HTTP header line; env: export lines for eval; kubectl: an ExecCredential; sasl: a SASL initial response.",
                valueName: "format"),
            completion: .list(GetFormat.names), transform: GetFormat.parse)
        var format: GetFormat = .raw

        @Option(help: ArgumentHelp("The mail account for --format sasl.", valueName: "email"))
        var user: String?

        @Option(
            help: ArgumentHelp(
                "The SASL mechanism for --format sasl: xoauth2 (default) or oauthbearer (RFC 7628).", valueName: "sasl"),
            completion: .list(SASLMechanism.names), transform: SASLMechanism.parse)
        var sasl: SASLMechanism?

        @Option(
            name: .customLong("min-valid"),
            help: ArgumentHelp(
                "Seconds of validity required before refreshing (default: config min_valid, else 60).",
                valueName: "seconds"))
        var minValid: Int?

        @Flag(name: .customLong("no-refresh"), help: "Never refresh; print what is stored.")
        var noRefresh = false

        @Flag(help: "The same as --format json, as for list and status: the whole record.")
        var json = false

        @Flag(
            name: .customLong("no-store"),
            help:
                "Keep nothing: a token from a grant that needs no person is fetched, printed and forgotten (backend none for this command)."
        )
        var noStore = false

        func validate() throws {
            if json, format != .raw, format != .json { throw ValidationError("--json is --format json; give one") }
            if let minValid, minValid < 0 { throw ValidationError("--min-valid must not be negative") }
            if field != nil, !format.takesField || json {
                throw ValidationError("--field goes with --format raw or env")
            }
            if format.isSASL, user == nil { throw ValidationError("--format sasl needs --user EMAIL") }
            if !format.isSASL, user != nil || sasl != nil {
                throw ValidationError("--user and --sasl go with --format sasl")
            }
        }

        func run(in context: Session) throws {
            guard !noStore || context.settings[.backend] == BackendChoice.none.rawValue else {
                // A session of its own, with no agent: what it fetches is this process's alone.
                let settings = context.settings.with(.backend, BackendChoice.none.rawValue).with(.agent, "off")
                return try run(in: Session(settings: settings, notices: context.notices, output: context.output))
            }
            let format = json ? GetFormat.json : self.format
            let exec = format == .kubectl ? try ExecCredentialRequest.from(context.settings) : nil
            if let exec { context.interactive = exec.interactive }
            let id = try credential.id(in: context)
            let c =
                format.handsOutAccessToken(field: field)
                ? try context.usable(id, minValid: minValid, refresh: !noRefresh)
                : try context.stored(id, minValid: minValid, refresh: !noRefresh)
            switch format {
            case .raw:
                context.output.value(try value(of: c))
                if c.dpopKey != nil, field == nil || Credential.accessTokenFields.contains(field!),
                    context.output.stdout.isTerminal
                {
                    // Printed all the same: without the key it is of no use (docs/security.md).
                    context.output.notice(
                        "this token is bound to a DPoP key: a request needs a proof with it; print both with: tokenvault header \(ShellWord.word(c.service.description)) --method GET --url URL"
                    )
                }
            case .json:
                context.output.value(String(decoding: c.shownJSON(), as: UTF8.self))
            case .header:
                context.output.value(try HeaderLine.line(for: c, template: try context.headerTemplate(of: c)))
            case .kubectl:
                _ = try HeaderLine.bearer(for: c)
                context.output.json(exec!.response(token: c.accessToken, expiresAt: c.expiresAt))
            case .sasl:
                _ = try HeaderLine.bearer(for: c)
                context.output.value(try (sasl ?? .xoauth2).initialResponse(user: user ?? "", token: c.accessToken))
            case .env:
                if let field {
                    let name = "TOKENVAULT_" + field.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }
                    context.output.value("export \(String(name))=\(ShellWord.quoted(try value(of: c)))")
                } else {
                    context.output.value(
                        "export \(EnvironmentVariable.accessToken.name)=\(ShellWord.quoted(c.accessToken))")
                    if let secret = c.tokenSecret {
                        context.output.value(
                            "export \(EnvironmentVariable.tokenSecret.name)=\(ShellWord.quoted(secret))")
                    }
                }
            }
        }

        private func value(of c: Credential) throws -> String {
            guard let field else { return c.accessToken }
            guard let v = c.field(field) else {
                throw TokenVaultError.usage(
                    "\(c.id) has no field \(field)",
                    hint: "fields: \(c.fieldNames.joined(separator: ", "))")
            }
            guard !v.contains(where: \.isNewline) else {
                throw TokenVaultError.badInput("the field \(field) spans several lines; use --format json")
            }
            return v
        }
    }
}
