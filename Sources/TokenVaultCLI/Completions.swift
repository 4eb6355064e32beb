import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

/// Dynamic shell completion. It must never prompt, never touch the network and
/// answer quickly: the file vault is read only with a cached key (no passphrase
/// source, no KDF, no terminal), the Secret Service only by item attributes
/// (nothing unlocked), with a short D-Bus bound. Anything that fails offers nothing.
enum Completions {
    /// The settings completions read: the shell asks for them through the
    /// parser, which calls these functions with no command run (an entry
    /// point of their own), so they are the process's.
    static var settings: Settings { .process }

    /// Options whose next word is their value, so it is not the SERVICE.
    static let valued: Set = [
        "--account", "--field", "--format", "--min-valid", "--method", "--url", "--provider",
        "--port", "--timeout", "--scope", "--to",
    ]

    static func providers(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        let context = Session(settings: settings, notices: RunOutput.process().notices)
        let directory = (try? context.providers) ?? ProviderDirectory(config: Config())
        return candidates(directory.names.filter { $0.hasPrefix(prefix) })
    }

    static func services(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        let services = Set(storedIDs().map { $0.service.description })
        // bash splits a word at `:` (COMP_WORDBREAKS): `127.0.0.1:18765` arrives as
        // `127.0.0.1`, `:`, `18765`, and bash replaces only the part after the last
        // colon. Match the whole word, and offer what goes after that colon.
        guard CompletionShell.requesting == .bash, index < words.count else {
            return candidates(services.sorted().filter { $0.hasPrefix(prefix) })
        }
        var whole = prefix
        var k = index
        while k > 0, words[k - 1] == ":" || whole.hasPrefix(":") {
            whole = words[k - 1] + whole
            k -= 1
        }
        let cut = whole.lastIndex(of: ":").map { whole[...$0].count } ?? 0
        return candidates(services.sorted().filter { $0.hasPrefix(whole) }.map { String($0.dropFirst(cut)) })
    }

    static func accounts(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        let ids = storedIDs()
        let service = serviceWord(in: words).flatMap {
            try? Session(settings: settings, notices: RunOutput.process().notices).serviceKey($0)
        }
        let accounts = ids.filter { service == nil || $0.service == service }.map(\.account)
        return candidates(Set(accounts).sorted().filter { $0.hasPrefix(prefix) })
    }

    /// Candidates as each shell's generated script reads them back, so an
    /// account like `it's`, `a:b` or `back\slash` is offered as it is: bash's
    /// (with `bashWords`) takes each line verbatim, never expanding it, and
    /// quotes what it inserts; zsh's reads `value:description` through
    /// `_describe` (`\` escapes, `:` splits). fish takes them verbatim. A
    /// value with a line break cannot be one line of the answer: not offered.
    static func candidates(_ values: [String]) -> [String] {
        let lines = values.filter { !$0.contains(where: \.isNewline) }
        switch CompletionShell.requesting {
        case .zsh?: return lines.map { escaping($0, "\\:") }
        default: return lines
        }
    }

    private static func escaping(_ value: String, _ special: String) -> String {
        var out = ""
        for c in value {
            if special.contains(c) { out.append("\\") }
            out.append(c)
        }
        return out
    }

    /// After `exec SERVICE --`: command names for the first word (file names
    /// when it has a `/`), then file names, as `sudo` or `env` complete. Each
    /// shell's own lists, chosen when its script is generated
    /// (swift-argument-parser has no "command" kind).
    static var commandThenFiles: String {
        switch CompletionShell.requesting {
        case .bash?:
            return
                #"if [[ ${COMP_WORDS[COMP_CWORD-1]} == -- && ${cur} != */* ]]; then compgen -c -- "${cur}" | sort -u; else compgen -f -- "${cur}"; fi"#
        case .zsh?:
            return
                #"local -aU l; if [[ ${words[CURRENT-1]} == -- && ${PREFIX} != */* ]]; then l=(${^path}/${PREFIX}*(N-*:t)); else l=(${PREFIX}*(N)); fi; print -rl -- $l"#
        case .fish?:
            return
                #"if test (commandline -opc)[-1] = --; __fish_complete_command; else; __fish_complete_path (commandline -ct); end"#
        default:
            return ""
        }
    }

    static let fieldNames = [
        "access_token", "refresh_token", "token_secret", "expires_at", "scope", "token_type",
        "provider", "service", "account", "type", "uid", "user_id", "screen_name", "user_nsid",
        "username", "fullname", "name", "login", "email",
    ]

    /// The SERVICE word: the first word after the subcommand that is neither an option nor an option's value.
    static func serviceWord(in words: [String]) -> String? {
        var i = 2
        while i < words.count {
            let w = words[i]
            if valued.contains(w) {
                i += 2
                continue
            }
            if w.hasPrefix("-") {
                i += 1
                continue
            }
            // bash's words split at `:` (a port): join them back.
            var whole = w
            while i + 2 < words.count, words[i + 1] == ":" {
                whole += ":" + words[i + 2]
                i += 2
            }
            return whole
        }
        return nil
    }

