#!/bin/bash

__aasa-fetch_cursor_index_in_current_word() {
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
__aasa-fetch_offer_flags_options() {
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

__aasa-fetch_add_completions() {
    local completion
    while IFS='' read -r completion; do
        COMPREPLY+=("${completion}")
    done < <(IFS=$'\n' compgen "${@}" -- "${cur}")
}

__aasa-fetch_custom_complete() {
    if [[ -n "${cur}" || -z ${COMP_WORDS[${COMP_CWORD}]} || "${COMP_LINE:${COMP_POINT}:1}" != ' ' ]]; then
        local -ar words=("${COMP_WORDS[@]}")
    else
        local -ar words=("${COMP_WORDS[@]::${COMP_CWORD}}" '' "${COMP_WORDS[@]:${COMP_CWORD}}")
    fi

    "${COMP_WORDS[0]}" "${@}" "${words[@]}"
}

_aasa-fetch() {
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
    __aasa-fetch_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    fetch|plan|match|diagnose|refresh|show|forget|export|report|lint|diff|entitlements|help)
        # Offer subcommand argument completions
        "_aasa-fetch_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'fetch plan match diagnose refresh show forget export report lint diff entitlements help' -- "${cur}"))
        ;;
    esac
}

_aasa-fetch_fetch() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --allow-private --no-store --json --no-config --version -h --help)
    repeating_options=(--domain --app-id --define --resolve --connect-to)
    non_repeating_options=(--entitlements --app --domains --region --cacert --connect-timeout --max-time --max-size --user-agent --retry-delays --concurrency --threads --route --cdn-base --cache --store --format --config)
    __aasa-fetch_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--entitlements')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(entitlements|plist)'
        return
        ;;
    '--app')
        __aasa-fetch_add_completions -f
        return
        ;;
    '--domain')
        return
        ;;
    '--domains')
        __aasa-fetch_add_completions -f
        return
        ;;
    '--app-id')
        return
        ;;
    '--define')
        return
        ;;
    '--region')
        return
        ;;
    '--cacert')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(pem|crt)'
        return
        ;;
    '--resolve')
        return
        ;;
    '--connect-to')
        return
        ;;
    '--connect-timeout')
        return
        ;;
    '--max-time')
        return
        ;;
    '--max-size')
        return
        ;;
    '--user-agent')
        return
        ;;
    '--retry-delays')
        return
        ;;
    '--concurrency')
        return
        ;;
    '--threads')
        return
        ;;
    '--route')
        __aasa-fetch_add_completions -W 'origin'$'\n''cdn'$'\n''both'
        return
        ;;
    '--cdn-base')
        return
        ;;
    '--cache')
        __aasa-fetch_add_completions -d
        return
        ;;
    '--store')
        return
        ;;
    '--format')
        __aasa-fetch_add_completions -W 'human'$'\n''json'$'\n''github'$'\n''sarif'$'\n''junit'
        return
        ;;
    '--config')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(json|yaml|yml)'
        return
        ;;
    esac
}

_aasa-fetch_plan() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --json --no-config --version -h --help)
    repeating_options=(--domain --app-id --define)
    non_repeating_options=(--entitlements --app --domains --region --config)
    __aasa-fetch_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--entitlements')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(entitlements|plist)'
        return
        ;;
    '--app')
        __aasa-fetch_add_completions -f
        return
        ;;
    '--domain')
        return
        ;;
    '--domains')
        __aasa-fetch_add_completions -f
        return
        ;;
    '--app-id')
        return
        ;;
    '--define')
        return
        ;;
    '--region')
        return
        ;;
    '--config')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(json|yaml|yml)'
        return
        ;;
    esac
}

