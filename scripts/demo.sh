#!/usr/bin/env bash
# `make demo`: the main job end to end, in a throwaway home, on the embedded
# default where no Secret Service answers: the libsodium-encrypted file;
# including a refresh on read against a local OAuth provider.
set -euo pipefail
TV=$(cd "$(dirname "${1:-.build/release/tokenvault}")" && pwd)/$(basename "${1:-tokenvault}")
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/local-provider.sh"
source "$root/scripts/demo-home.sh" tokenvault-demo
trap 'kill "${provider_pid:-}" 2>/dev/null || true; "$TV" agent stop >/dev/null 2>&1 || true; rm -rf "$demo_home"' EXIT

step "tokenvault backend"
tokenvault backend

step "echo '{\"access_token\":\"2.00abc…\",\"expires_in\":3600,\"uid\":\"42\"}' | tokenvault set https://api.weibo.com/2/"
echo '{"access_token":"2.00abcDEMOtoken","refresh_token":"r1","expires_in":3600,"uid":"42","remind_in":"3600"}' \
  | tokenvault set https://api.weibo.com/2/

step "tokenvault get api.weibo.com"
tokenvault get api.weibo.com
step "tokenvault get weibo --field uid          # a provider name is its host"
tokenvault get weibo --field uid
step 'eval "$(tokenvault get api.weibo.com --format env)"; echo ${#TOKENVAULT_ACCESS_TOKEN} characters'
eval "$(tokenvault get api.weibo.com --format env)"; echo "${#TOKENVAULT_ACCESS_TOKEN} characters"
step "tokenvault header api.weibo.com"
tokenvault header api.weibo.com
step "tokenvault agent status   # the first get started the agent: later ones are answered by it (agent = false turns this off)"
for _ in 1 2 3 4 5 6 7 8 9 10; do tokenvault agent status >/dev/null 2>&1 && break; sleep 0.2; done
# A get the agent answers: it keeps that credential from then on (the gets above may all have
# come while it was still starting, and a command asks for the agent once, when it starts).
tokenvault get api.weibo.com >/dev/null
tokenvault agent status

step "echo ghp_example | tokenvault set api.github.com --account work"
echo ghp_example | tokenvault set api.github.com --account work
step "tokenvault setup git github --global; git config --global --get-regexp credential   # git asks tokenvault for github.com's token"
tokenvault setup git github --global
git config --global --get-regexp credential
step "echo '{\"access_token\":\"old\",\"expires_at\":\"2020-01-01T00:00:00Z\"}' | tokenvault set 127.0.0.1:9000 --provider google"
echo '{"access_token":"old","expires_at":"2020-01-01T00:00:00Z"}' | tokenvault set 127.0.0.1:9000 --provider google

step "tokenvault list"
tokenvault list
step "tokenvault status api.weibo.com; echo exit=\$?"
tokenvault status api.weibo.com; echo "exit=$?"
step "tokenvault status 127.0.0.1:9000; echo exit=\$?      # expired, no refresh token: login required"
tokenvault status 127.0.0.1:9000 || echo "exit=$?"

step "ls -l \$XDG_DATA_HOME/tokenvault; grep -c weibo vault   # 0600 in 0700, no host visible"
ls -ld "$XDG_DATA_HOME/tokenvault"; ls -l "$XDG_DATA_HOME/tokenvault/vault"
grep -c weibo "$XDG_DATA_HOME/tokenvault/vault" || true

step "tokenvault lock; TOKENVAULT_PASSPHRASE_FILE= tokenvault get api.weibo.com   # no key cached, no passphrase source"
tokenvault lock
# setsid: no terminal to prompt on, as in a cron job
TOKENVAULT_PASSPHRASE_FILE= setsid -w "$TV" get api.weibo.com || echo "exit=$?"
step "tokenvault get api.weibo.com   # passphrase from the file again: Argon2id once, then the key is cached"
tokenvault get api.weibo.com

# Refresh on read, against a real OAuth server (authlib) on loopback.
start_local_provider "$demo_home"
step "cat \$XDG_CONFIG_HOME/tokenvault/config.toml      # a local OAuth 2.0 provider (authlib), rotating refresh tokens"
cat "$XDG_CONFIG_HOME/tokenvault/config.toml"
step "BROWSER=Tests/Fixtures/browser.sh tokenvault login local   # a scripted browser approves at once"
BROWSER="$root/Tests/Fixtures/browser.sh" tokenvault login local
step "tokenvault get local --field refresh_token | wc -c; tokenvault status local"
tokenvault get local --field refresh_token | wc -c
tokenvault status local
# Make the stored token expired, keeping its refresh token (what an hour would do).
tokenvault get local --format json \
  | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); print(json.dumps({**r.get("extra", {}), "access_token": r["access_token"], "refresh_token": r["refresh_token"], "expires_at": 1}))' \
  | tokenvault set local --provider local 2>/dev/null
step "tokenvault status local      # expired, but it has a refresh token"
tokenvault status local
step "tokenvault get local         # refreshed before it is printed"
tokenvault get local
step "tokenvault status local"
tokenvault status local
step "curl -s http://127.0.0.1:$port/stats     # the provider saw one refresh"
curl -s "http://127.0.0.1:$port/stats"; echo
kill "$provider_pid" 2>/dev/null || true
provider_pid=""

step "tokenvault delete api.github.com --account work; tokenvault get api.github.com --account work"
tokenvault delete api.github.com --account work
tokenvault get api.github.com --account work || echo "exit=$?"
tokenvault lock >/dev/null 2>&1
printf '\ndemo done: everything lived in %s, now removed.\n' "$demo_home"
