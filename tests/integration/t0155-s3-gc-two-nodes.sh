#!/bin/bash
# The bucket's sweeps across nodes (architecture.md, "Garbage collection in
# the bucket"): node A's gc deletes from the shared bucket an object nothing
# retains; node B still holds it in its local store, where its dedup would
# trust it.  Each pass records what it deleted under a new sweep
# generation, and each write transaction of a node first uploads again
# what was swept since its own generation and it holds: B's commit naming
# the object puts it back in the bucket before the commit lands, and A
# reads it.  A node further behind than the database remembers, or ahead
# of it (the database restored from a backup), uploads whatever the bucket
# lacks.  A bucket that fails the catch-up fails the write with nothing
# changed.  Every object in the bucket here (inline=0); the small objects
# kept in the database, the default, are t0156's.  Real PostgreSQL and
# Swift (s3api), throwaway servers.
. "$(dirname "$0")/../lib.sh"
pg_server
s3_server
trap '[ -n "${PROXY:-}" ] && kill "$PROXY"; "$SW" stop "$T/swift"; "$PG" stop "$T/pg"; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
fault_proxy
export AIRLOCK_BLOBS="s3://blobs/team?endpoint=$EP&inline=0"
pg_metadata
db_sql() { DB=airlock su_sql -c "$1"; }
setting() { # setting NAME VALUE: the default tenant's
	db_sql "DELETE FROM settings WHERE tenant = 'default' AND name = '$1';
		INSERT INTO settings(tenant, name, value) VALUES ('default', '$1', $2)"
}
keys() { # the bucket's object ids under team/default/, sorted
	s3 GET "blobs?list-type=2&prefix=team%2Fdefault%2F" | grep -o '<Key>[^<]*</Key>' |
		sed 's|<Key>team/default/||; s|</Key>||' | sort
}
has_key() { keys | grep -qx "$1"; }
lacks_key() { ! has_key "$1"; }
local_has() { # local_has HOME ID
	[ "$(sqlite3 "$1/tenants/default/objects.db" "SELECT count(*) FROM objects WHERE id = x'$2'")" = 1 ]
}
sha() { sha256sum <"$1" | cut -c1-64; }

NA="$T/a" NB="$T/b" NC="$T/c"
run env AIRLOCK_HOME="$NA" "$AL" init
is "$rc" 0 "node A's home"; [ "$rc" = 0 ] || echo "# $err"
cp -a "$NA" "$NB"
cp -a "$NA" "$NC"
mkdir -p "$T/p" && echo seed >"$T/p/seed"
run env AIRLOCK_HOME="$NB" "$AL" project create p --from "$T/p"
is "$rc" 0 "project created through node B"
AIRLOCK_HOME=$NB "$AL" gc retention 0 >/dev/null

# ---- an object only an expired snapshot names, held by B and in the bucket
mkdir -p "$T/x" && echo "swept by A, still held by B" >"$T/x/x1"
X=$(sha "$T/x/x1")
AIRLOCK_HOME=$NB "$AL" snapshot import "$T/x" >/dev/null
ok "B holds the object locally" -- local_has "$NB" "$X"
ok "  and the bucket has it" -- has_key "$X"
ok "  A's local store does not" -- test "$(sqlite3 "$NA/tenants/default/objects.db" \
	"SELECT count(*) FROM objects WHERE id = x'$X'")" = 0

# ---- A's pass two days on deletes it from the bucket, and records so
LATER=$(($(date +%s) + 2 * 86400))
run env AIRLOCK_HOME="$NA" AIRLOCK_NOW=$LATER "$AL" gc --json
is "$rc" 0 "node A's gc two days on"
SWEPT=$(jq -r .blobs_objects <<<"$out")
ok "  deletes unreferenced objects from the bucket ($SWEPT)" -- test "$SWEPT" -ge 2
ok "  the object among them" -- lacks_key "$X"
is "$(db_sql "SELECT value FROM settings WHERE tenant = 'default' AND name = 'blobs_gen'")" 1 \
	"  the tenant's sweep generation is 1"
is "$(db_sql "SELECT count(*) FROM blobs_swept WHERE tenant = 'default' AND gen = 1")" "$SWEPT" \
	"  with every id it deleted recorded under it"
