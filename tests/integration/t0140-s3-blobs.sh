#!/bin/bash
# --blobs s3://…: a real S3 server (Debian's OpenStack Swift with s3api, one
# node on 127.0.0.1, started once for this file) behind the local store.
# The object backends' conformance suite against it; an import, a run, its
# apply and an export with every object in the bucket; a node with a cold
# local store reads them back, verified; a corrupted object in the bucket
# is detected and not served; bad settings and an unreachable or refusing
# server fail loudly with nothing stored.
. "$(dirname "$0")/../lib.sh"
s3_server
# keys PREFIX: the bucket's keys under PREFIX, one a line, sorted
keys() {
	s3 GET "blobs?list-type=2&max-keys=1000&prefix=$(printf %s "$1" | sed 's|/|%2F|g')" |
		grep -o '<Key>[^<]*</Key>' | sed 's|<Key>||; s|</Key>||' | sort
}
ok "the bucket was made (s3_server: S3 PUT, SigV4) and lists" -- s3 GET "blobs?list-type=2" -f -o /dev/null
B="s3://blobs/team/a?endpoint=$EP"

# ---- the backends' conformance suite on this server
ok "the object backend conformance suite passes on S3 (Swift)" -- \
	env AIRLOCK_TEST_S3="s3://blobs/conformance?endpoint=$EP" \
	AIRLOCK_TEST_S3_NETRC="$T/swift/netrc" "$AIRLOCK_BUILD/tests/test_odb"

# ---- import, run, apply, export
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S/d"
echo one >"$S/a.txt"; echo deep >"$S/d/f"
head -c 700000 /dev/urandom >"$S/big.bin" # larger than the loose threshold
run "$AL" --blobs "$B" project create p --from "$S"
is "$rc" 0 "project create with --blobs"
local_ids() {
	sqlite3 "$AIRLOCK_HOME/tenants/default/objects.db" "SELECT lower(hex(id)) FROM objects" | sort
}
in_bucket() { keys team/a/default/ | sed 's|^team/a/default/||'; }
is "$(comm -23 <(local_ids) <(in_bucket) | wc -l)" 0 "every object stored is in the bucket, under PREFIX/TENANT/SHA256"
ok "  (and there are some)" -- test "$(in_bucket | wc -l)" -ge 5
if have_userns; then
	AIRLOCK_BLOBS="$B" run "$AL" run p -- sh -c 'echo two >>a.txt; echo new >n.txt'
	is "$rc" 0 "a run with AIRLOCK_BLOBS"
	RUN=$(printf '%s' "$err" | sed -n 's/^run \(r[0-9a-f]*\):.*/\1/p')
	AIRLOCK_BLOBS="$B" run "$AL" apply "$RUN" --accept-all
	is "$rc" 0 "its draft applied (a commit)"
	is "$(comm -23 <(local_ids) <(in_bucket) | wc -l)" 0 "the run's and the commit's objects are in the bucket too"
	printf 'one\ntwo\n' >"$S/a.txt"; echo new >"$S/n.txt"
fi
HEAD=$("$AL" project head p)

# ---- a cold node: the same metadata, no local objects
cold() {
	sqlite3 "$AIRLOCK_HOME/tenants/default/objects.db" "DELETE FROM objects"
	find "$AIRLOCK_HOME/tenants/default/objects" -type f -delete
}
cold
run "$AL" snapshot export "$HEAD" "$T/nob"
ok "without --blobs a cold store cannot export (the objects are only in the bucket)" -- test "$rc" -ne 0
run "$AL" --blobs "$B" snapshot export "$HEAD" "$T/out"
is "$rc" 0 "with --blobs the export reads the bucket"
ok "  and gives the project exactly" -- diff -r "$S" "$T/out"
rm -rf "$T/out2"
run "$AL" snapshot export "$HEAD" "$T/out2"
is "$rc" 0 "what it fetched was verified and kept: a later export needs no bucket"
run "$AL" fsck
is "$rc" 4 "fsck without the bucket reports the other snapshots' objects missing here"
run "$AL" --blobs "$B" fsck
is "$rc" 0 "fsck with --blobs passes: every snapshot is whole in the bucket"

# ---- a corrupt object in the bucket is detected, never served
BIG=$(sha256sum <"$S/big.bin" | cut -c1-64)
printf 'evil bytes' >"$T/evil"
EV=$(sha256sum <"$T/evil" | cut -c1-64)
command curl -sf -o /dev/null --netrc-file "$T/swift/netrc" --aws-sigv4 aws:amz:us-east-1:s3 \
	-H "x-amz-content-sha256: $EV" -T "$T/evil" "$EP/blobs/team/a/default/$BIG"
is "$(s3 GET "blobs/team/a/default/$BIG")" "evil bytes" "(the bucket's copy of big.bin is replaced)"
cold
rm -rf "$T/out3"
run "$AL" --blobs "$B" snapshot export "$HEAD" "$T/out3"
is "$rc" 4 "an export of a corrupt object fails as corrupt (exit 4)"
like "$err" "$BIG is corrupt in the object store: digest mismatch" "  naming the object"
ok "  and its bytes are not served" -- bash -c "! grep -rqs 'evil bytes' '$T/out3'"
is "$(sqlite3 "$AIRLOCK_HOME/tenants/default/objects.db" "SELECT count(*) FROM objects WHERE lower(hex(id)) = '$BIG'")" 0 \
	"  nor kept in the local store"
