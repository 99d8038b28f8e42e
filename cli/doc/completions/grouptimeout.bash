# bash completion for grouptimeout(1): its options, signal names after -s, and COMMAND and its arguments after
# DURATION. Install as /usr/share/bash-completion/completions/grouptimeout (a `timeout` symlink: add
# `complete -F _grouptimeout timeout`). tests/manual.rs checks the options against `grouptimeout --help`.

_grouptimeout() {
    local options="-s --signal -k --kill-after -p --preserve-status -f --foreground -v --verbose --leave-running --stats --help --version"
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local i word operands=0 options_end=0
    COMPREPLY=()
    # Find COMMAND: the second operand (the first is DURATION); -s and -k (also abbreviated, as --sig) take the
    # next word unless their argument is attached (-sTERM, --signal=TERM).
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if ((operands == 1)); then
            if declare -F _command_offset >/dev/null; then
                _command_offset "$i"
            else
                mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            fi
            return 0
        fi
        if ((options_end)) || [[ $word != -* || $word == - ]]; then
            operands=1
        elif [[ $word == -- ]]; then
            options_end=1
        elif [[ $word == -s || $word == -k || ($word != *=* && ${#word} -ge 3 &&
            ("--signal" == "$word"* || "--kill-after" == "$word"*)) ]]; then
            ((i++))
        fi
    done
    if ((operands == 1)); then
        mapfile -t COMPREPLY < <(compgen -c -- "$cur" | sort -u)
        return 0
    fi
    case $prev in
        -s | --signal | --sig | --sign | --signa)
            local signals
            signals=$(compgen -A signal)
            mapfile -t COMPREPLY < <(compgen -W "${signals//SIG/} $signals" -- "$cur")
            return 0
            ;;
        -k | --kill-after | --k | --ki | --kil | --kill | --kill- | --kill-a | --kill-af | --kill-aft | --kill-afte)
            return 0
            ;;
    esac
    if [[ $cur == -* ]] && ((!options_end)); then
        mapfile -t COMPREPLY < <(compgen -W "$options" -- "$cur")
    fi
    return 0
}

complete -F _grouptimeout grouptimeout
