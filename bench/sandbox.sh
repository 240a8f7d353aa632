#!/bin/bash
# Sandbox figures (issue 4), side by side with bwrap / find / cp -a in the
# same run.  Prints rows in bench/run.sh's format on stdout; never fails on
# time.  Needs root (cgroups) and a 100k-file tree: bench/sandbox.sh TREE OUT
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
B=${AIRLOCK_BUILD:-$root/build}
AL="$B/airlock"
TREE=$1 OUT=$2
med11() { for _ in 1 2 3 4 5 6 7 8 9 10 11; do time_us "$@"; done | median; }
H="$OUT/homerun"; rm -rf "$H"; A() { "$AL" --home "$H" "$@"; }
A init >/dev/null

echo "== airlock run /bin/true vs bwrap --unshare-all --ro-bind / / /bin/true" >&2
mkdir -p "$OUT/small"; echo hi > "$OUT/small/a.txt"
A project create small --from "$OUT/small" >/dev/null
A run small -- true 2>/dev/null   # imports the image, materialises both layers once
al_true=$(med11 "$AL" --home "$H" run small -- /bin/true)
bw_true=$(med11 bwrap --unshare-all --ro-bind / / /bin/true)
plain=$(med11 /bin/true)
L="$H/tenants/default/lower"
img=$(A image list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"][7:])')
layer() { basename "$(find "$L" -maxdepth 1 -type d -name "$1-*")"; } # not its .lock
img=$(layer "$img")
ws=$(layer "$(A project head small | cut -c8-)")
sbx=$("$B/bench/sbx" "$L" "$img" "$ws" "$B/airlock-init" 21)
version=$(med11 "$AL" --version)
row "sandbox alone, /bin/true (us, in-process, 21)" "$sbx" "$bw_true" "$(ratio "$sbx" "$bw_true")" "<= 1.0 x bwrap: namespaces, mounts, seccomp, cgroups"
row "airlock run /bin/true, whole CLI (us, median 11)" "$al_true" "$bw_true" "$(ratio "$al_true" "$bw_true")" "+ process start ($version us), draft, ledger, fsyncs; true alone $plain us"

echo "== first materialisation of a 100k-file snapshot vs cp -a" >&2
A project create big --from "$TREE" >/dev/null
bytes=$(du -sb "$TREE" | cut -f1)
s=$(date +%s%N); A run big --json -- true >"$OUT/first.json" 2>/dev/null; first=$(ms "$s")
mat=$(field usage.materialise_ms <"$OUT/first.json")
rm -rf "$OUT/cpa"; s=$(date +%s%N); cp -a "$TREE" "$OUT/cpa"; sync -f "$OUT/cpa"; cpa=$(ms "$s"); rm -rf "$OUT/cpa"
mbs() { awk -v b="$bytes" -v t="$1" 'BEGIN { printf "%.0f", (t > 0 ? b / 1e6 / (t / 1000) : 0) }'; }
row "materialise 100k files (MB/s; ms $mat vs $cpa)" "$(mbs "$mat")" "$(mbs "$cpa")" "$(ratio "$(mbs "$mat")" "$(mbs "$cpa")")" "reported, vs cp -a + sync (first run took $first ms)"

echo "== delta of a run that modifies 10 files of the 100k vs one stat pass" >&2
files=$(cd "$TREE" && find dept* -name '*.csv' | sort | awk 'NR % 9973 == 1' | head -10 | tr '\n' ' ')
deltas=$(for _ in 1 2 3 4 5; do A run big --json -- sh -c "for f in $files; do echo edited >> \$f; done" 2>/dev/null | field usage.delta_ms; done | median)
find "$TREE" -printf '%s\n' >/dev/null
stat_pass=$(for _ in 1 2 3; do s=$(date +%s%N); find "$TREE" -printf '%s\n' >/dev/null; ms "$s"; done | median)
row "delta, 10 modified of 100k (ms, median of 5)" "$deltas" "$stat_pass" "$(ratio "$deltas" "$stat_pass")" "<= 0.05 x one stat pass (find -printf %s)"

echo "== airlock's own peak RSS during a run" >&2
/usr/bin/time -f %M -o "$OUT/rss_small" "$AL" --home "$H" run small -- /bin/true >/dev/null 2>&1
/usr/bin/time -f %M -o "$OUT/rss_big" "$AL" --home "$H" run big -- /bin/true >/dev/null 2>&1
/usr/bin/time -f %M -o "$OUT/rss_cmd" "$B/tests/probe" nothing >/dev/null 2>&1 || true
/usr/bin/time -f %M -o "$OUT/rss_ver" "$AL" --version >/dev/null 2>&1
row "peak RSS of airlock run, small / 100k (KiB)" "$(cat "$OUT/rss_small")/$(cat "$OUT/rss_big")" "$(cat "$OUT/rss_ver")" "-" "< 16 MiB beyond the command; peer: airlock --version"
