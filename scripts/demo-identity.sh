#!/usr/bin/env bash
# `make demo-identity`: credentials from an identity the machine already has
# (docs/providers.md, "Credentials from an identity"), end to end, in a
# throwaway home, against the local authlib provider: a workload's JWT (as a
# Kubernetes projected token or a CI job's OIDC token) traded with the
# jwt-bearer grant, that token traded again at a token exchange, a refusal
# that heals once the file is rotated, with nobody running `login`.
set -euo pipefail
TV=$(cd "$(dirname "${1:-.build/tokenvault}")" && pwd)/$(basename "${1:-tokenvault}")
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/demo-home.sh" tokenvault-identity
trap 'kill "${provider_pid:-}" 2>/dev/null || true; rm -rf "$demo_home"' EXIT
export TOKENVAULT_AGENT=off

# The workload issuer's key (the cluster's, the CI system's): the provider trusts its public half.
mkdir -m 700 "$demo_home/keys"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$demo_home/keys/workload-issuer.pem" 2>/dev/null
openssl pkey -in "$demo_home/keys/workload-issuer.pem" -pubout -out "$demo_home/keys/workload-issuer.pub.pem"
/usr/bin/python3 "$root/Tests/Fixtures/oauth_provider.py" --keys "$demo_home/keys" > "$demo_home/provider.out" 2>/dev/null &
provider_pid=$!
for _ in $(seq 50); do [ -s "$demo_home/provider.out" ] && break; sleep 0.1; done
port=$(awk '{print $2}' "$demo_home/provider.out")
token_url="http://127.0.0.1:$port/token"
# The issuer writes the workload's token as the kubelet does: replaced in place.
mint() { /usr/bin/python3 "$root/Tests/Fixtures/mint_jwt.py" "$demo_home/keys/workload-issuer.pem" workload-issuer "$1" 120 "$demo_home/token"; }
mint "$token_url"
mkdir -p "$XDG_CONFIG_HOME/tokenvault"
cat > "$XDG_CONFIG_HOME/tokenvault/config.toml" <<TOML
[providers.workload]          # the workload's own JWT, sent as the jwt-bearer assertion
service = "workload.demo.example"
token_url = "$token_url"
grant = "jwt_bearer"
assertion_file = "$demo_home/token"
scopes = ["read"]

[providers.sts]               # that token traded at a security token service (RFC 8693)
service = "sts.demo.example"
token_url = "$token_url"
grant = "token_exchange"
client_id = "tv-exchange"
client_secret = "exchange-secret"
subject_provider = "workload"
audience = "https://api.demo.example"
TOML

step "cat \$XDG_CONFIG_HOME/tokenvault/config.toml"
cat "$XDG_CONFIG_HOME/tokenvault/config.toml"
step "tokenvault get workload | wc -c   # the first token: get fetches it itself, no login, no browser"
tokenvault get workload | wc -c
step "tokenvault status workload"
tokenvault status workload
step "tokenvault get sts | wc -c        # the workload's token traded for one of the STS's own"
tokenvault get sts | wc -c
step "tokenvault list"
tokenvault list

step "(the issuer writes a token for another audience) tokenvault refresh workload; echo exit=\$?"
mint "https://elsewhere.example/token"
tokenvault refresh workload || echo "exit=$?"
step "tokenvault get workload | wc -c   # refused, but the stored token is still valid: it is served"
tokenvault get workload | wc -c
step "(the issuer rotates the file) tokenvault refresh workload; echo exit=\$?   # healed, nobody ran login"
mint "$token_url"
tokenvault refresh workload; echo "exit=$?"

step "curl -s http://127.0.0.1:$port/stats   # what the provider was asked"
curl -s "http://127.0.0.1:$port/stats"; echo
tokenvault lock >/dev/null 2>&1
printf '\nidentity demo done: everything lived in %s, now removed.\n' "$demo_home"
