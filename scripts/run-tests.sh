#!/usr/bin/env bash
# Runs the built test bundle (swift build --build-tests first) the way make
# test does: every test class in a process of its own, TEST_WORKERS classes at
# a time (default 6 on any machine: the suite waits more than it computes),
# the slowest classes first so none is left to run alone at
# the end; each class's output printed whole once it is done. Then a summary
# that names every failing test with its first failed assertion, every class
# that crashed, and the wall time, so the last lines of a log say what failed.
# Most of the suite waits (on servers, timeouts, child processes) rather than
# computes: on the 2-core machine four classes side by side took 3m28s where
# two took 6m44s (2026-11-27); from a fresh clone on 2026-11-29 four took
# 4m52s, five 4m19s to 4m29s, six 4m15s, where DebianPackageTests' release
# build, starved of the cores, ended last (at nice -10 too, 4m19s, and a
# renewal test met its deadline late). Once that build ran at the idle
# scheduling class and the binary's start was cut to a third: five 4m03s to
# 4m05s, six 3m49s.
#
# Each class runs in a user namespace of its own (scripts/isolate.py): the
# same ids, but a kernel user keyring of its own, so the key cache of one
# class is not another's.
#
# Usage: scripts/run-tests.sh [FILTER]   (FILTER: a grep -E pattern on
# Module.Class; TEST_WORKERS=1 runs one class at a time)
#        REPEAT=N scripts/run-tests.sh [FILTER]   runs them N times on one
# build and ends with every test that failed in any run, with its count:
# the way to find a flaky test before CI does (make test REPEAT=N TESTS=...).
set -uo pipefail
cd "$(dirname "$0")/.."
repeat=${REPEAT:-1}
if [ "$repeat" -gt 1 ]; then
  tally=.build/test-repeat
  rm -rf "$tally" && mkdir -p "$tally"
  for i in $(seq "$repeat"); do
    echo "== run $i of $repeat =="
    REPEAT=1 TEST_LOGS="$tally/run-$i" "$0" "$@" > "$tally/run-$i.out" 2>&1
    echo "run $i: exit $? — $(tail -1 "$tally/run-$i.out")"
    grep -E '^(FAILED|CRASHED|NOT RUN) ' "$tally/run-$i.out" | sed 's/ — .*//; s/: its log is .*//' >> "$tally/failures"
  done
  echo
  echo "== tokenvault tests, $repeat runs: what failed in any run (count of runs) =="
  if [ -s "$tally/failures" ]; then
    sort "$tally/failures" | uniq -c | sort -k1,1nr
    echo "each run's output: $tally/run-N.out, its class logs: $tally/run-N/"
    exit 1
  fi
  echo "nothing: every run passed"
  exit 0
fi
bundle=.build/debug/tokenvaultPackageTests.xctest
workers=${TEST_WORKERS:-6}
logs=${TEST_LOGS:-.build/test-logs}
durations=.build/test-durations.tsv   # seconds per class, from the last run here
rm -rf "$logs" && mkdir -p "$logs"
[ -x "$bundle" ] || { echo "run-tests: $bundle is not built (swift build --build-tests)" >&2; exit 2; }

listed=$("$bundle" --list-tests | grep -E '^[A-Za-z0-9_]+\.[A-Za-z0-9_]+/[A-Za-z0-9_]+$')
classes=$(sed 's|/.*||' <<<"$listed" | sort -u | grep -E "${1:-.}")
[ -n "$classes" ] || { echo "run-tests: no test class matches ${1:-.}" >&2; exit 2; }
# Slowest first: the last run's times where there are any, else what a fresh
# clone measured for the long classes (2026-11-29; the rest count as 5 s).
known="TokenVaultCLITests.DebianPackageTests 160
TokenVaultCLITests.FleetTests 77
TokenVaultCLITests.KeePassXCTests 67
TokenVaultCLITests.AgentHardeningTests 61
TokenVaultCLITests.AgentTests 61
TokenVaultCLITests.KeePassXCDisplayTests 60
TokenVaultCLITests.HostileServerTests 55
TokenVaultCLITests.KWalletTests 51
TokenVaultCLITests.MCPBridgeTests 35
TokenVaultCLITests.StateTests 35
TokenVaultCLITests.AgentPromiseTests 34
TokenVaultCLITests.MCPModernTests 34
TokenVaultCLITests.LoginTests 30
TokenVaultCLITests.LoginLifecycleTests 26
TokenVaultCLITests.ShellCompletionTests 25
TokenVaultCLITests.HostileLocalTests 24
TokenVaultCLITests.MCPSessionTests 24
TokenVaultCLITests.ConformanceAuthTests 22
TokenVaultCLITests.LockedKeyringTests 22
TokenVaultCLITests.SecretServiceTests 20
TokenVaultCLITests.AdapterTests 19
TokenVaultCLITests.FirstHourTests 19"
[ -s "$durations" ] && known=$(cat "$durations")
ordered=$(for c in $classes; do
  printf '%s %s\n' "$(awk -v c="$c" '$1 == c { print $2; exit }' <<<"$known" | grep . || echo 5)" "$c"
done | sort -k1,1nr | awk '{ print $2 }')

