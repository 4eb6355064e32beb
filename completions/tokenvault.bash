#!/bin/bash

__tokenvault_cursor_index_in_current_word() {
    local remaining="${COMP_LINE}"

    local word
    for word in "${COMP_WORDS[@]::COMP_CWORD}"; do
        remaining="${remaining##*([[:space:]])"${word}"*([[:space:]])}"
    done

    local -ir index="$((COMP_POINT - ${#COMP_LINE} + ${#remaining}))"
    if [[ "${index}" -le 0 ]]; then
        printf 0
    else
        printf %s "${index}"
    fi
}

# positional arguments:
#
# - 1: the current (sub)command's count of positional arguments
#
# required variables:
#
# - repeating_flags: the repeating flags that the current (sub)command can accept
# - non_repeating_flags: the non-repeating flags that the current (sub)command can accept
# - repeating_options: the repeating options that the current (sub)command can accept
# - non_repeating_options: the non-repeating options that the current (sub)command can accept
# - positional_number: value ignored
# - unparsed_words: unparsed words from the current command line
#
# modified variables:
#
# - non_repeating_flags: remove flags for this (sub)command that are already on the command line
# - non_repeating_options: remove options for this (sub)command that are already on the command line
# - positional_number: set to the current positional number
# - unparsed_words: remove all flags, options, and option values for this (sub)command
__tokenvault_offer_flags_options() {
    local -ir positional_count="${1}"
    positional_number=0

    local was_flag_option_terminator_seen=false
    local is_parsing_option_value=false

    local -ar unparsed_word_indices=("${!unparsed_words[@]}")
    local -i word_index
    for word_index in "${unparsed_word_indices[@]}"; do
        if "${is_parsing_option_value}"; then
            # This word is an option value:
            # Reset marker for next word iff not currently the last word
            [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]] && is_parsing_option_value=false
            unset "unparsed_words[${word_index}]"
            # Do not process this word as a flag or an option
            continue
        fi

        local word="${unparsed_words["${word_index}"]}"
        if ! "${was_flag_option_terminator_seen}"; then
            case "${word}" in
            --)
                unset "unparsed_words[${word_index}]"
                # by itself -- is a flag/option terminator, but if it is the last word, it is the start of a completion
                if [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]]; then
                    was_flag_option_terminator_seen=true
                fi
                continue
                ;;
            -*)
                # ${word} is a flag or an option
                # If ${word} is an option, mark that the next word to be parsed is an option value
                local option
                for option in "${repeating_options[@]}" "${non_repeating_options[@]}"; do
                    [[ "${word}" = "${option}" ]] && is_parsing_option_value=true && break
                done

                # Remove ${word} from ${non_repeating_flags} or ${non_repeating_options} so it isn't offered again
                local not_found=true
                local -i index
                for index in "${!non_repeating_flags[@]}"; do
                    if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                        unset "non_repeating_flags[${index}]"
                        non_repeating_flags=("${non_repeating_flags[@]}")
                        not_found=false
                        break
                    fi
                done
                if "${not_found}"; then
                    for index in "${!non_repeating_flags[@]}"; do
                        if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                            unset "non_repeating_flags[${index}]"
                            non_repeating_flags=("${non_repeating_flags[@]}")
                            break
                        fi
                    done
                fi
                unset "unparsed_words[${word_index}]"
                continue
                ;;
            esac
        fi

        # ${word} is neither a flag, nor an option, nor an option value
        if [[ "${positional_number}" -lt "${positional_count}" || "${positional_count}" -lt 0 ]]; then
            # ${word} is a positional
            ((positional_number++))
            unset "unparsed_words[${word_index}]"
        else
            if [[ -z "${word}" ]]; then
                # Could be completing a flag, option, or subcommand
                positional_number=-1
            else
                # ${word} is a subcommand or invalid, so stop processing this (sub)command
                positional_number=-2
            fi
            break
        fi
    done

    unparsed_words=("${unparsed_words[@]}")

    if\
        ! "${was_flag_option_terminator_seen}"\
        && ! "${is_parsing_option_value}"\
        && [[ ("${cur}" = -* && "${positional_number}" -ge 0) || "${positional_number}" -eq -1 ]]
    then
        COMPREPLY+=($(compgen -W "${repeating_flags[*]} ${non_repeating_flags[*]} ${repeating_options[*]} ${non_repeating_options[*]}" -- "${cur}"))
    fi
}

