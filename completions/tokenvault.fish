function __tokenvault_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __tokenvault_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __tokenvault_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __tokenvault_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __tokenvault_parse_tokens -S
    set -l unparsed_tokens (__tokenvault_tokens -pc)
    switch $unparsed_tokens[1]
    case 'tokenvault'
        __tokenvault_parse_subcommand 0 'version' 'h/help'
        switch $unparsed_tokens[1]
        case 'login'
            __tokenvault_parse_subcommand 1 'issuer=' 'client-id=' 'name=' 'account=' 'scope=+' 'browser' 'no-browser' 'device' 'no-qr' 'force' 'register-again' 'json' 'verbose' 'port=' 'timeout=' 'version' 'h/help'
        case 'set'
            __tokenvault_parse_subcommand -r 2 'account=' 'verbose' 'provider=' 'force' 'json' 'version' 'h/help'
        case 'get'
            __tokenvault_parse_subcommand 1 'account=' 'verbose' 'field=' 'format=' 'user=' 'sasl=' 'min-valid=' 'no-refresh' 'json' 'no-store' 'version' 'h/help'
        case 'list'
            __tokenvault_parse_subcommand 0 'json' 'color=' 'version' 'h/help'
        case 'status'
            __tokenvault_parse_subcommand 1 'account=' 'json' 'color=' 'version' 'h/help'
        case 'refresh'
            __tokenvault_parse_subcommand 1 'account=' 'verbose' 'json' 'version' 'h/help'
        case 'revoke'
            __tokenvault_parse_subcommand 1 'account=' 'verbose' 'json' 'version' 'h/help'
        case 'header'
            __tokenvault_parse_subcommand 1 'account=' 'verbose' 'method=' 'url=' 'nonce=' 'data' 'version' 'h/help'
        case 'exec'
            __tokenvault_parse_subcommand -r 2 'account=' 'verbose' 'version' 'h/help'
        case 'delete'
            __tokenvault_parse_subcommand 1 'account=' 'verbose' 'json' 'version' 'h/help'
        case 'logout'
            __tokenvault_parse_subcommand 1 'account=' 'verbose' 'json' 'version' 'h/help'
        case 'init'
            __tokenvault_parse_subcommand 0 'key=' 'pcrs=' 'json' 'version' 'h/help'
        case 'export'
            __tokenvault_parse_subcommand -r 2 'passphrase-file=' 'force' 'json' 'version' 'h/help'
        case 'import'
            __tokenvault_parse_subcommand 2 'from=' 'remove-source' 'passphrase-file=' 'force' 'dry-run' 'json' 'version' 'h/help'
        case 'backend'
            __tokenvault_parse_subcommand 0 'json' 'version' 'h/help'
        case 'migrate'
            __tokenvault_parse_subcommand 0 'to=' 'from=' 'keep-backend' 'json' 'version' 'h/help'
        case 'lock'
            __tokenvault_parse_subcommand 0 'all' 'json' 'version' 'h/help'
        case 'unlock'
            __tokenvault_parse_subcommand 0 'json' 'version' 'h/help'
        case 'providers'
            __tokenvault_parse_subcommand 0 'json' 'version' 'h/help'
        case 'git-credential'
            __tokenvault_parse_subcommand 1 'account=' 'version' 'h/help'
        case 'mcp'
            __tokenvault_parse_subcommand 1 'account=' 'print-config' 'version' 'h/help'
        case 'agent'
            __tokenvault_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'run'
                __tokenvault_parse_subcommand 0 'foreground' 'version' 'h/help'
            case 'status'
                __tokenvault_parse_subcommand 0 'json' 'version' 'h/help'
            case 'stop'
                __tokenvault_parse_subcommand 0 'version' 'h/help'
            end
        case 'doctor'
            __tokenvault_parse_subcommand 0 'network' 'json' 'color=' 'version' 'h/help'
        case 'setup'
            __tokenvault_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'git'
                __tokenvault_parse_subcommand 1 'global' 'dry-run' 'undo' 'version' 'h/help'
            case 'kubectl'
                __tokenvault_parse_subcommand 1 'service=' 'account=' 'dry-run' 'undo' 'version' 'h/help'
            case 'mcp'
                __tokenvault_parse_subcommand 1 'format=' 'name=' 'account=' 'write=' 'dry-run' 'undo' 'version' 'h/help'
            case 'client-metadata'
                __tokenvault_parse_subcommand 1 'version' 'h/help'
            end
        case 'help'
            __tokenvault_parse_subcommand -r 1 'version'
        end
    end
