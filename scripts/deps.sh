#!/usr/bin/env bash
# Installs the Debian packages a make target needs, when they are missing,
# and nothing more. Usage: scripts/deps.sh [build|deb|demo|test|bench|hot|venv] [--list|--no-venv]
# (--list: print the packages, one a line, and install nothing; --no-venv:
# the packages without the MCP Python SDK's venv)
#   build  what compiling and linking tokenvault needs (make build, make release, make install)
#   deb    build, and the packaging tools (make deb)
#   demo   build, and the local test provider the demo logs in to (make demo)
#   test   everything the tests drive: keyrings (gnome-keyring, KeePassXC, KWallet), etcd,
#          dovecot, tinyproxy, git, gh, kubectl, a software TPM (swtpm, tpm2-tools),
#          shells, man tools, the MCP Python SDK (make test; the default)
#   bench  test, and the benchmark tools (make bench)
#   hot    test, and valgrind (make hot-text)
#   venv   the MCP Python SDK's venv alone (make test makes it while the build compiles)
set -euo pipefail
mode=${1:-test}
build=(pkg-config gcc libstdc++-12-dev binutils patchelf libsecret-1-dev libsodium-dev libkeyutils-dev
       libcurl4-openssl-dev libqrencode-dev libssl-dev libpwquality-dev libtss2-dev)
demo=(python3 python3-authlib python3-flask curl)
deb=(dpkg-dev)
test=(keyutils gnome-keyring libsecret-tools dbus dbus-daemon python3 python3-nacl python3-pexpect util-linux
      procps curl openssl fish zsh python3-flask python3-authlib man-db groff-base mandoc bash-completion
      etcd-server etcd-client git gh dovecot-imapd zbar-tools python3-dbus python3-venv systemd lintian tinyproxy
      keepassxc libkf5wallet-bin libqca-qt5-2-plugins swtpm tpm2-tools)
case $mode in
  build) pkgs=("${build[@]}") ;;
  deb) pkgs=("${build[@]}" "${deb[@]}") ;;
  demo) pkgs=("${build[@]}" "${demo[@]}") ;;
  test | bench)
    pkgs=("${build[@]}" "${deb[@]}" "${test[@]}")
    # The adapter tests drive a real kubectl: the machine's, else Debian's.
    command -v kubectl >/dev/null || pkgs+=(kubernetes-client)
    [ "$mode" = bench ] && pkgs+=(hyperfine time) ;;
  hot) pkgs=("${build[@]}" "${test[@]}" valgrind) ;;
  venv) pkgs=() ;;
  *) echo "usage: scripts/deps.sh [build|deb|demo|test|bench|hot|venv] [--list|--no-venv]" >&2; exit 64 ;;
esac
if [ "${2:-}" = --list ]; then printf '%s\n' "${pkgs[@]}"; exit 0; fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The official MCP Python SDK (PyPI, pinned), for the MCP tests, and FastMCP,
# whose CLI logs in for the import tests: a venv of Debian's python3 under
# .build, made once.
mcp_venv() {
  case $mode in test | bench | venv) ;; *) return 0 ;; esac
  [ "${2:-}" = --no-venv ] && return 0
  local root venv
  root=$(cd "$(dirname "$0")/.." && pwd)
  venv="$root/.build/mcp-venv"
  [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import mcp, fastmcp' 2>/dev/null && return 0
  echo "installing the MCP Python SDK and FastMCP into $venv" >&2
  mkdir -p "$root/.build"
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check mcp==2.3.0 fastmcp==4.2.3
}
if [ ${#missing[@]} -eq 0 ]; then mcp_venv "$@"; exit 0; fi
echo "installing: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
mcp_venv "$@"
