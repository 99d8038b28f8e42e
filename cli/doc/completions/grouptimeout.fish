# fish completion for grouptimeout(1): its options, signal names after -s, and COMMAND and its arguments after
# DURATION. Install as grouptimeout.fish in ~/.config/fish/completions or in fish's vendor completions folder.
# tests/manual.rs checks the options against `grouptimeout --help`.

# True while no operand (DURATION) was given yet: options are completed only then.
function __grouptimeout_before_duration
    set -l words (commandline -opc)
    set -e words[1]
    set -l takes_argument 0
    for word in $words
        if test $takes_argument -eq 1
            set takes_argument 0
        else if contains -- $word -s -k --signal --kill-after
            set takes_argument 1
        else if string match -q -- '-*' $word
            continue
        else
            return 1
        end
    end
    return 0
end

# Signal names and numbers for -s, as fish's own completions of kill and timeout have them.
__fish_make_completion_signals

complete -c grouptimeout -n __grouptimeout_before_duration -s s -l signal -x -a "$__kill_signals" -d 'Signal to send at the timeout (default TERM)'
complete -c grouptimeout -n __grouptimeout_before_duration -s k -l kill-after -x -d 'Send KILL if the group still runs this long after the first signal'
complete -c grouptimeout -n __grouptimeout_before_duration -s p -l preserve-status -d 'Exit with the status of COMMAND even after a timeout'
complete -c grouptimeout -n __grouptimeout_before_duration -s f -l foreground -d 'Keep COMMAND in the process group of grouptimeout'
complete -c grouptimeout -n __grouptimeout_before_duration -s v -l verbose -d 'Report every signal sent, and the processes killed besides COMMAND'
complete -c grouptimeout -n __grouptimeout_before_duration -l leave-running -d 'When COMMAND exits by itself, leave what it started running'
complete -c grouptimeout -n __grouptimeout_before_duration -l stats -d 'Once the job has ended, say what it used (CPU time, peak memory)'
complete -c grouptimeout -n __grouptimeout_before_duration -l help -d 'Display the help and exit'
complete -c grouptimeout -n __grouptimeout_before_duration -l version -d 'Output version information and exit'
# After DURATION: COMMAND and its arguments, completed as a command line of their own.
complete -c grouptimeout -n 'not __grouptimeout_before_duration' -x -a '(__fish_complete_subcommand --fcs-skip=2 -- -s -k --signal --kill-after)'
