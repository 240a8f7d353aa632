#!/bin/bash
# The web UI's figures (issue 15), Chromium headless against a daemon on
# 127.0.0.1: the first diff painted for a 1,000-file draft, long tasks while
# its file list scrolls, the longest main-thread task opening a 5 MB,
# 100,000-line file's diff (web/tests/bench.mjs).  Prints rows in
# bench/run.sh's format; never fails on time.   bench/web.sh OUT
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
B=${AIRLOCK_BUILD:-$root/build}
OUT=$1
CHROMIUM=${AIRLOCK_CHROMIUM:-/usr/bin/chromium}
H="$OUT/homeweb"; rm -rf "$H"; A() { "$B/airlock" --home "$H" "$@"; }
echo "== web UI: a 1,000-file draft and a 5 MB file in Chromium" >&2
A init >/dev/null
S="$OUT/websrc"; rm -rf "$S"; mkdir -p "$S/many" "$S/big"
for d in 0 1 2 3 4 5 6 7 8 9; do mkdir -p "$S/many/d$d"; for f in $(seq 0 99); do seq 1 20 | sed "s/^/file $d.$f line /" > "$S/many/d$d/f$f.txt"; done; done
seq 1 100000 | awk '{printf "row %06d, a line of text to make fifty bytes...\n", $1}' > "$S/big/huge.txt"
A project create w --from "$S" >/dev/null
id() { python3 -c 'import json,sys; print(json.load(sys.stdin)["draft"])'; }
BIG=$(A run w --json -- sh -c 'for f in many/d*/f*.txt; do sed -i "s/ line 10$/ line ten/" "$f"; done' | id)
HUGE=$(A run w --json -- sh -c 'sed -i -e "s/^row 000500,/ROW 000500,/" -e "s/^row 050000,/ROW 050000,/" -e "s/^row 099990,/ROW 099990,/" big/huge.txt' | id)
A admin principal create rv --role reviewer >/dev/null
TOKEN=$(A admin token create rv 2>/dev/null)
"$B/airlock" --home "$H" serve --listen 127.0.0.1:0 >"$OUT/webserve.out" 2>"$OUT/webserve.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
URL=
for _ in $(seq 100); do URL=$(sed -n 's/^airlock serve: listening on //p' "$OUT/webserve.out"); [ -n "$URL" ] && break; sleep 0.05; done
URL=$URL TOKEN=$TOKEN BIG=$BIG HUGE=$HUGE CHROMIUM=$CHROMIUM node "$root/web/tests/bench.mjs" >"$OUT/web.txt"
v() { awk -v k="$1" '$1 == k {print $2}' "$OUT/web.txt"; }
row "web: first diff painted, 1,000-file draft (ms)" "$(v first_diff_ms)" "-" "-" "<= 1000 ms after navigation (median of 5)"
row "web: long tasks scrolling its file list" "$(v scroll_long_tasks)" "-" "-" "none over 50 ms (longest $(awk '$1 == "scroll_long_tasks" {print $4}' "$OUT/web.txt") ms)"
row "web: longest task opening a 5 MB file (ms)" "$(v huge_max_task_ms)" "-" "-" "<= 200 ms (median of 3)"
