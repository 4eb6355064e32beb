#!/usr/bin/env bash
# Calls tokenvault's bash completion the way bash does on TAB: the line is
# split into words at blanks and at the characters of COMP_WORDBREAKS that
# completion scripts meet (':' and '='), each such character a word of its
# own, and the function `complete -p tokenvault` names is called.
# Usage: complete.bash COMPLETION_SCRIPT WORD... (the words as typed; the last
# one is the one being completed)
# COMPLETION_SCRIPT "-": find it as bash-completion does for an installed
# command (XDG_DATA_DIRS/bash-completion/completions/tokenvault).
if [ "$1" = - ]; then
  source /usr/share/bash-completion/bash_completion
  __load_completion tokenvault || { echo "bash-completion found no completion for tokenvault" >&2; exit 1; }
else
  source "$1"
fi
shift
COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
COMP_WORDS=()
for typed in "$@"; do
  rest="$typed" piece=""
  [ -z "$rest" ] && { COMP_WORDS+=(""); continue; }
  while [ -n "$rest" ]; do
    c="${rest:0:1}"; rest="${rest:1}"
    if [[ "$c" == [:=] ]]; then
      [ -n "$piece" ] && COMP_WORDS+=("$piece")
      COMP_WORDS+=("$c"); piece=""
    else
      piece+="$c"
    fi
  done
  [ -n "$piece" ] && COMP_WORDS+=("$piece")
done
# A line that ends in ':' completes an empty word after it.
[[ "$COMP_LINE" == *[:=] ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMPREPLY=()
function=$(complete -p tokenvault | sed 's/.*-F \([^ ]*\) .*/\1/')
"$function" tokenvault "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
