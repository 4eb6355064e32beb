# Sourced by demo.sh and demo-identity.sh (needs $TV): a throwaway home,
# $demo_home, made under /tmp with the prefix $1, where no Secret Service
# answers (no session bus: auto falls back to the file vault), with a private
# runtime directory, a passphrase file (never argv; a real user would be
# prompted on the terminal), and tokenvault() and step() for the walk-through.
demo_home=$(mktemp -d "/tmp/$1.XXXXXX")
export HOME="$demo_home" XDG_DATA_HOME="$demo_home/data" XDG_CONFIG_HOME="$demo_home/config"
# CI: the demo shows a user's machine, the agent started on first use included.
unset CI DBUS_SESSION_BUS_ADDRESS TOKENVAULT_BACKEND TOKENVAULT_VAULT TOKENVAULT_PASSPHRASE TOKENVAULT_PASSPHRASE_COMMAND
export XDG_RUNTIME_DIR="$demo_home/run"
mkdir -m 700 "$XDG_RUNTIME_DIR"
printf 'demo passphrase\n' > "$demo_home/passphrase"
chmod 600 "$demo_home/passphrase"
export TOKENVAULT_PASSPHRASE_FILE="$demo_home/passphrase"
tokenvault() { "$TV" "$@"; }
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