is "$(db_sql "SELECT count(*) FROM blobs_swept WHERE gen = 1 AND id = '\\x$X'")" 1 "  the object's too"
ok "B still holds it locally" -- local_has "$NB" "$X"

# ---- B's commit of the same bytes dedups against its store: the catch-up
# puts the object back before the commit names it
HEAD0=$(AIRLOCK_HOME=$NB "$AL" project head p)
rm -rf "$T/w" && AIRLOCK_HOME=$NB "$AL" snapshot export "$HEAD0" "$T/w" >/dev/null
cp "$T/x/x1" "$T/w/x1"
: >"$LOG"
run env AIRLOCK_HOME="$NB" AIRLOCK_BLOBS="s3://blobs/team?endpoint=$PEP&inline=0" "$AL" commit p "$T/w" \
	--base "$HEAD0" -m "the swept bytes again"
is "$rc" 0 "B commits a tree holding the swept object's bytes"
is "$(grep -c "^PUT /blobs/team/default/$X " "$LOG")" 1 "  uploading it once, in the catch-up"
ok "  the bucket has it again" -- has_key "$X"
like "$(cat "$NB/tenants/default/bucket.gen")" '^1 [0-9]+$' "  B's store is at generation 1, with its catch-ups' serial"
run env AIRLOCK_HOME="$NA" "$AL" snapshot export "$(AIRLOCK_HOME=$NA "$AL" project head p)" "$T/outa"
is "$rc" 0 "A exports the new head, fetching from the bucket"
ok "  exactly the bytes B committed" -- cmp "$T/x/x1" "$T/outa/x1"
: >"$LOG"
run env AIRLOCK_HOME="$NB" AIRLOCK_BLOBS="s3://blobs/team?endpoint=$PEP&inline=0" "$AL" gc retention 0
is "$(grep -c '^PUT ' "$LOG")" 0 "a write on a node at the last generation uploads nothing"

# ---- a bucket that fails the catch-up fails the write, with nothing changed
# (the commit goes back to the first tree: no new object of its own to push)
db_sql "INSERT INTO blobs_swept(tenant, gen, id, time) VALUES ('default', 2, '\\x$X', 0)"
setting blobs_gen 2
HEAD1=$(AIRLOCK_HOME=$NB "$AL" project head p)
rm -rf "$T/w2" && AIRLOCK_HOME=$NB "$AL" snapshot export "$HEAD0" "$T/w2" >/dev/null
before=$(db_sql "SELECT count(*) FROM commits")
echo "always PUT 503" >"$PLAN"
run env AIRLOCK_HOME="$NB" AIRLOCK_BLOBS="s3://blobs/team?endpoint=$PEP&inline=0" "$AL" commit p "$T/w2" \
	--base "$HEAD1" -m "back to the seed"
: >"$PLAN"
ok "a commit whose catch-up the bucket fails, fails" -- test "$rc" -ne 0
like "$err" "bucket sweeps: catching up: s3: PUT failed: HTTP 503" "  saying why"
is "$(AIRLOCK_HOME=$NB "$AL" project head p)" "$HEAD1" "  the head did not move"
is "$(db_sql "SELECT count(*) FROM commits")" "$before" "  no commit was recorded"
is "$(cut -d" " -f1 "$NB/tenants/default/bucket.gen")" 1 "  B stays at generation 1"
run env AIRLOCK_HOME="$NB" "$AL" commit p "$T/w2" --base "$HEAD1" -m "back to the seed"
is "$rc" 0 "the same commit once the bucket answers"
is "$(cut -d" " -f1 "$NB/tenants/default/bucket.gen")" 2 "  B is at generation 2"

