#!/bin/bash
# Replay every fuzz target's corpus (fuzz/corpus/<target>/) with the
# standalone driver: a crash or abort on any input fails.
set -u
: "${AIRLOCK_BUILD:=$(cd "$(dirname "$0")/.." && pwd)/build}"
root=$(cd "$(dirname "$0")/.." && pwd)
n=0; failed=0
for src in "$root"/fuzz/fuzz_*.c; do
	t=$(basename "$src" .c); t=${t#fuzz_}
	n=$((n + 1))
	if out=$("$AIRLOCK_BUILD/fuzz/replay_$t" "$root/fuzz/corpus/$t" 2>&1); then
		echo "ok $n - fuzz corpus of $t: $out"
	else
		echo "not ok $n - fuzz corpus of $t"; echo "$out" | sed 's/^/# /' | tail -20; failed=$((failed + 1))
	fi
done
echo "1..$n"
[ "$failed" -eq 0 ]