end

function __tokenvault_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __tokenvault_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __tokenvault_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __tokenvault_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__tokenvault_tokens -p)
    if test -z "$(__tokenvault_tokens -t)"
        set -l index (count (__tokenvault_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'tokenvault' -f
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'login' -d 'Log in to a provider and store the credential under its service.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'set' -d 'Store a credential read from stdin.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'get' -d 'Print a stored credential for a shell script.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'list' -d 'List stored credentials: service, account, provider, type, state, expiry. Never a secret.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'status' -d 'Show what is stored, where, for whom, and until when.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'refresh' -d 'Refresh a credential now, even if it is still valid.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'revoke' -d 'Revoke a credential at the provider, then delete it locally.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'header' -d 'Print one HTTP header line that authorizes a request.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'exec' -d 'Run a command with the access token in its environment.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'delete' -d 'Delete a credential locally (the provider is not told; see revoke).'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'logout' -d 'The same as delete: delete a credential locally.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'init' -d 'Create the file vault, make it the backend, and choose what opens it (a passphrase or the TPM).'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'export' -d 'Write credentials, and the provider tables they need, to a file sealed with a passphrase.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'import' -d 'Store the credentials of an export, or of another tool\'s plaintext file, in the backend.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'backend' -d 'Show which backend is in use and why.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'migrate' -d 'Move every credential to another backend.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'lock' -d 'Forget the cached vault key (file or etcd); the next use asks for the passphrase again.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'unlock' -d 'Ask for the vault passphrase once and cache the key (file or etcd) for key_ttl seconds.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'providers' -d 'List built-in and configured providers.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'git-credential' -d 'Answer git\'s credential requests from the vault (a git credential helper).'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'mcp' -d 'Serve a remote MCP server on stdio, with the vault\'s token.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'agent' -d 'Run the per-user agent that answers get without opening the backend each time.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'doctor' -d 'Check the setup, one line per check, each with what to fix.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'setup' -d 'Set up git, kubectl or an MCP client to take their tokens from tokenvault, in one command.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault login" -eq 1' -fka '(__tokenvault_custom_completion ---completion login -- positional@0 (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login" issuer' -l 'issuer' -d 'An OpenID Connect issuer to log in to without a config entry (with --client-id); kept in providers.toml beside the config. With a URL: which of its authorization servers.' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login" client-id' -l 'client-id' -d 'The client id registered at --issuer.' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login" name' -l 'name' -d 'With --issuer or a URL: the provider name to keep it under (default: one derived from its host, port and path).' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login" account' -l 'account' -d 'Which of several logins to the service (default: $TOKENVAULT_ACCOUNT, else default).' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login"' -l 'scope' -d 'A scope to ask for besides the provider\'s (repeatable).' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login" browser' -l 'browser' -d 'Open a browser even where none seems able to open (over SSH, no display).'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login" no-browser' -l 'no-browser' -d 'Print the URL and read the redirected URL or code from stdin.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login" device' -l 'device' -d 'Use the device flow (RFC 8628): show a code to enter on another device, and poll.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login" no-qr' -l 'no-qr' -d 'Do not draw the device flow\'s URL as a QR code.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login" force' -l 'force' -d 'Replace a credential another provider stored under the same service and account.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login" register-again' -l 'register-again' -d 'With a URL: register tokenvault at the authorization server anew, as when it forgot the client.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login" json' -l 'json' -d 'Print the result as JSON: service, account, provider, user, expires_at, stored_in.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login" verbose' -l 'verbose' -d 'With a URL: say on stderr each step of finding its authorization server.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login" port' -l 'port' -d 'Listen for the redirect on this port of 127.0.0.1.' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login" timeout' -l 'timeout' -d 'Seconds to wait for the browser (default 300).' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault login" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault set" -eq 1' -fka '(__tokenvault_custom_completion ---completion set -- positional@0 (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault set" account' -l 'account' -d 'Which of several logins to the service (default: $TOKENVAULT_ACCOUNT, else default).' -rfka '(__tokenvault_custom_completion ---completion set -- --account (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault set" verbose' -l 'verbose' -d 'Say on stderr which account is used, and why.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault set" provider' -l 'provider' -d 'Tie the credential to a provider, so it can be refreshed and revoked.' -rfka '(__tokenvault_custom_completion ---completion set -- --provider (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault set" force' -l 'force' -d 'With --provider: replace a credential another provider stored under the same service and account.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault set" json' -l 'json' -d 'Print what was stored as JSON: service, account, provider, stored_in, expires_at.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault set" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault set" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault get" -eq 1' -fka '(__tokenvault_custom_completion ---completion get -- positional@0 (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault get" account' -l 'account' -d 'Which of several logins to the service (default: $TOKENVAULT_ACCOUNT, else default).' -rfka '(__tokenvault_custom_completion ---completion get -- --account (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault get" verbose' -l 'verbose' -d 'Say on stderr which account is used, and why.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault get" field' -l 'field' -d 'Print this field instead of the access token.' -rfka '(__tokenvault_custom_completion ---completion get -- --field (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault get" format' -l 'format' -d 'raw: the value; json: the whole record; header: an HTTP header line; env: export lines for eval; kubectl: an ExecCredential; sasl: a SASL initial response.' -rfka 'raw json header env kubectl sasl'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault get" user' -l 'user' -d 'The mail account for --format sasl.' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault get" sasl' -l 'sasl' -d 'The SASL mechanism for --format sasl: xoauth2 (default) or oauthbearer (RFC 7628).' -rfka 'xoauth2 oauthbearer'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault get" min-valid' -l 'min-valid' -d 'Seconds of validity required before refreshing (default: config min_valid, else 60).' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault get" no-refresh' -l 'no-refresh' -d 'Never refresh; print what is stored.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault get" json' -l 'json' -d 'The same as --format json, as for list and status: the whole record.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault get" no-store' -l 'no-store' -d 'Keep nothing: a token from a grant that needs no person is fetched, printed and forgotten (backend none for this command).'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault get" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault get" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault list" json' -l 'json' -d 'Print a JSON array.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault list" color' -l 'color' -d 'Colour the states: auto (on a terminal, unless NO_COLOR or TERM=dumb), always or never.' -rfka 'auto always never'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault list" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault status" -eq 1' -fka '(__tokenvault_custom_completion ---completion status -- positional@0 (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault status" account' -l 'account' -d 'Which of several logins to the service (default: $TOKENVAULT_ACCOUNT, else default).' -rfka '(__tokenvault_custom_completion ---completion status -- --account (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault status" json' -l 'json' -d 'Print JSON.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault status" color' -l 'color' -d 'Colour the states: auto (on a terminal, unless NO_COLOR or TERM=dumb), always or never.' -rfka 'auto always never'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault status" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault refresh" -eq 1' -fka '(__tokenvault_custom_completion ---completion refresh -- positional@0 (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault refresh" account' -l 'account' -d 'Which of several logins to the service (default: $TOKENVAULT_ACCOUNT, else default).' -rfka '(__tokenvault_custom_completion ---completion refresh -- --account (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault refresh" verbose' -l 'verbose' -d 'Say on stderr which account is used, and why.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault refresh" json' -l 'json' -d 'Print what was done as JSON: service, account, refreshed, expires_at.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault refresh" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault refresh" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault revoke" -eq 1' -fka '(__tokenvault_custom_completion ---completion revoke -- positional@0 (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault revoke" account' -l 'account' -d 'Which of several logins to the service (default: $TOKENVAULT_ACCOUNT, else default).' -rfka '(__tokenvault_custom_completion ---completion revoke -- --account (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault revoke" verbose' -l 'verbose' -d 'Say on stderr which account is used, and why.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault revoke" json' -l 'json' -d 'Print what was done as JSON: service, account, provider, revoked.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault revoke" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault revoke" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault header" -eq 1' -fka '(__tokenvault_custom_completion ---completion header -- positional@0 (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault header" account' -l 'account' -d 'Which of several logins to the service (default: $TOKENVAULT_ACCOUNT, else default).' -rfka '(__tokenvault_custom_completion ---completion header -- --account (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault header" verbose' -l 'verbose' -d 'Say on stderr which account is used, and why.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault header" method' -l 'method' -d 'The request\'s HTTP method (for signed OAuth 1.0a and DPoP requests).' -rfka 'GET POST PUT PATCH DELETE HEAD'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault header" url' -l 'url' -d 'The request\'s URL (for signed OAuth 1.0a and DPoP requests).' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault header" nonce' -l 'nonce' -d 'The nonce the resource gave in DPoP-Nonce (DPoP requests).' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault header" data' -l 'data' -d 'Read the request\'s form-encoded body from stdin and sign its parameters (OAuth 1.0a).'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault header" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault header" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault exec" -eq 1' -fka '(__tokenvault_custom_completion ---completion exec -- positional@0 (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault exec" account' -l 'account' -d 'Which of several logins to the service (default: $TOKENVAULT_ACCOUNT, else default).' -rfka '(__tokenvault_custom_completion ---completion exec -- --account (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault exec" verbose' -l 'verbose' -d 'Say on stderr which account is used, and why.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault exec" -ge 2' -fka '(if test (commandline -opc)[-1] = --; __fish_complete_command; else; __fish_complete_path (commandline -ct); end)'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault exec" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault exec" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault delete" -eq 1' -fka '(__tokenvault_custom_completion ---completion delete -- positional@0 (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault delete" account' -l 'account' -d 'Which of several logins to the service (default: $TOKENVAULT_ACCOUNT, else default).' -rfka '(__tokenvault_custom_completion ---completion delete -- --account (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault delete" verbose' -l 'verbose' -d 'Say on stderr which account is used, and why.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault delete" json' -l 'json' -d 'Print what was done as JSON: service, account, deleted.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault delete" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault delete" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault logout" -eq 1' -fka '(__tokenvault_custom_completion ---completion logout -- positional@0 (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault logout" account' -l 'account' -d 'Which of several logins to the service (default: $TOKENVAULT_ACCOUNT, else default).' -rfka '(__tokenvault_custom_completion ---completion logout -- --account (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault logout" verbose' -l 'verbose' -d 'Say on stderr which account is used, and why.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault logout" json' -l 'json' -d 'Print what was done as JSON: service, account, deleted.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault logout" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault logout" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault init" key' -l 'key' -d 'What opens the vault: passphrase, or tpm (sealed by this machine\'s TPM 2.0).' -rfka 'passphrase tpm'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault init" pcrs' -l 'pcrs' -d 'Bind the sealed key to these PCRs of the SHA-256 bank (comma-separated, e.g. 7): a changed boot chain then needs the recovery passphrase.' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault init" json' -l 'json' -d 'Print what was done as JSON: vault, key, pcrs, backend_recorded.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault init" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault init" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault export" passphrase-file' -l 'passphrase-file' -d 'A file only you can read holding the export\'s passphrase.' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault export" force' -l 'force' -d 'Replace FILE when it exists.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault export" json' -l 'json' -d 'Print what was done as JSON: file, credentials, providers.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault export" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault export" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault import" -eq 1' -fka 'git-credentials netrc gh mcp-remote fastmcp'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault import" from' -l 'from' -d 'Where the source is read from (default: its usual file or directory).' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault import" remove-source' -l 'remove-source' -d 'Delete each imported secret from the plaintext source once it is stored and read back.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault import" passphrase-file' -l 'passphrase-file' -d 'A file only you can read holding the export\'s passphrase.' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault import" force' -l 'force' -d 'Replace a stored credential (never one newer than the export\'s).'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault import" dry-run' -l 'dry-run' -d 'Say what would be imported; change nothing.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault import" json' -l 'json' -d 'Print what was done as JSON: imported, kept, providers_added.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault import" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault import" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault backend" json' -l 'json' -d 'Print JSON.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault backend" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault backend" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault migrate" to' -l 'to' -d 'The backend to move to: secret-service, file or etcd.' -rfka 'secret-service file etcd'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault migrate" from' -l 'from' -d 'The backend to move from: secret-service, file or etcd.' -rfka 'secret-service file etcd'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault migrate" keep-backend' -l 'keep-backend' -d 'Leave the backend setting of config.toml as it is.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault migrate" json' -l 'json' -d 'Print what was done as JSON: moved, from, to, backend_set.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault migrate" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault migrate" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault lock" all' -l 'all' -d 'Forget the cached keys of every vault, not only the one in use.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault lock" json' -l 'json' -d 'Print what was done as JSON: forgotten (the number of keys).'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault lock" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault lock" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault unlock" json' -l 'json' -d 'Print what was done as JSON: vault, cached_for (seconds).'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault unlock" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault unlock" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault providers" json' -l 'json' -d 'Print a JSON array.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault providers" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault providers" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault git-credential" account' -l 'account' -d 'Which login to answer with (default: the username git sends, if stored, else default).' -rfka '(__tokenvault_custom_completion ---completion git-credential -- --account (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault git-credential" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault git-credential" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault mcp" account' -l 'account' -d 'Which of several logins to the server (default: $TOKENVAULT_ACCOUNT, else default).' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault mcp" print-config' -l 'print-config' -d 'Print the MCP client configuration that runs this bridge.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault mcp" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault mcp" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault agent" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault agent" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault agent" -eq 1' -fa 'run' -d 'Start the agent (in the background unless --foreground).'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault agent" -eq 1' -fa 'status' -d 'Say whether the agent runs, and what it serves.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault agent" -eq 1' -fa 'stop' -d 'Stop the agent.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault agent run" foreground' -l 'foreground' -d 'Stay in the foreground (for an init system); log to stderr.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault agent run" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault agent run" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault agent status" json' -l 'json' -d 'Print a JSON object.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault agent status" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault agent status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault agent stop" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault agent stop" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault doctor" network' -l 'network' -d 'Also reach each configured provider, and compare its clock with this one.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault doctor" json' -l 'json' -d 'Print JSON.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault doctor" color' -l 'color' -d 'Colour the states: auto (on a terminal, unless NO_COLOR or TERM=dumb), always or never.' -rfka 'auto always never'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault doctor" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault doctor" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault setup" -eq 1' -fa 'git' -d 'Make tokenvault git\'s credential helper for a provider\'s git hosts.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault setup" -eq 1' -fa 'kubectl' -d 'Write a kubeconfig user that takes its token from tokenvault.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault setup" -eq 1' -fa 'mcp' -d 'Print, or merge into a client\'s config file, the MCP server entry that runs tokenvault mcp URL.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault setup" -eq 1' -fa 'client-metadata' -d 'Print the client metadata document to host at URL, for servers that take clients by it.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_positional "tokenvault setup git" -eq 1' -fka '(__tokenvault_custom_completion ---completion setup git -- positional@0 (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup git" global' -l 'global' -d 'Write the user\'s global git config, not the current repository\'s.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup git" dry-run' -l 'dry-run' -d 'Print the git commands instead of running them.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup git" undo' -l 'undo' -d 'Remove what setup git wrote.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup git" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup git" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup kubectl" service' -l 'service' -d 'The service whose token the user gets.' -rfka '(__tokenvault_custom_completion ---completion setup kubectl -- --service (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup kubectl" account' -l 'account' -d 'Which of several logins to the service.' -rfka '(__tokenvault_custom_completion ---completion setup kubectl -- --account (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup kubectl" dry-run' -l 'dry-run' -d 'Print the kubectl command instead of running it.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup kubectl" undo' -l 'undo' -d 'Remove the user from the kubeconfig.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup kubectl" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup kubectl" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup mcp" format' -l 'format' -d 'The JSON shape: mcpServers (desktop clients) or vscode (mcp.json).' -rfka 'mcpServers vscode'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup mcp" name' -l 'name' -d 'The entry\'s name (default: one derived from the URL).' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup mcp" account' -l 'account' -d 'Which of several logins to the server.' -rfka '(__tokenvault_custom_completion ---completion setup mcp -- --account (count (__tokenvault_tokens -pc)) (__tokenvault_tokens -tC))'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup mcp" write' -l 'write' -d 'Merge the entry into this JSON file.' -rfka ''
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup mcp" dry-run' -l 'dry-run' -d 'With --write: print the file as it would be, write nothing.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup mcp" undo' -l 'undo' -d 'With --write: remove the entry.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup mcp" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup mcp" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup client-metadata" version' -l 'version' -d 'Show the version.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault setup client-metadata" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tokenvault' -n '__tokenvault_should_offer_completions_for_flags_or_options "tokenvault help" version' -l 'version' -d 'Show the version.'
