# Sourced by demo.sh and bench.sh. start_local_provider DIR starts the authlib
# test provider (Tests/Fixtures/oauth_provider.py: rotating refresh tokens) on
# a free loopback port, its output in DIR, and adds [providers.local] for it
# to $XDG_CONFIG_HOME/tokenvault/config.toml (what is there, such as the
# backend the first store recorded, stays). Needs $root; sets provider_pid
# and port.
start_local_provider() {
  /usr/bin/python3 "$root/Tests/Fixtures/oauth_provider.py" > "$1/provider.out" 2>/dev/null &
  provider_pid=$!
  for _ in $(seq 50); do [ -s "$1/provider.out" ] && break; sleep 0.1; done
  port=$(awk '{print $2}' "$1/provider.out")
  mkdir -p "$XDG_CONFIG_HOME/tokenvault"
  cat >> "$XDG_CONFIG_HOME/tokenvault/config.toml" <<TOML

[providers.local]
service = "127.0.0.1:$port"
authorize_url = "http://127.0.0.1:$port/authorize"
token_url = "http://127.0.0.1:$port/token"
userinfo_url = "http://127.0.0.1:$port/api/me"
client_id = "tv-client"
client_secret = "tv-secret"
scopes = ["read"]
TOML
}
