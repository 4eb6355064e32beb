#!/usr/bin/env bash
# Installs the Debian packages tokenvault builds, tests and benchmarks with,
# when they are missing. Usage: scripts/deps.sh [bench]
set -euo pipefail
pkgs=(pkg-config libsecret-1-dev libsodium-dev libkeyutils-dev keyutils libcurl4-openssl-dev gnome-keyring libsecret-tools
      dbus dbus-daemon python3 python3-nacl python3-pexpect util-linux procps patchelf binutils curl openssl fish zsh python3-flask python3-authlib
      man-db groff-base mandoc bash-completion etcd-server etcd-client git dovecot-imapd
      libqrencode-dev zbar-tools python3-dbus libssl-dev gcc libstdc++-12-dev libpwquality-dev python3-venv systemd
      dpkg-dev lintian fakeroot)
# The adapter tests drive a real kubectl: the machine's, else Debian's.
command -v kubectl >/dev/null || pkgs+=(kubernetes-client)
[ "${1:-}" = bench ] && pkgs+=(hyperfine time)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The official MCP Python SDK (PyPI, pinned), for the MCP tests: a venv of
# Debian's python3 under .build, made once.
mcp_venv() {
  local root venv
  root=$(cd "$(dirname "$0")/.." && pwd)
  venv="$root/.build/mcp-venv"
  [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import mcp' 2>/dev/null && return 0
  echo "installing the MCP Python SDK into $venv" >&2
  mkdir -p "$root/.build"
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check mcp==2.3.0
}
if [ ${#missing[@]} -eq 0 ]; then mcp_venv; exit 0; fi
echo "installing: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
mcp_venv
