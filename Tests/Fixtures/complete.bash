#!/usr/bin/env bash
# Calls tokenvault's bash completion the way bash does on TAB.
# Usage: complete.bash COMPLETION_SCRIPT WORD... (the last word is the one being completed)
source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
COMPREPLY=()
_tokenvault tokenvault "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
