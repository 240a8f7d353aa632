#!/bin/bash
# Replay figures (issue 14), side by side in the same run: a replay of a
# recorded /bin/true run against that run itself (target <= 1.1 x), and the
# verdict on drafts of 10,000 changed files against the replay's own
# collection time (target <= 0.2 x: it compares the two manifests' digests
# and reads no file whose digest is the same).  Prints rows in
# bench/run.sh's format on stdout; never fails on time.
#   bench/replay.sh OUT
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
B=${AIRLOCK_BUILD:-$root/build}
AL="$B/airlock"
OUT=$1
N=${BENCH_REPLAY_N:-21}
FILES=${BENCH_REPLAY_FILES:-10000}
H="$OUT/homereplay"; rm -rf "$H"; A() { "$AL" --home "$H" "$@"; }
A init >/dev/null
mkdir -p "$OUT/replaysmall"; echo hi > "$OUT/replaysmall/a.txt"
A project create small --from "$OUT/replaysmall" >/dev/null

echo "== airlock replay of a /bin/true run vs airlock run /bin/true" >&2
A run small -- /bin/true 2>/dev/null   # imports the image, materialises both layers once
ORIG=$(A run small --json -- /bin/true 2>/dev/null | field id)
A replay "$ORIG" >/dev/null   # the same warm state for both
# interleaved, so that both see the same machine, in turns (ABBA): neither
# always follows the other's writes
: >"$OUT/t_run"; : >"$OUT/t_replay"
one_run() { local s; s=$(date +%s%N); A run small -- /bin/true >/dev/null 2>&1; us "$s" >>"$OUT/t_run"; }
one_replay() { local s; s=$(date +%s%N); A replay "$ORIG" >/dev/null 2>&1; us "$s" >>"$OUT/t_replay"; }
for i in $(seq "$N"); do
	if [ $((i % 2)) = 1 ]; then one_run; one_replay; else one_replay; one_run; fi
done
run_us=$(median <"$OUT/t_run"); replay_us=$(median <"$OUT/t_replay")
fastest="$(sort -n "$OUT/t_replay" | head -1) vs $(sort -n "$OUT/t_run" | head -1)"
row "replay of a /bin/true run (us, median $N)" "$replay_us" "$run_us" "$(ratio "$replay_us" "$run_us")" "<= 1.1 x the run itself (interleaved; fastest $fastest)"

echo "== the verdict on drafts of $FILES changed files vs the replay's collection" >&2
mkdir -p "$OUT/replaybig"; echo base > "$OUT/replaybig/base.txt"
A project create big --from "$OUT/replaybig" >/dev/null
# 100 directories of FILES/100 files each, the same bytes every time
GEN="i=0; while [ \$i -lt 100 ]; do mkdir -p d\$i; j=0; while [ \$j -lt $((FILES / 100)) ]; do echo \"file \$i \$j\" > d\$i/f\$j; j=\$((j+1)); done; i=\$((i+1)); done"
BIG=$(A run big --json -- sh -c "$GEN" 2>/dev/null | field id)
verdict_row() { # NAME ARGS...: the median of 3 replays' verdict ms against their delta ms
	local name=$1; shift
	: >"$OUT/v"; : >"$OUT/d"
	for _ in 1 2 3; do
		A replay "$BIG" "$@" --json >"$OUT/rep.json" 2>/dev/null || true
		field verdict.ms <"$OUT/rep.json" >>"$OUT/v"
		field usage.delta_ms <"$OUT/rep.json" >>"$OUT/d"
	done
	local v d r
	v=$(median <"$OUT/v"); d=$(median <"$OUT/d"); r=$(field verdict.result <"$OUT/rep.json")
	row "$name (ms)" "$v" "$d" "$(ratio "$v" "$d")" "<= 0.2 x collection; $(field changes.added <"$OUT/rep.json") added, $r"
}
verdict_row "verdict, $FILES changed, same base"
# the head moves elsewhere: the changes are compared path by path
echo "moved" > "$OUT/replaybig/base.txt"
A commit big "$OUT/replaybig" --base "$(A project head big)" >/dev/null
verdict_row "verdict, $FILES changed, on a moved head" --on-head
# ten of them hold the clock: the verdict diffs those ten, and only those
CLK=$(A run big --json -- sh -c "$GEN; k=0; while [ \$k -lt 10 ]; do date > d\$k/clock; k=\$((k+1)); done" 2>/dev/null | field id)
BIG=$CLK
FIN=$(A run show "$CLK" --json | field finished)
for _ in $(seq 100); do [ "$(date +%s)" -gt "$FIN" ] && break; sleep 0.05; done
verdict_row "verdict, $FILES changed, 10 differ"
