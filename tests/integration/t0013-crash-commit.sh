#!/bin/bash
# kill -9 during commit and apply at random points: the head always names a
# complete snapshot and fsck is clean.
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
mkdir -p "$T/p"
for d in $(seq 1 10); do mkdir -p "$T/p/d$d"; for f in $(seq 1 30); do echo "$d $f" > "$T/p/d$d/f$f"; done; done
"$AL" project create c --from "$T/p" >/dev/null
B=$("$AL" project head c)
# how long one commit takes here: kills land uniformly inside that span
rm -rf "$T/w"; cp -a "$T/p" "$T/w"; echo timing > "$T/w/timing"
"$AL" commit c "$T/w" --base "$B" >/dev/null
rm -rf "$T/w"; cp -a "$T/p" "$T/w"; echo timing2 > "$T/w/timing"
start=$(date +%s%N)
"$AL" commit c "$T/w" --base "$B" --strategy conflict_copy >/dev/null
span_ms=$(( ($(date +%s%N) - start) / 1000000 + 2 ))
echo "# one rebasing commit takes ${span_ms} ms"
N=${CRASH_ROUNDS:-100}
complete=0; clean=0; killed=0
for i in $(seq 1 "$N"); do
	# a commit that must rebase (the head moved since its base), or a draft apply
	rm -rf "$T/w"; cp -a "$T/p" "$T/w"; echo "round $i" > "$T/w/d$((i % 10 + 1))/r$i"
	if [ $((i % 2)) = 0 ]; then
		"$AL" commit c "$T/w" --base "$B" --strategy conflict_copy >/dev/null 2>&1 &
	else
		d=$("$AL" draft create c --from "$T/w" 2>/dev/null)
		"$AL" apply "$d" --accept-all --strategy conflict_copy >/dev/null 2>&1 &
	fi
	pid=$!
	ms=$((RANDOM % span_ms))
	sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
	kill -9 "$pid" 2>/dev/null
	if { wait "$pid"; } 2>/dev/null; then :; else killed=$((killed + 1)); fi
	h=$("$AL" project head c)
	rm -rf "$T/x"
	"$AL" snapshot export "$h" "$T/x" >/dev/null 2>&1 && complete=$((complete + 1))
	"$AL" fsck >/dev/null 2>&1 && clean=$((clean + 1))
done 2>/dev/null
echo "# $killed of $N were killed before finishing"
is "$complete" "$N" "after each kill the head names a complete snapshot (exports)"
is "$clean" "$N" "and fsck is clean"
ok "some commits were really killed mid-way" -- test "$killed" -ge 5
run "$AL" project log c
is "$rc" 0 "the log is readable"
done_testing
