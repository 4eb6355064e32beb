# Sourced by bench.sh and hot-text.sh. start_private_bus DIR PASSWORD starts a
# session bus of its own listening in DIR, exports DBUS_SESSION_BUS_ADDRESS
# for it, and unlocks a gnome-keyring on it with PASSWORD (the Secret
# Service). Sets bus_pid; the caller kills it.
start_private_bus() {
  dbus-daemon --session --nofork --print-address=1 --address="unix:dir=$1" > "$1/bus" 2>/dev/null &
  bus_pid=$!
  for _ in $(seq 50); do [ -s "$1/bus" ] && break; sleep 0.1; done
  DBUS_SESSION_BUS_ADDRESS=$(head -1 "$1/bus")
  export DBUS_SESSION_BUS_ADDRESS
  printf '%s' "$2" | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1
}