_aasa-fetch_match() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --allow-private --no-store --json --no-config --version -h --help)
    repeating_options=(--domain --app-id --define --resolve --connect-to)
    non_repeating_options=(--urls --aasa --host --cases --entitlements --app --domains --region --cacert --connect-timeout --max-time --max-size --user-agent --retry-delays --concurrency --threads --cache --store --config)
    __aasa-fetch_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--urls')
        __aasa-fetch_add_completions -f
        return
        ;;
    '--aasa')
        __aasa-fetch_add_completions -f
        return
        ;;
    '--host')
        return
        ;;
    '--cases')
        __aasa-fetch_add_completions -f
        return
        ;;
    '--entitlements')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(entitlements|plist)'
        return
        ;;
    '--app')
        __aasa-fetch_add_completions -f
        return
        ;;
    '--domain')
        return
        ;;
    '--domains')
        __aasa-fetch_add_completions -f
        return
        ;;
    '--app-id')
        return
        ;;
    '--define')
        return
        ;;
    '--region')
        return
        ;;
    '--cacert')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(pem|crt)'
        return
        ;;
    '--resolve')
        return
        ;;
    '--connect-to')
        return
        ;;
    '--connect-timeout')
        return
        ;;
    '--max-time')
        return
        ;;
    '--max-size')
        return
        ;;
    '--user-agent')
        return
        ;;
    '--retry-delays')
        return
        ;;
    '--concurrency')
        return
        ;;
    '--threads')
        return
        ;;
    '--cache')
        __aasa-fetch_add_completions -d
        return
        ;;
    '--store')
        return
        ;;
    '--config')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(json|yaml|yml)'
        return
        ;;
    esac
}

_aasa-fetch_diagnose() {
    repeating_flags=()
    non_repeating_flags=(--quiet -q --allow-private --json --no-config --version -h --help)
    repeating_options=(--domain --app-id --define --resolve --connect-to)
    non_repeating_options=(--entitlements --app --domains --region --cacert --connect-timeout --max-time --max-size --user-agent --retry-delays --concurrency --threads --route --cdn-base --format --config)
    __aasa-fetch_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--entitlements')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(entitlements|plist)'
        return
        ;;
    '--app')
        __aasa-fetch_add_completions -f
        return
        ;;
    '--domain')
        return
        ;;
    '--domains')
        __aasa-fetch_add_completions -f
        return
        ;;
    '--app-id')
        return
        ;;
    '--define')
        return
        ;;
    '--region')
        return
        ;;
    '--cacert')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(pem|crt)'
        return
        ;;
    '--resolve')
        return
        ;;
    '--connect-to')
        return
        ;;
    '--connect-timeout')
        return
        ;;
    '--max-time')
        return
        ;;
    '--max-size')
        return
        ;;
    '--user-agent')
        return
        ;;
    '--retry-delays')
        return
        ;;
    '--concurrency')
        return
        ;;
    '--threads')
        return
        ;;
    '--route')
        __aasa-fetch_add_completions -W 'origin'$'\n''cdn'$'\n''both'
        return
        ;;
    '--cdn-base')
        return
        ;;
    '--format')
        __aasa-fetch_add_completions -W 'human'$'\n''json'$'\n''github'$'\n''sarif'$'\n''junit'
        return
        ;;
    '--config')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(json|yaml|yml)'
        return
        ;;
    esac
}

_aasa-fetch_refresh() {
    repeating_flags=()
    non_repeating_flags=(--allow-private --watch --worker --all --notify-allow-private --json --quiet -q --no-config --version -h --help)
    repeating_options=(--resolve --connect-to --host)
    non_repeating_options=(--cache --store --cacert --connect-timeout --max-time --max-size --user-agent --retry-delays --concurrency --threads --cdn-base --region --interval --lease --owner --batch-size --metrics --prune-after --keep-history --notify --notify-format --notify-cacert --format --config)
    __aasa-fetch_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--cache')
        __aasa-fetch_add_completions -d
        return
        ;;
    '--store')
        return
        ;;
    '--cacert')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(pem|crt)'
        return
        ;;
    '--resolve')
        return
        ;;
    '--connect-to')
        return
        ;;
    '--connect-timeout')
        return
        ;;
    '--max-time')
        return
        ;;
    '--max-size')
        return
        ;;
    '--user-agent')
        return
        ;;
    '--retry-delays')
        return
        ;;
    '--concurrency')
        return
        ;;
    '--threads')
        return
        ;;
    '--cdn-base')
        return
        ;;
    '--region')
        return
        ;;
    '--interval')
        return
        ;;
    '--lease')
        return
        ;;
    '--owner')
        return
        ;;
    '--batch-size')
        return
        ;;
    '--host')
        return
        ;;
    '--metrics')
        return
        ;;
    '--prune-after')
        return
        ;;
    '--keep-history')
        return
        ;;
    '--notify')
        return
        ;;
    '--notify-format')
        return
        ;;
    '--notify-cacert')
        return
        ;;
    '--format')
        __aasa-fetch_add_completions -W 'human'$'\n''json'$'\n''github'$'\n''sarif'$'\n''junit'
        return
        ;;
    '--config')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(json|yaml|yml)'
        return
        ;;
    esac
}

