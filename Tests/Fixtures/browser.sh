#!/bin/sh
# A scripted $BROWSER for the login tests: the user approves at once.
# BROWSER_MODE=deny       the user says no (the test provider honours deny=1)
# BROWSER_MODE=bad-state  the redirect comes back with another state (a forged redirect)
# BROWSER_MODE=invalid-scope  the provider sends the user back with error=invalid_scope
url="$1"
case "${BROWSER_MODE:-approve}" in
  approve) exec curl -s -L -o /dev/null "$url" ;;
  deny) exec curl -s -L -o /dev/null "$url&deny=1" ;;
  bad-state)
    location=$(curl -s -o /dev/null -w '%{redirect_url}' "$url")
    exec curl -s -o /dev/null "$(printf %s "$location" | sed 's/state=[^&]*/state=forged/')" ;;
  invalid-scope)
    location=$(curl -s -o /dev/null -w '%{redirect_url}' "$url")
    state=$(printf %s "$location" | sed 's/.*[?&]state=\([^&]*\).*/\1/')
    exec curl -s -o /dev/null "${location%%\?*}?error=invalid_scope&error_description=scope+nope+is+unknown&state=$state" ;;
esac