__tokenvault_add_completions() {
    local completion
    while IFS='' read -r completion; do
        COMPREPLY+=("${completion}")
    done < <(IFS=$'\n' compgen "${@}" -- "${cur}")
}

__tokenvault_custom_complete() {
    if [[ -n "${cur}" || -z ${COMP_WORDS[${COMP_CWORD}]} || "${COMP_LINE:${COMP_POINT}:1}" != ' ' ]]; then
        local -ar words=("${COMP_WORDS[@]}")
    else
        local -ar words=("${COMP_WORDS[@]::${COMP_CWORD}}" '' "${COMP_WORDS[@]:${COMP_CWORD}}")
    fi

    "${COMP_WORDS[0]}" "${@}" "${words[@]}"
}

_tokenvault() {
    local state
    state="$(shopt -p;shopt -po)"
    trap "${state//$'\n'/;}" RETURN
    shopt -s extglob
    set +o history +o posix

    local -xr SAP_SHELL=bash
    local -x SAP_SHELL_VERSION
    SAP_SHELL_VERSION="$(IFS='.';printf %s "${BASH_VERSINFO[*]}")"
    local -r SAP_SHELL_VERSION

    local -r cur="${2}"
    local -r prev="${3}"

    local -i positional_number
    local -a unparsed_words=("${COMP_WORDS[@]:1:${COMP_CWORD}}")

    local -a repeating_flags=()
    local -a non_repeating_flags=(--version -h --help)
    local -a repeating_options=()
    local -a non_repeating_options=()
    __tokenvault_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    login|set|get|list|status|refresh|revoke|header|exec|delete|logout|init|export|import|backend|migrate|lock|unlock|providers|git-credential|mcp|agent|doctor|setup|help)
        # Offer subcommand argument completions
        "_tokenvault_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'login set get list status refresh revoke header exec delete logout init export import backend migrate lock unlock providers git-credential mcp agent doctor setup help' -- "${cur}"))
        ;;
    esac
}

_tokenvault_login() {
    repeating_flags=()
    non_repeating_flags=(--browser --no-browser --device --no-qr --force --register-again --json --verbose --version -h --help)
    repeating_options=(--scope)
    non_repeating_options=(--issuer --client-id --name --account --port --timeout)
    __tokenvault_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--issuer')
        return
        ;;
    '--client-id')
        return
        ;;
    '--name')
        return
        ;;
    '--account')
        return
        ;;
    '--scope')
        return
        ;;
    '--port')
        return
        ;;
    '--timeout')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion login -- positional@0 "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tokenvault_set() {
    repeating_flags=()
    non_repeating_flags=(--verbose --force --json --version -h --help)
    repeating_options=()
    non_repeating_options=(--account --provider)
    __tokenvault_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--account')
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion set -- --account "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    '--provider')
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion set -- --provider "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion set -- positional@0 "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tokenvault_get() {
    repeating_flags=()
    non_repeating_flags=(--verbose --no-refresh --json --no-store --version -h --help)
    repeating_options=()
    non_repeating_options=(--account --field --format --user --sasl --min-valid)
    __tokenvault_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--account')
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion get -- --account "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    '--field')
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion get -- --field "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    '--format')
        __tokenvault_add_completions -W 'raw'$'\n''json'$'\n''header'$'\n''env'$'\n''kubectl'$'\n''sasl'
        return
        ;;
    '--user')
        return
        ;;
    '--sasl')
        __tokenvault_add_completions -W 'xoauth2'$'\n''oauthbearer'
        return
        ;;
    '--min-valid')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion get -- positional@0 "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tokenvault_list() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--color)
    __tokenvault_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--color')
        __tokenvault_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac
}