# ---- further behind than the database remembers, or ahead of it (the
# database restored from a backup): everything the bucket lacks goes up
SEED=$(sha "$T/p/seed")
full_upload() { # full_upload GEN PRUNED WHAT: the seed lost from the bucket, then a write on B
	s3 DELETE "blobs/team/default/$SEED" -o /dev/null
	ok "(an object of the first commit lost from the bucket)" -- lacks_key "$SEED"
	setting blobs_gen "$1"
	setting blobs_pruned "$2"
	run env AIRLOCK_HOME="$NB" "$AL" gc retention 0
	is "$rc" 0 "a write on B, $3"
	ok "  uploads what the bucket lacks" -- has_key "$SEED"
	is "$(cut -d" " -f1 "$NB/tenants/default/bucket.gen")" "$1" "  and B is at generation $1"
}
db_sql "DELETE FROM blobs_swept"
full_upload 9 5 "behind the generations the database remembers"
full_upload 3 0 "ahead of the database's generation"

# ---- a damaged generation file is no generation: B distrusts its store
s3 DELETE "blobs/team/default/$SEED" -o /dev/null
db_sql "INSERT INTO blobs_swept(tenant, gen, id, time) VALUES ('default', 3, '\\x$SEED', 0)"
printf 'x\033[31m' >"$NB/tenants/default/bucket.gen"
run env AIRLOCK_HOME="$NB" "$AL" gc retention 0
is "$rc" 0 "a write on B with a damaged generation file"
ok "  uploads again what the recorded sweeps deleted" -- has_key "$SEED"
like "$(cat "$NB/tenants/default/bucket.gen")" '^3 [0-9]+$' "  and writes the generation whole, with a serial"

# ---- a pass that deletes from the bucket and then fails still records
# what it deleted (a trigger fails its ledger entry, so its transaction
# rolls back after the DELETEs)
mkdir -p "$T/y" && echo "swept by a pass that failed" >"$T/y/y1"
Y=$(sha "$T/y/y1")
AIRLOCK_HOME=$NB "$AL" snapshot import "$T/y" >/dev/null
db_sql "CREATE FUNCTION no_gc() RETURNS trigger LANGUAGE plpgsql AS
	\$\$ BEGIN IF NEW.kind = 'gc' THEN RAISE EXCEPTION 'no gc entry'; END IF; RETURN NEW; END \$\$;
	CREATE TRIGGER no_gc BEFORE INSERT ON ledger FOR EACH ROW EXECUTE FUNCTION no_gc()"
run env AIRLOCK_HOME="$NA" AIRLOCK_NOW=$LATER "$AL" gc --json
db_sql "DROP TRIGGER no_gc ON ledger"
ok "a pass whose transaction fails after its bucket sweep fails" -- test "$rc" -ne 0
like "$err" "no gc entry" "  saying why"
ok "  having deleted the object from the bucket" -- lacks_key "$Y"
is "$(db_sql "SELECT value FROM settings WHERE tenant = 'default' AND name = 'blobs_gen'")" 4 \
	"  the sweep generation moved on (3 -> 4) all the same"
is "$(db_sql "SELECT count(*) FROM blobs_swept WHERE gen = 4 AND id = '\\x$Y'")" 1 \
	"  with the object recorded under it"
HEAD2=$(AIRLOCK_HOME=$NB "$AL" project head p)
rm -rf "$T/w3" && AIRLOCK_HOME=$NB "$AL" snapshot export "$HEAD2" "$T/w3" >/dev/null
cp "$T/y/y1" "$T/w3/y1"
run env AIRLOCK_HOME="$NB" "$AL" commit p "$T/w3" --base "$HEAD2" -m "the bytes of the failed pass"
is "$rc" 0 "B commits its bytes again"
ok "  and the bucket has them" -- has_key "$Y"
run env AIRLOCK_HOME="$NA" "$AL" snapshot export "$(AIRLOCK_HOME=$NA "$AL" project head p)" "$T/outy"
ok "  A reads them" -- cmp "$T/y/y1" "$T/outy/y1"

# ---- a node with an empty store starts at the database's generation
: >"$LOG"
run env AIRLOCK_HOME="$NC" AIRLOCK_BLOBS="s3://blobs/team?endpoint=$PEP&inline=0" "$AL" gc retention 0
is "$rc" 0 "a new node's first write"
is "$(cut -d" " -f1 "$NC/tenants/default/bucket.gen")" 4 "  takes the database's generation"
is "$(grep -c . "$LOG")" 0 "  asking nothing of the bucket"
done_testing
