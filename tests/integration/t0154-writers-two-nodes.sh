#!/bin/bash
# Two nodes on one real PostgreSQL and one real S3 bucket (Debian's
# PostgreSQL and OpenStack Swift with s3api, throwaway servers for this
# file), each node its own home sharing the deployment's keys: 8 writers,
# split between the nodes, commit to one head at once; none loses an update
# (the head's compare-and-swap is the database's conditional UPDATE), and
# with the strict strategy each commit lands or fails loudly (exit 5).  A
# project made through one node runs through the other's daemon (its
# objects come from the bucket), and the ledger exported from PostgreSQL
# verifies offline.
. "$(dirname "$0")/../lib.sh"
need_userns
SW="$SRC_ROOT/tests/servers/swift.sh"
command -v swift-proxy-server >/dev/null && command -v memcached >/dev/null ||
	skip_all "no OpenStack Swift / memcached (scripts/deps.sh installs them)"
pg_server
EP=$("$SW" start "$T/swift") || skip_all "Swift did not start (above)"
trap 'kill -TERM ${SERVE_PID:-} 2>/dev/null; wait ${SERVE_PID:-} 2>/dev/null; "$SW" stop "$T/swift"; "$PG" stop "$T/pg"; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
export AWS_ACCESS_KEY_ID=test:tester AWS_SECRET_ACCESS_KEY=testing
unset AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_REGION AWS_DEFAULT_REGION
EMPTY=$(printf '' | sha256sum | cut -c1-64)
command curl -sf -o /dev/null --netrc-file "$T/swift/netrc" --aws-sigv4 aws:amz:us-east-1:s3 \
	-H "x-amz-content-sha256: $EMPTY" -X PUT "$EP/blobs"
export AIRLOCK_BLOBS="s3://blobs/team?endpoint=$EP"
pg_metadata

NA="$T/a" NB="$T/b"
AIRLOCK_HOME=$NA "$AL" init >/dev/null 2>&1
cp -a "$NA" "$NB" # node B's home: A's before it holds anything but the keys (operations.md)
ok "node B holds A's keys" -- cmp -s "$NA/secrets.key" "$NB/secrets.key"
mkdir -p "$T/p" && echo seed >"$T/p/seed"
run env AIRLOCK_HOME="$NA" "$AL" project create shared --from "$T/p"
is "$rc" 0 "project created through node A (objects in the bucket)"
home_of() { if [ $(($1 % 2)) = 1 ]; then echo "$NA"; else echo "$NB"; fi; }

W=8 K=4
writer() { # writer I: K commits through node I%2, each adding one file, on the head it read
	local i=$1 k base h
	h=$(home_of "$i")
	for k in $(seq 1 "$K"); do
		base=$(AIRLOCK_HOME=$h "$AL" project head shared)
		rm -rf "$T/w$i"; AIRLOCK_HOME=$h "$AL" snapshot export "$base" "$T/w$i" >/dev/null
		echo "$i $k" >"$T/w$i/w$i-$k"
		AIRLOCK_HOME=$h "$AL" commit shared "$T/w$i" --base "$base" \
			--strategy rebase_if_disjoint -m "w$i $k" >/dev/null 2>"$T/err$i" ||
			echo "writer $i commit $k failed: $(cat "$T/err$i")" >>"$T/failures"
	done
}
for i in $(seq 1 "$W"); do writer "$i" & done
wait
is "$(cat "$T/failures" 2>/dev/null)" "" "8 writers split across two nodes: none failed (disjoint paths rebase)"
run env AIRLOCK_HOME="$NB" "$AL" project log --json shared
is "$(grep -o '"seq":' <<<"$out" | wc -l)" $((W * K + 1)) "every commit is in the log"
is "$(grep -o '"parent":"[^"]*"' <<<"$out" | sort | uniq -d | wc -l)" 0 \
	"no two commits share a parent (one head, moved by one commit at a time across nodes)"
AIRLOCK_HOME=$NB "$AL" snapshot export "$(AIRLOCK_HOME=$NB "$AL" project head shared)" "$T/final" >/dev/null
missing=0
for i in $(seq 1 "$W"); do for k in $(seq 1 "$K"); do
	[ "$(cat "$T/final/w$i-$k" 2>/dev/null)" = "$i $k" ] || missing=$((missing + 1))
done; done
is "$missing" 0 "the head holds every writer's every file, through either node: no lost update"

# strict: each commit lands or conflicts loudly, never silently lost
run env AIRLOCK_HOME="$NA" "$AL" project create strictp --from "$T/p"
for i in $(seq 1 4); do (
	h=$(home_of "$i")
	for k in 1 2 3; do
		base=$(AIRLOCK_HOME=$h "$AL" project head strictp)
		rm -rf "$T/s$i"; AIRLOCK_HOME=$h "$AL" snapshot export "$base" "$T/s$i" >/dev/null
		echo "$i" >"$T/s$i/s$i-$k"
		AIRLOCK_HOME=$h "$AL" commit strictp "$T/s$i" --base "$base" >/dev/null 2>&1
		echo "$? s$i-$k" >>"$T/strict.rc"
	done ) & done
wait
ok_n=$(grep -c '^0 ' "$T/strict.rc"); conflict_n=$(grep -c '^5 ' "$T/strict.rc")
is "$((ok_n + conflict_n))" 12 "strict, across nodes: every commit landed (0) or conflicted (5)"
AIRLOCK_HOME=$NA "$AL" snapshot export "$(AIRLOCK_HOME=$NA "$AL" project head strictp)" "$T/sfinal" >/dev/null
is "$(ls "$T/sfinal" | grep -c '^s[0-9]')" "$ok_n" "…and exactly the landed ones are in the head"

# a project made through A runs through B's daemon: objects from the bucket
AIRLOCK_HOME=$NA "$AL" admin principal create alice --role admin,author >/dev/null 2>&1
TOK=$(AIRLOCK_HOME=$NA "$AL" admin token create alice 2>/dev/null)
AIRLOCK_HOME=$NB serve_start
is "$?" 0 "node B's daemon starts"
api POST /projects/shared/runs "$TOK" '{"argv":["sh","-c","cat w1-1; ls | wc -l"],"wait":true}'
is "$status:$(field exit_code <<<"$out")" "200:0" "a run through node B on the project node A made"
like "$(field stdout.text <<<"$out")" "1 1" "…sees the writers' files"
serve_stop

run env AIRLOCK_HOME="$NA" "$AL" audit export "$T/ledger.jsonl"
is "$rc" 0 "audit export from PostgreSQL"
AIRLOCK_HOME=$NA "$AL" audit pubkey >"$T/pub.pem"
run env -u AIRLOCK_METADATA -u AIRLOCK_BLOBS "$AL" --home "$T/nohome" audit verify "$T/ledger.jsonl" \
	--key "$T/pub.pem"
is "$rc" 0 "the export verifies offline"
like "$out" "^ok: [0-9]+ entries" "…ok"
done_testing