    /// `get --field`: the fields the named record has, when it can be read
    /// without asking anyone; every field name otherwise.
    static func fields(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        let known = storedRecord(words)?.fieldNames ?? fieldNames
        return candidates(known.filter { $0.hasPrefix(prefix) })
    }

    /// The record the command line names (its SERVICE word, a provider's
    /// name included, and `--account`), read without a prompt.
    static func storedRecord(_ words: [String]) -> Credential? {
        guard let word = serviceWord(in: words) else { return nil }
        let (context, store) = quietStore()
        guard let store else { return nil }
        let service = ((try? context.providers)?.service(of: word)).flatMap { $0 } ?? word
        guard let key = try? ServiceKey(parsing: service) else { return nil }
        let account = words.firstIndex(of: "--account").flatMap { $0 + 1 < words.count ? words[$0 + 1] : nil }
        return (try? store.load(CredentialID(service: key, account: account ?? Credential.defaultAccount))) ?? nil
    }

    /// The configured store, opened as completion may: never a prompt, never
    /// the passphrase, and a short wait for D-Bus.
    static func quietStore() -> (Session, CredentialStore?) {
        var settings = Self.settings.with(.dbusTimeout, "0.5")
        for source in EnvironmentVariable.passphraseVariables { settings = settings.with(source, nil) }
        let context = Session(settings: settings, notices: RunOutput.process().notices)
        var backends = context.backends
        backends.interactive = false
        guard let choice = try? context.backendChoice else { return (context, nil) }
        return (context, try? backends.open(choice))
    }

    static func storedIDs() -> [CredentialID] {
        guard let store = quietStore().1 else { return [] }
        return ((try? store.listIDs()) ?? []).filter { !$0.isRegistration }
    }
}

extension Completions {
    /// Appended to the bash script swift-argument-parser generates (docs/config.md, "Shell completion"):
    /// - The generated script reads a custom completion's lines through
    ///   `compgen -W`, which expands each (a stored account named `$(cmd)` or
    ///   `<(cmd)`, written by another fleet host or any program on the session
    ///   bus, would run on TAB): `__tokenvault_add_completions` is redefined to
    ///   take `-W`'s lines verbatim, filtered by what is typed.
    /// - bash splits a word at `:` (COMP_WORDBREAKS), so the generated script
    ///   would count `127.0.0.1`, `:` and `18765` as three arguments. The words
    ///   are put back together first (as bash-completion's
    ///   `_get_comp_words_by_ref -n :` does), and what is completed is the part
    ///   after the last colon, which is what bash replaces.
    /// - A service or resource key is not a file: `-o filenames` (which would
    ///   show `host/a/mcp` as `mcp`) stays only when a candidate is one, and
    ///   otherwise every candidate is quoted as a shell word (`printf %q`), as
    ///   readline quotes file names, so `a;touch x` is inserted as one word.
    static let bashWords = #"""

        # tokenvault: candidates are taken as they are, never expanded.
        __tokenvault_add_completions() {
            if [[ "${1}" != -W ]]; then
                local completion
                while IFS='' read -r completion; do
                    COMPREPLY+=("${completion}")
                done < <(IFS=$'\n' compgen "${@}" -- "${cur}")
                return
            fi
            local -a lines=()
            [[ -n "${2}" ]] && mapfile -t lines <<< "${2}"
            local line
            for line in "${lines[@]}"; do
                [[ -n "${line}" && "${line}" == "${cur}"* ]] && COMPREPLY+=("${line}")
            done
        }

        # tokenvault: a service is host:port, which bash splits at ':'.
        _tokenvault_words() {
            local line="${COMP_LINE}" w
            local -a words=()
            local -i i cword=0
            for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
                w="${COMP_WORDS[i]}"
                if ((i > 0)) && [[ "${line}" != [[:blank:]]* ]] && [[ "${w}" == :* || "${words[-1]}" == *: ]]; then
                    words[-1]+="${w}"
                else
                    words+=("${w}")
                fi
                ((i == COMP_CWORD)) && cword=$((${#words[@]} - 1))
                line="${line#"${line%%[![:blank:]]*}"}"
                line="${line#"${w}"}"
            done
            COMP_WORDS=("${words[@]}")
            COMP_CWORD=${cword}
            local cur="${words[cword]}"
            [[ "${COMP_WORDBREAKS}" == *:* ]] && cur="${cur##*:}"
            _tokenvault "${1}" "${cur}" "${words[cword - 1]}"
            local reply
            for reply in "${COMPREPLY[@]}"; do [[ -e "${reply}" ]] && return; done
            compopt +o filenames 2>/dev/null
            for i in "${!COMPREPLY[@]}"; do printf -v 'COMPREPLY[i]' '%q' "${COMPREPLY[i]}"; done
            return 0
        }

        complete -o filenames -F _tokenvault_words tokenvault
        """#

    /// The bash script: the generated one, then `bashWords`.
    static var bashScript: String { TokenVault.completionScript(for: .bash) + bashWords }
}