_aasa-fetch_show() {
    repeating_flags=()
    non_repeating_flags=(--versions --json --no-config --version -h --help)
    repeating_options=()
    non_repeating_options=(--cache --store --history-limit --config)
    __aasa-fetch_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--cache')
        __aasa-fetch_add_completions -d
        return
        ;;
    '--store')
        return
        ;;
    '--history-limit')
        return
        ;;
    '--config')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(json|yaml|yml)'
        return
        ;;
    esac
}

_aasa-fetch_forget() {
    repeating_flags=()
    non_repeating_flags=(--json --no-config --version -h --help)
    repeating_options=()
    non_repeating_options=(--cache --store --config)
    __aasa-fetch_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--cache')
        __aasa-fetch_add_completions -d
        return
        ;;
    '--store')
        return
        ;;
    '--config')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(json|yaml|yml)'
        return
        ;;
    esac
}

_aasa-fetch_export() {
    repeating_flags=()
    non_repeating_flags=(--json --no-config --version -h --help)
    repeating_options=()
    non_repeating_options=(--cache --store --out --config)
    __aasa-fetch_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--cache')
        __aasa-fetch_add_completions -d
        return
        ;;
    '--store')
        return
        ;;
    '--out')
        __aasa-fetch_add_completions -d
        return
        ;;
    '--config')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(json|yaml|yml)'
        return
        ;;
    esac
}

_aasa-fetch_report() {
    repeating_flags=()
    non_repeating_flags=(--json --no-config --version -h --help)
    repeating_options=()
    non_repeating_options=(--cache --store --html --history-limit --config)
    __aasa-fetch_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--cache')
        __aasa-fetch_add_completions -d
        return
        ;;
    '--store')
        return
        ;;
    '--html')
        return
        ;;
    '--history-limit')
        return
        ;;
    '--config')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(json|yaml|yml)'
        return
        ;;
    esac
}

_aasa-fetch_lint() {
    repeating_flags=()
    non_repeating_flags=(--json --no-config --version -h --help)
    repeating_options=()
    non_repeating_options=(--format --max-size --config)
    __aasa-fetch_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--format')
        __aasa-fetch_add_completions -W 'human'$'\n''json'$'\n''github'$'\n''sarif'$'\n''junit'
        return
        ;;
    '--max-size')
        return
        ;;
    '--config')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(json|yaml|yml)'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    *)
        __aasa-fetch_add_completions -f
        return
        ;;
    esac
}

_aasa-fetch_diff() {
    repeating_flags=()
    non_repeating_flags=(--json --stored --no-config --version -h --help)
    repeating_options=()
    non_repeating_options=(--max-size --route --cache --store --config)
    __aasa-fetch_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--max-size')
        return
        ;;
    '--route')
        __aasa-fetch_add_completions -W 'origin'$'\n''cdn'
        return
        ;;
    '--cache')
        __aasa-fetch_add_completions -d
        return
        ;;
    '--store')
        return
        ;;
    '--config')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(json|yaml|yml)'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __aasa-fetch_add_completions -f
        return
        ;;
    2)
        __aasa-fetch_add_completions -f
        return
        ;;
    esac
}

_aasa-fetch_entitlements() {
    repeating_flags=()
    non_repeating_flags=(--json --no-config --version -h --help)
    repeating_options=(--define)
    non_repeating_options=(--compare --config)
    __aasa-fetch_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--compare')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(entitlements|plist)'
        return
        ;;
    '--define')
        return
        ;;
    '--config')
        __aasa-fetch_add_completions -o plusdirs -fX '!*.@(json|yaml|yml)'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __aasa-fetch_add_completions -f
        return
        ;;
    esac
}

_aasa-fetch_help() {
    repeating_flags=()
    non_repeating_flags=(--version)
    repeating_options=()
    non_repeating_options=()
    __aasa-fetch_offer_flags_options -1
}

complete -o filenames -F _aasa-fetch aasa-fetch
