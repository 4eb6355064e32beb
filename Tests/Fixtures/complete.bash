#!/usr/bin/env bash
# Calls tokenvault's bash completion the way bash does on TAB.
# Usage: complete.bash COMPLETION_SCRIPT WORD... (the last word is the one being completed)
# COMPLETION_SCRIPT "-": find it as bash-completion does for an installed
# command (XDG_DATA_DIRS/bash-completion/completions/tokenvault).
if [ "$1" = - ]; then
  source /usr/share/bash-completion/bash_completion
  __load_completion tokenvault || { echo "bash-completion found no completion for tokenvault" >&2; exit 1; }
else
  source "$1"
fi
shift
COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
COMPREPLY=()
_tokenvault tokenvault "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
