#!/bin/sh
# A scripted $BROWSER for the login tests: the user approves at once.
# BROWSER_MODE=deny       the user says no (the test provider honours deny=1)
# BROWSER_MODE=bad-state  the redirect comes back with another state (a forged redirect)
# BROWSER_MODE=invalid-scope  the provider sends the user back with error=invalid_scope
# BROWSER_MODE=forged-first   another local process sends a forged state and an error
#                             without state first; then the user approves
# BROWSER_MODE=trickle  a local client connects to the listener and trickles a
#                       byte a second, and nobody approves
# BROWSER_MODE=ignore     the browser opens and nobody does anything
# BROWSER_MODE=detached   the browser returns at once, as xdg-open does, and the user
#                         approves after (FastMCP's CLI waits for the browser before it
#                         listens for the redirect: the redirect is retried until it is)
# BROWSER_MODE=iss        the redirect comes back with iss=$BROWSER_ISS (RFC 9207)
# BROWSER_MODE=linger     the user approves, and the browser stays open (a child of
#                         it lives on for 20 s with whatever it inherited)
# BROWSER_LOG=FILE        a line is added to FILE per opening
# BROWSER_FDS=FILE        the browser's open descriptors (ls -l /proc/PID/fd) go to FILE
# BROWSER_DELAY=SECONDS   the user takes that long before answering
url="$1"
[ -n "${BROWSER_LOG:-}" ] && echo opened >> "$BROWSER_LOG"
[ -n "${BROWSER_DELAY:-}" ] && sleep "$BROWSER_DELAY"
[ -n "${BROWSER_FDS:-}" ] && ls -l "/proc/$$/fd" > "$BROWSER_FDS"
case "${BROWSER_MODE:-approve}" in
  approve) exec curl -s -L -o /dev/null "$url" ;;
  ignore) ;;
  detached)
    curl -s -L --retry 30 --retry-connrefused --retry-delay 1 -o /dev/null "$url" </dev/null >/dev/null 2>&1 & ;;
  linger)
    sleep 20 </dev/null >/dev/null 2>&1 &
    exec curl -s -L -o /dev/null "$url" ;;
  iss)
    location=$(curl -s -o /dev/null -w '%{redirect_url}' "$url")
    iss=$(python3 -c 'import sys, urllib.parse as u; print(u.quote(sys.argv[1], safe=""))' "$BROWSER_ISS")
    exec curl -s -o /dev/null "$location&iss=$iss" ;;
  deny) exec curl -s -L -o /dev/null "$url&deny=1" ;;
  bad-state)
    location=$(curl -s -o /dev/null -w '%{redirect_url}' "$url")
    exec curl -s -o /dev/null "$(printf %s "$location" | sed 's/state=[^&]*/state=forged/')" ;;
  invalid-scope)
    location=$(curl -s -o /dev/null -w '%{redirect_url}' "$url")
    state=$(printf %s "$location" | sed 's/.*[?&]state=\([^&]*\).*/\1/')
    exec curl -s -o /dev/null "${location%%\?*}?error=invalid_scope&error_description=scope+nope+is+unknown&state=$state" ;;
  forged-first)
    location=$(curl -s -o /dev/null -w '%{redirect_url}' "$url")
    base=${location%%\?*}
    curl -s -o /dev/null "$(printf %s "$location" | sed 's/state=[^&]*/state=forged/')"
    curl -s -o /dev/null "$base?error=access_denied"
    exec curl -s -o /dev/null "$location" ;;
  trickle)
    redirect=$(python3 -c 'import sys, urllib.parse as u; print(u.parse_qs(u.urlsplit(sys.argv[1]).query)["redirect_uri"][0])' "$url")
    port=$(printf %s "$redirect" | sed 's|http://127.0.0.1:\([0-9]*\)/.*|\1|')
    python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
for b in b"GET /callback?code=x HTTP/1.1\r\n":
    s.send(bytes([b])); time.sleep(1)
' "$port" >/dev/null 2>&1 &
    ;;
esac