started=$(date +%s)
export bundle logs
# Each test that started the binary writes its name here (BinaryUse.swift).
export TV_TEST_BINARY_LOG="$PWD/$logs/binary-tests.log"
# One class: its output kept, then printed whole (one class at a time on
# stdout); a temporary directory of its own (TMPDIR), removed when it
# ends: what it still held at its end (a class's sandboxes kept in statics,
# its fixtures' files) is not left behind in /tmp. Open as /tmp is: the
# tests that other users reach a sandbox's files from (dovecot's, nobody)
# open the way from there down.
run_class() {
  local c=$1 t0 rc tmp
  t0=$(date +%s)
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/tv-class.XXXXXX") && chmod 1777 "$tmp"
  TMPDIR=$tmp /usr/bin/python3 scripts/isolate.py "$bundle" "$c" > "$logs/$c.log" 2>&1 < /dev/null
  rc=$?
  rm -rf "$tmp"
  echo "$c $(( $(date +%s) - t0 )) $rc" > "$logs/$c.done"
  flock "$logs/.stdout" cat "$logs/$c.log"
}
export -f run_class
printf '%s\n' $ordered | xargs -P "$workers" -I{} bash -c 'run_class "$1"' _ {}
ended=$(date +%s)

# The summary.
passed=$(cat "$logs"/*.log | grep -cE "^Test Case '.*' passed \(")
failed_cases=$(cat "$logs"/*.log | sed -n "s/^Test Case '\(.*\)' failed (.*/\1/p")
failed=$(grep -c . <<<"$failed_cases")
crashed=()
for d in "$logs"/*.done; do
  read -r c seconds rc < "$d"
  [ "$rc" = 0 ] || grep -q "^Test Case '.*' failed (" "$logs/$c.log" || crashed+=("$c (exit $rc)")
done
missing=()
for c in $ordered; do [ -e "$logs/$c.done" ] || missing+=("$c"); done
# Every test listed for the classes run was started: none is lost to a class name or a crash.
started_tests=$(cat "$logs"/*.log | sed -n "s/^Test Case '\(.*\)' started.*/\1/p" | sort)
for t in $(grep -E "^($(tr '\n' '|' <<<"$classes" | sed 's/|$//'))/" <<<"$listed" | sed 's|^[^.]*\.||; s|/|.|' | sort |
  comm -23 - <(echo "$started_tests")); do
  missing+=("$t")
done
cat "$logs"/*.done | awk '{ print $1, $2 }' | sort -k2,2nr > "$durations.new" && mv "$durations.new" "$durations"
echo
echo "== tokenvault tests: $(wc -w <<<"$ordered") classes, $workers at a time, $(( (ended - started) / 60 ))m $(( (ended - started) % 60 ))s =="
echo "slowest: $(head -3 "$durations" | awk '{ printf "%s%s %ss", (NR > 1 ? ", " : ""), $1, $2 }')"
while read -r name; do
  [ -n "$name" ] || continue
  first=$(grep -h -m1 -E "error: ${name//./\\.} :" "$logs"/*.log | head -1)
  echo "FAILED $name — ${first:-no assertion line (see its class log)}"
done <<<"$failed_cases"
for c in "${crashed[@]}"; do echo "CRASHED $c: its log is $logs/${c%% *}.log"; done
for c in "${missing[@]}"; do echo "NOT RUN $c"; done
binary=$(sort -u "$TV_TEST_BINARY_LOG" 2>/dev/null | grep -c .)
total=$((passed + failed))
echo "$binary of $total tests started the binary ($(( total ? binary * 100 / total : 0 ))%)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ ${#crashed[@]} -eq 0 ] && [ ${#missing[@]} -eq 0 ]
