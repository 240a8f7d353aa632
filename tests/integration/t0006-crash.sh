#!/bin/bash
# kill -9 the importer at random points: fsck stays clean, a re-import works.
. "$(dirname "$0")/../lib.sh"
S="$T/src"; mkdir -p "$S"
for d in $(seq 1 20); do
	mkdir -p "$S/d$d"
	for f in $(seq 1 100); do echo "file $d $f $RANDOM" > "$S/d$d/f$f"; done
done
for i in $(seq 1 12); do head -c $((1000000 + i * 100000)) /dev/urandom > "$S/large$i"; done
"$AL" init >/dev/null
want=$("$AL" snapshot import --no-cache "$S")
start=$(date +%s%N); "$AL" --home "$T/timing" init >/dev/null; "$AL" --home "$T/timing" snapshot import "$S" >/dev/null
span_ms=$(( ($(date +%s%N) - start) / 1000000 + 5 ))
echo "# a whole init+import takes ${span_ms} ms; kills land uniformly in it"

N=${CRASH_ROUNDS:-30}
clean=0; reimported=0; swept=0; killed=0
for i in $(seq 1 "$N"); do  # stderr: hide the shell's "Killed" job notices
	H="$T/h$i"
	( "$AL" --home "$H" init && "$AL" --home "$H" snapshot import --no-cache "$S" ) >/dev/null 2>&1 &
	pid=$!
	ms=$((RANDOM % span_ms))
	sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
	kill -9 -- "$pid" 2>/dev/null; pkill -9 -f "airlock --home $H " 2>/dev/null
	if { wait "$pid"; } 2>/dev/null; then :; else killed=$((killed + 1)); fi
	# the subshell is reaped; make sure the airlock it ran is gone too (a
	# dying process still holds its batch lock, which the sweep respects)
	for _ in $(seq 1 100); do pgrep -f "airlock --home $H " >/dev/null || break; sleep 0.02; done
	# the home may not even exist yet: then there is nothing to check but a fresh start
	"$AL" --home "$H" init >/dev/null 2>&1
	if "$AL" --home "$H" fsck >"$T/fsck.out" 2>&1; then clean=$((clean + 1)); else sed 's/^/# /' "$T/fsck.out" | head; fi
	[ "$("$AL" --home "$H" snapshot import "$S" 2>&1)" = "$want" ] && reimported=$((reimported + 1))
	[ -z "$(find "$H/tenants/default/tmp" -mindepth 1)" ] && swept=$((swept + 1))
	"$AL" --home "$H" fsck >/dev/null 2>&1 || clean=$((clean - 1))
	rm -rf "$H"
done 2>/dev/null
echo "# $killed of $N importers were killed before finishing"
is "$clean" "$N" "fsck is clean after each of $N kill -9 (before and after re-import)"
is "$reimported" "$N" "a re-import after each kill succeeds with the right id"
is "$swept" "$N" "temp files of killed importers are swept"
ok "some importers were really killed mid-way" -- test "$killed" -ge 3
run "$AL" snapshot export "$want" "$T/out"
ok "the snapshot exports completely" -- diff -r "$S" "$T/out"
done_testing
