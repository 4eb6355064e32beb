#!/usr/bin/env bash
# Writers `set` a credential again and again while readers `get` it; prints
# one line per failed or wrong read, then "writes N reads M".
# Usage: soak.sh TOKENVAULT WRITERS WRITES_EACH READERS
set -u
tv=$1 writers=$2 each=$3 readers=$4
dir=$(mktemp -d)
"$tv" set soak.example <<<'{"access_token":"w0-0"}' 2>/dev/null || { echo "initial set failed"; exit 1; }
for w in $(seq 1 "$writers"); do
  ( for n in $(seq 1 "$each"); do
      "$tv" set soak.example <<<"{\"access_token\":\"w$w-$n\",\"expires_in\":3600}" 2>>"$dir/werr" || echo "set failed: $?" >>"$dir/fail"
    done ) &
done
writer_pids=$(jobs -p)
for r in $(seq 1 "$readers"); do
  ( while [ ! -e "$dir/done" ]; do
      out=$("$tv" get soak.example 2>>"$dir/rerr"); status=$?
      echo x >>"$dir/reads.$r"
      if [ $status -ne 0 ]; then echo "get exited $status: $(tail -n1 "$dir/rerr")" >>"$dir/fail"
      elif ! [[ $out =~ ^w[0-9]+-[0-9]+$ ]]; then echo "get printed '$out'" >>"$dir/fail"; fi
    done ) &
done
wait $writer_pids
touch "$dir/done"
wait
cat "$dir/fail" 2>/dev/null
echo "writes $((writers * each)) reads $(cat "$dir"/reads.* 2>/dev/null | wc -l)"
rm -rf "$dir"
