#!/bin/bash
# kill -9 airlock gc, and a commit running beside it, at random points: the
# head always names a complete snapshot, fsck is clean, and the next pass
# finishes the job.
. "$(dirname "$0")/../lib.sh"
D="$AIRLOCK_HOME/tenants/default"
sql() { sqlite3 -cmd '.timeout 10000' "$D/meta.db" "$1"; }
"$AL" init >/dev/null
mkdir -p "$T/p"
for d in $(seq 1 10); do mkdir -p "$T/p/d$d"; for f in $(seq 1 30); do echo "$d $f" > "$T/p/d$d/f$f"; done; done
"$AL" project create c --from "$T/p" >/dev/null
# garbage: an import nothing records (its snapshot row dropped), with
# small (packed) and large (loose) objects
garbage() {
	rm -rf "$T/g"; mkdir -p "$T/g"
	for f in $(seq 1 300); do echo "garbage $1 $f" > "$T/g/f$f"; done
	head -c 300000 /dev/urandom > "$T/g/big1"; head -c 300000 /dev/urandom > "$T/g/big2"
	local id; id=$("$AL" snapshot import --no-cache "$T/g") || return 1
	sql "DELETE FROM snapshots WHERE id = x'${id#sha256:}'"
}
garbage 0
start=$(date +%s%N); "$AL" gc >/dev/null; span_ms=$(( ($(date +%s%N) - start) / 1000000 + 2 ))
echo "# one gc pass over 302 garbage objects takes ${span_ms} ms"
N=${CRASH_ROUNDS:-20}
complete=0; clean=0; killed=0
for i in $(seq 1 "$N"); do
	garbage "$i"
	rm -rf "$T/w"; cp -a "$T/p" "$T/w"; echo "round $i" > "$T/w/d$((i % 10 + 1))/r$i"
	head -c 300000 /dev/urandom > "$T/w/big$i"
	"$AL" commit c "$T/w" --base "$("$AL" project head c)" --strategy rebase_if_disjoint >/dev/null 2>&1 &
	cpid=$!
	"$AL" gc >/dev/null 2>&1 &
	gpid=$!
	ms=$((RANDOM % span_ms))
	sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
	kill -9 "$gpid" 2>/dev/null
	[ $((i % 2)) = 0 ] && kill -9 "$cpid" 2>/dev/null
	if { wait "$gpid"; } 2>/dev/null; then :; else killed=$((killed + 1)); fi
	wait "$cpid" 2>/dev/null
	rm -rf "$T/x"
	"$AL" snapshot export "$("$AL" project head c)" "$T/x" >/dev/null 2>&1 && complete=$((complete + 1))
	if "$AL" fsck >"$T/fsck.out" 2>&1; then clean=$((clean + 1)); else sed 's/^/# /' "$T/fsck.out" | head -5; fi
done 2>/dev/null
echo "# $killed of $N gc passes were killed before finishing"
is "$complete" "$N" "after each kill the head names a complete snapshot (exports)"
is "$clean" "$N" "and fsck is clean"
ok "some gc passes were really killed mid-way" -- test "$killed" -ge 3
run "$AL" gc --json
is "$rc" 0 "a pass after the kills succeeds"
run "$AL" gc --dry-run --json
is "$(echo "$out" | field objects)/$(echo "$out" | field orphan_files)" "0/0" "…and leaves no garbage behind"
ok "fsck is clean at the end" -- "$AL" fsck
ok "the ledger verifies" -- "$AL" audit verify
done_testing