_tokenvault_status() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--account --color)
    __tokenvault_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--account')
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion status -- --account "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    '--color')
        __tokenvault_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion status -- positional@0 "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tokenvault_refresh() {
    repeating_flags=()
    non_repeating_flags=(--verbose --json --version -h --help)
    repeating_options=()
    non_repeating_options=(--account)
    __tokenvault_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--account')
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion refresh -- --account "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion refresh -- positional@0 "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tokenvault_revoke() {
    repeating_flags=()
    non_repeating_flags=(--verbose --json --version -h --help)
    repeating_options=()
    non_repeating_options=(--account)
    __tokenvault_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--account')
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion revoke -- --account "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion revoke -- positional@0 "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tokenvault_header() {
    repeating_flags=()
    non_repeating_flags=(--verbose --data --version -h --help)
    repeating_options=()
    non_repeating_options=(--account --method --url --nonce)
    __tokenvault_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--account')
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion header -- --account "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    '--method')
        __tokenvault_add_completions -W 'GET'$'\n''POST'$'\n''PUT'$'\n''PATCH'$'\n''DELETE'$'\n''HEAD'
        return
        ;;
    '--url')
        return
        ;;
    '--nonce')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion header -- positional@0 "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tokenvault_exec() {
    repeating_flags=()
    non_repeating_flags=(--verbose --version -h --help)
    repeating_options=()
    non_repeating_options=(--account)
    __tokenvault_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--account')
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion exec -- --account "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion exec -- positional@0 "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    *)
        __tokenvault_add_completions -W "$(eval 'if [[ ${COMP_WORDS[COMP_CWORD-1]} == -- && ${cur} != */* ]]; then compgen -c -- "${cur}" | sort -u; else compgen -f -- "${cur}"; fi')"
        return
        ;;
    esac
}

_tokenvault_delete() {
    repeating_flags=()
    non_repeating_flags=(--verbose --json --version -h --help)
    repeating_options=()
    non_repeating_options=(--account)
    __tokenvault_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--account')
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion delete -- --account "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion delete -- positional@0 "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tokenvault_logout() {
    repeating_flags=()
    non_repeating_flags=(--verbose --json --version -h --help)
    repeating_options=()
    non_repeating_options=(--account)
    __tokenvault_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--account')
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion logout -- --account "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion logout -- positional@0 "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tokenvault_init() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--key --pcrs)
    __tokenvault_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--key')
        __tokenvault_add_completions -W 'passphrase'$'\n''tpm'
        return
        ;;
    '--pcrs')
        return
        ;;
    esac
}

_tokenvault_export() {
    repeating_flags=()
    non_repeating_flags=(--force --json --version -h --help)
    repeating_options=()
    non_repeating_options=(--passphrase-file)
    __tokenvault_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--passphrase-file')
        return
        ;;
    esac
}

_tokenvault_import() {
    repeating_flags=()
    non_repeating_flags=(--remove-source --force --dry-run --json --version -h --help)
    repeating_options=()
    non_repeating_options=(--from --passphrase-file)
    __tokenvault_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--from')
        return
        ;;
    '--passphrase-file')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tokenvault_add_completions -W 'git-credentials'$'\n''netrc'$'\n''gh'$'\n''mcp-remote'$'\n''fastmcp'
        return
        ;;
    esac
}

_tokenvault_backend() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=()
    __tokenvault_offer_flags_options 0
}