# writing it again repairs the bucket: the name is the content. The file
# must be read again (--no-cache): a stat cache hit trusts the digest and
# the bucket's HEAD (the object is there, if corrupt), and uploads nothing
"$AL" --blobs "$B" snapshot import "$S" --no-cache >/dev/null
rm -rf "$T/out4"; cold
run "$AL" --blobs "$B" snapshot export "$HEAD" "$T/out4"
is "$rc" 0 "after the object is stored again, the bucket serves it"

# ---- bad settings, an unreachable server, wrong credentials: loud, nothing stored
run "$AL" --blobs "s3://Bad_Bucket" snapshot list
is "$rc" 6 "an invalid bucket name is refused (exit 6)"
like "$err" "--blobs: s3: invalid bucket name" "  with a clear message"
run "$AL" --blobs "s3://blobs/../x?endpoint=$EP" snapshot list
is "$rc" 6 "a prefix with .. is refused"
run env -u AWS_SECRET_ACCESS_KEY "$AL" --blobs "$B" snapshot list
is "$rc" 6 "missing credentials are refused"
like "$err" "AWS_SECRET_ACCESS_KEY" "  naming what to set"
mkdir -p "$T/new"; echo fresh >"$T/new/f"
before=$(store_state)
run env AWS_SECRET_ACCESS_KEY=wrong "$AL" --blobs "$B" snapshot import "$T/new"
is "$rc" 10 "wrong credentials: the import fails as unauthorized (exit 10)"
like "$err" "s3: PUT refused \(HTTP 403" "  saying the server refused"
is "$(store_state)" "$before" "  and nothing was stored locally"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
run "$AL" --blobs "s3://blobs/team/a?endpoint=http://127.0.0.1:$port" snapshot import "$T/new"
is "$rc" 1 "an unreachable server: the import fails"
like "$err" "s3: PUT http://127.0.0.1:$port/blobs" "  naming the server"
is "$(store_state)" "$before" "  and nothing was stored locally"
run "$AL" --blobs "s3://no-such-bucket?endpoint=$EP" snapshot import "$T/new"
ok "a bucket that does not exist: the import fails" -- test "$rc" -ne 0
is "$(store_state)" "$before" "  and nothing was stored locally"

# tenants are apart in the bucket
"$AL" admin tenant create other >/dev/null
mkdir -p "$T/o"; echo theirs >"$T/o/t"
run "$AL" --tenant other --blobs "$B" snapshot import "$T/o"
is "$rc" 0 "another tenant imports with --blobs"
T_ID=$(sha256sum <"$T/o/t" | cut -c1-64)
is "$(keys team/a/other/ | grep -c "$T_ID")" 1 "  its objects are under its own name"
is "$(keys team/a/default/ | grep -c "$T_ID")" 0 "  and not under this tenant's"
# ---- a hostile server: its listings, error documents and object sizes are capped
python3 "$SRC_ROOT/tests/servers/hostile-s3.py" >"$T/hostile.port" 2>/dev/null &
HOSTILE=$!
for _ in $(seq 100); do [ -s "$T/hostile.port" ] && break; sleep 0.05; done
HEP="http://127.0.0.1:$(cat "$T/hostile.port")"
ok "against a hostile server: a 9 MiB listing, a 1 TiB object, a 9 MiB error document are refused (unit)" -- \
	env AIRLOCK_TEST_S3_HOSTILE="$HEP" "$AIRLOCK_BUILD/tests/test_odb"
cold
run "$AL" --blobs "s3://blobs/team/a?endpoint=$HEP" snapshot export "$HEAD" "$T/out5"
is "$rc" 4 "a cold export from a server that answers with other bytes fails as corrupt"
is "$(sqlite3 "$AIRLOCK_HOME/tenants/default/objects.db" "SELECT count(*) FROM objects")" 0 "  and keeps nothing"
kill "$HOSTILE"; wait "$HOSTILE" 2>/dev/null

# ---- the daemon: what a request stores goes to the bucket too
"$AL" admin principal create bob --role author >/dev/null
TOK=$("$AL" admin token create bob 2>/dev/null)
AIRLOCK_BLOBS="$B" serve_start
mkdir -p "$T/srv"; echo "uploaded through the daemon" >"$T/srv/s.txt"
SID=$(sha256sum <"$T/srv/s.txt" | cut -c1-64)
is "$(keys team/a/default/ | grep -c "$SID")" 0 "(the upload's file is not in the bucket yet)"
run env AIRLOCK_TOKEN="$TOK" "$AL" --server "$URL" project create q --from "$T/srv"
is "$rc" 0 "a project created through a daemon started with AIRLOCK_BLOBS"
is "$(keys team/a/default/ | grep -c "$SID")" 1 "  has its objects in the bucket"
serve_stop
done_testing
