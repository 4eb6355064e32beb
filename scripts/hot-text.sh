#!/usr/bin/env bash
# `make hot-text`: writes scripts/hot-text.ld, the functions a `get` runs
# (from the file vault, from the Secret Service, and answered by the agent),
# which the release links first, together: a command then maps a few hundred
# KiB of code instead of pieces of all 12 MB (docs/benchmarks.md, "The code a
# get runs, together"). Give it a release linked without the list (make
# hot-text builds one: valgrind names no function outside .text); a
# stale list only costs memory, never correctness. Needs valgrind
# (scripts/deps.sh hot).
#
# scripts/hot-text.sh --check BIN: fails when fewer than 90 % of the
# functions scripts/hot-text.ld lists are defined in the release BIN (a
# rename, a moved file or a changed signature gives a function another
# name, and the list goes stale without a word); make release runs it.
set -euo pipefail
if [ "${1:-}" = "--check" ]; then
  /usr/bin/python3 - "$(dirname "$0")/hot-text.ld" "$2" <<'PY'
import re, subprocess, sys
listed = re.findall(r"\*\(\.text\.(\S+)\)", open(sys.argv[1]).read())
nm = subprocess.run(["nm", "--defined-only", sys.argv[2]], capture_output=True, text=True, check=True).stdout
defined = {line.split()[-1] for line in nm.splitlines() if line.strip()}
found = sum(name in defined for name in listed)
if not listed or found < 0.9 * len(listed):
    sys.exit(f"release: scripts/hot-text.ld is stale: {len(listed) - found} of the {len(listed)} functions it "
             f"lists are gone from the binary; run make hot-text (docs/benchmarks.md)")
print(f"hot text: {found} of the {len(listed)} functions scripts/hot-text.ld lists are in the binary")
PY
  exit
fi
TV=$(cd "$(dirname "${1:-.build/release/tokenvault}")" && pwd)/$(basename "${1:-tokenvault}")
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/private-bus.sh"
work=$(mktemp -d /tmp/tokenvault-hot.XXXXXX)
cleanup() {
  [ -n "${bus_pid:-}" ] && kill "$bus_pid" 2>/dev/null
  XDG_RUNTIME_DIR="$work/run-agent" "$TV" agent stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
export HOME="$work" XDG_DATA_HOME="$work/data" XDG_CONFIG_HOME="$work/config" XDG_RUNTIME_DIR="$work/run"
export TOKENVAULT_AGENT=manual
unset TOKENVAULT_PASSPHRASE_FILE TOKENVAULT_PASSPHRASE_COMMAND TOKENVAULT_VAULT TOKENVAULT_BACKEND
mkdir -m 700 "$XDG_RUNTIME_DIR" "$work/run-agent"
# valgrind reads the symbol table, not the release's DWARF.
strip --strip-debug -o "$work/tokenvault" "$TV"
bin="$work/tokenvault"
start_private_bus "$work" hot
echo '{"access_token":"hot-token","expires_in":86400}' | TOKENVAULT_BACKEND=secret-service "$bin" set api.hot.example 2>/dev/null
mkdir -p "$XDG_CONFIG_HOME/tokenvault"
printf 'min_valid = 60\n[providers.local]\nservice = "127.0.0.1:9000"\nauthorize_url = "http://127.0.0.1:9000/authorize"\ntoken_url = "http://127.0.0.1:9000/token"\nclient_id = "tv"\n' \
  > "$XDG_CONFIG_HOME/tokenvault/config.toml"
vault="$work/v/vault"
TOKENVAULT_PASSPHRASE=hot /usr/bin/python3 "$root/Tests/Fixtures/make_vault.py" "$vault" 10
TOKENVAULT_PASSPHRASE=hot TOKENVAULT_BACKEND=file TOKENVAULT_VAULT="$vault" "$bin" get api5.example.com >/dev/null
profile() {  # name, env..., then the command's arguments after --
  local name=$1; shift
  env "$@" valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/$name.cg" "$bin" get \
    "${GET_ARGS[@]}" >/dev/null 2>"$work/$name.log" || { cat "$work/$name.log" >&2; exit 1; }
}
GET_ARGS=(api5.example.com); profile file TOKENVAULT_BACKEND=file TOKENVAULT_VAULT="$vault"
GET_ARGS=(api.hot.example); profile secret-service DBUS_SESSION_BUS_ADDRESS="$DBUS_SESSION_BUS_ADDRESS"
XDG_RUNTIME_DIR="$work/run-agent" TOKENVAULT_AGENT= "$bin" get api.hot.example >/dev/null
for _ in $(seq 50); do XDG_RUNTIME_DIR="$work/run-agent" "$bin" agent status >/dev/null 2>&1 && break; sleep 0.1; done
profile agent XDG_RUNTIME_DIR="$work/run-agent"
# Every function of the tokenvault binary that a run entered, by name.
/usr/bin/python3 - "$root/scripts/hot-text.ld" "$work"/*.cg <<'PY'
import re, sys
names = set()
for path in sys.argv[2:]:
    objects, functions, here, entered = {}, {}, None, []
    for line in open(path, errors="replace").read().split("\n"):
        m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
        if m:
            kind, i, name = m.groups()
            if name:
                objects[i] = name
            if kind == "ob":
                here = objects.get(i)
            continue
        m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            kind, i, name = m.groups()
            if name:
                functions[i] = name
            if kind == "fn" and here and here.endswith("/tokenvault"):
                entered.append(i)
    names.update(functions[i] for i in entered if i in functions)
names = sorted(n for n in names if re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$.]*", n))
with open(sys.argv[1], "w") as out:
    out.write("/* Written by scripts/hot-text.sh (make hot-text): the functions a get runs,\n"
              "   linked first and together (docs/benchmarks.md, \"The code a get runs,\n"
              "   together\"). Each name is the section of one function (-function-sections);\n"
              "   one that no longer exists matches nothing. */\n")
    out.write("SECTIONS\n{\n  .text.hot :\n  {\n")
    for n in names:
        out.write("    *(.text.%s)\n" % n)
    out.write("  }\n}\nINSERT BEFORE .text;\n")
print("scripts/hot-text.ld: %d functions" % len(names))
PY