_tokenvault_migrate() {
    repeating_flags=()
    non_repeating_flags=(--keep-backend --json --version -h --help)
    repeating_options=()
    non_repeating_options=(--to --from)
    __tokenvault_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--to')
        __tokenvault_add_completions -W 'secret-service'$'\n''file'$'\n''etcd'
        return
        ;;
    '--from')
        __tokenvault_add_completions -W 'secret-service'$'\n''file'$'\n''etcd'
        return
        ;;
    esac
}

_tokenvault_lock() {
    repeating_flags=()
    non_repeating_flags=(--all --json --version -h --help)
    repeating_options=()
    non_repeating_options=()
    __tokenvault_offer_flags_options 0
}

_tokenvault_unlock() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=()
    __tokenvault_offer_flags_options 0
}

_tokenvault_providers() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=()
    __tokenvault_offer_flags_options 0
}

_tokenvault_git-credential() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--account)
    __tokenvault_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--account')
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion git-credential -- --account "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tokenvault_mcp() {
    repeating_flags=()
    non_repeating_flags=(--print-config --version -h --help)
    repeating_options=()
    non_repeating_options=(--account)
    __tokenvault_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--account')
        return
        ;;
    esac
}

_tokenvault_agent() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __tokenvault_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    run|status|stop)
        # Offer subcommand argument completions
        "_tokenvault_agent_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'run status stop' -- "${cur}"))
        ;;
    esac
}

_tokenvault_agent_run() {
    repeating_flags=()
    non_repeating_flags=(--foreground --version -h --help)
    repeating_options=()
    non_repeating_options=()
    __tokenvault_offer_flags_options 0
}

_tokenvault_agent_status() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=()
    __tokenvault_offer_flags_options 0
}

_tokenvault_agent_stop() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __tokenvault_offer_flags_options 0
}

_tokenvault_doctor() {
    repeating_flags=()
    non_repeating_flags=(--network --json --version -h --help)
    repeating_options=()
    non_repeating_options=(--color)
    __tokenvault_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--color')
        __tokenvault_add_completions -W 'auto'$'\n''always'$'\n''never'
        return
        ;;
    esac
}

_tokenvault_setup() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __tokenvault_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    git|kubectl|mcp|client-metadata)
        # Offer subcommand argument completions
        "_tokenvault_setup_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'git kubectl mcp client-metadata' -- "${cur}"))
        ;;
    esac
}

_tokenvault_setup_git() {
    repeating_flags=()
    non_repeating_flags=(--global --dry-run --undo --version -h --help)
    repeating_options=()
    non_repeating_options=()
    __tokenvault_offer_flags_options 1

    # Offer positional completions
    case "${positional_number}" in
    1)
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion setup git -- positional@0 "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tokenvault_setup_kubectl() {
    repeating_flags=()
    non_repeating_flags=(--dry-run --undo --version -h --help)
    repeating_options=()
    non_repeating_options=(--service --account)
    __tokenvault_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--service')
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion setup kubectl -- --service "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    '--account')
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion setup kubectl -- --account "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_tokenvault_setup_mcp() {
    repeating_flags=()
    non_repeating_flags=(--dry-run --undo --version -h --help)
    repeating_options=()
    non_repeating_options=(--format --name --account --write)
    __tokenvault_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--format')
        __tokenvault_add_completions -W 'mcpServers'$'\n''vscode'
        return
        ;;
    '--name')
        return
        ;;
    '--account')
        __tokenvault_add_completions -W "$(__tokenvault_custom_complete ---completion setup mcp -- --account "${COMP_CWORD}" "$(__tokenvault_cursor_index_in_current_word)")"
        return
        ;;
    '--write')
        return
        ;;
    esac
}

_tokenvault_setup_client-metadata() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __tokenvault_offer_flags_options 1
}

_tokenvault_help() {
    repeating_flags=()
    non_repeating_flags=(--version)
    repeating_options=()
    non_repeating_options=()
    __tokenvault_offer_flags_options -1
}

complete -o filenames -F _tokenvault tokenvault
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
