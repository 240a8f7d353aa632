#!/bin/bash
# Run contracts (issue 20): checking a contract of 20 globs (and a JSON
# output against a schema) against a run that changed 10,000 paths, against
# that run's own collection time (usage.delta_ms), median of 5 runs.
# Prints rows in bench/run.sh's format; never fails on time.
#   bench/contract.sh OUT
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
B=${AIRLOCK_BUILD:-$root/build}
OUT=$1
H="$OUT/homecontract"; rm -rf "$H"; A() { "$B/airlock" --home "$H" "$@"; }
echo "== contract: 20 globs against 10,000 changed paths vs the run's collection" >&2
A init >/dev/null
mkdir -p "$OUT/csrc"; echo seed > "$OUT/csrc/seed.txt"
A project create c --from "$OUT/csrc" >/dev/null
# 20 patterns of every kind: literal, wildcard segments, **, classes, negations
cat > "$OUT/contract.json" <<'JSON'
{"writable": ["out/**", "!out/secret/**", "reports/*.json", "data/[a-f]*.csv", "*.log",
  "/top.txt", "a/*/c", "logs/**/*.txt", "tmp/", "x/y/z", "cache/**", "!cache/keep",
  "build/*/obj/*.o", "docs/**/*.md", "**/README", "q?.txt", "w/[0-9][0-9]/*", "v/**/w",
  "/seed.txt", "final/**"],
 "outputs": [{"path": "out/summary.json", "json_schema": {"type": "object", "required": ["n"],
   "properties": {"n": {"type": "integer"}}}}]}
JSON
cmd='mkdir -p out; i=0; while [ $i -lt 100 ]; do mkdir -p out/d$i; j=0; while [ $j -lt 100 ]; do echo $i.$j > out/d$i/f$j.txt; j=$((j+1)); done; i=$((i+1)); done; echo "{\"n\": 10000}" > out/summary.json'
for _ in 1 2 3 4 5; do
	A run c --contract "$OUT/contract.json" --json -- sh -c "$cmd" 2>/dev/null |
		python3 -c 'import json,sys; d=json.load(sys.stdin); u=d["usage"]
assert d["contract"]["verdict"] == "satisfied", d["contract"]
print(u["contract_ms"], u["delta_ms"], d["changes"]["added"])'
done >"$OUT/contract.txt"
c=$(awk '{print $1}' "$OUT/contract.txt" | median)
d=$(awk '{print $2}' "$OUT/contract.txt" | median)
n=$(awk '{print $3}' "$OUT/contract.txt" | median)
row "contract check, 20 globs x $n paths (ms)" "$c" "$d" "$(awk -v a="$c" -v b="$d" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')" "<= 0.1 x the run's collection (peer column)"
