#!/bin/bash
# The CLI and the daemon with their metadata on a real PostgreSQL (Debian's,
# a throwaway cluster for this file), reached as the service role whom
# row-level security binds: `airlock --metadata postgres://… COMMAND` and
# `airlock serve` with AIRLOCK_METADATA.  The home keeps the keys and the
# objects; every project, draft, run, principal, token and ledger entry is
# in the database.  A wrong URL or a database without the schema is a
# clear error with nothing written; a second tenant sees nothing of the
# first, through the CLI or the API.
. "$(dirname "$0")/../lib.sh"
need_userns
pg_server
su_sql -c "CREATE ROLE airlock_owner LOGIN" -c "CREATE ROLE airlock LOGIN NOSUPERUSER NOBYPASSRLS" \
	-c "CREATE DATABASE airlock OWNER airlock_owner" -c "REVOKE ALL ON DATABASE airlock FROM PUBLIC" \
	-c "GRANT CONNECT ON DATABASE airlock TO airlock" \
	-c "CREATE DATABASE empty OWNER airlock_owner" -c "GRANT CONNECT ON DATABASE empty TO airlock"
OWNER="postgresql://airlock_owner@/airlock?host=$H&port=$P"
SVC="postgresql://airlock@/airlock?host=$H&port=$P"
owner_sql() { psql -h "$H" -p "$P" -U airlock_owner -d "${DB:-airlock}" -v ON_ERROR_STOP=1 -qtAX "$@"; }
# what the database holds, every tenant's, as the owner (FORCE lifted in a
# transaction of the owner's, which the service role cannot do)
rows() {
	owner_sql -c "BEGIN; ALTER TABLE $1 NO FORCE ROW LEVEL SECURITY;
		SELECT string_agg(${2:-tenant}::text, ',' ORDER BY ${2:-tenant}) FROM $1 ${3:-};
		ROLLBACK;"
}

# ---- hostile paths first: nothing is written anywhere
run "$AL" --metadata "mysql://airlock@localhost/airlock" init
is "$rc" 6 "a URL of another scheme: refused (exit 6)"
like "$err" "expected postgres://" "…saying which scheme"
ok "…and no home is made" -- test ! -e "$AIRLOCK_HOME"
run "$AL" --metadata "postgresql://airlock@/airlock?host=$T/nowhere&port=1" init
is "$rc" 12 "an unreachable database: unavailable (exit 12)"
like "$err" "the metadata database: .*connect" "…naming the connection"
ok "…and no home is made" -- test ! -e "$AIRLOCK_HOME"
run "$AL" --metadata "postgresql://airlock@/empty?host=$H&port=$P" init
is "$rc" 9 "a database without airlock's schema: refused (exit 9)"
like "$err" "no airlock schema .*admin metadata migrate" "…saying what to run"
ok "…and no home is made" -- test ! -e "$AIRLOCK_HOME"
is "$(DB=empty owner_sql -c "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")" 0 \
	"…and nothing is written in the database"
run "$AL" --metadata "$SVC" init
like "$err" "no airlock schema" "the database before migrate: refused the same way"
ok "…no home" -- test ! -e "$AIRLOCK_HOME"

run "$AL" --metadata "$OWNER" admin metadata migrate --service-role airlock
is "$rc:$out" "0:schema 0 -> 9" "migrate as the owner"

# ---- the CLI on PostgreSQL
export AIRLOCK_METADATA="$SVC"
run "$AL" init
is "$rc" 0 "init with --metadata (AIRLOCK_METADATA)"
ok "the home holds the ledger key" -- test -f "$AIRLOCK_HOME/ledger.key"
ok "…no airlock.db and no meta.db: the metadata is the database's" -- \
	test ! -e "$AIRLOCK_HOME/airlock.db" -a ! -e "$AIRLOCK_HOME/tenants/default/meta.db"
is "$(rows tenants)" "default" "the default tenant is a row of the database"

S="$T/src"; mkdir -p "$S/dir"; printf 'one\ntwo\nthree\n' > "$S/a.txt"; echo keep > "$S/dir/k"
run "$AL" project create p --from "$S"
is "$rc" 0 "project create"
HEAD0=$out
is "$(rows projects name)" "p" "…the project is a row of the database"
echo more > "$S/b.txt"
run "$AL" commit p "$S" --base "$HEAD0" -m "import b"
is "$rc" 0 "commit (an import) with the head compare-and-swap"
HEAD1=$("$AL" project head p)

run "$AL" run p -- sh -c 'sed -i s/two/TWO/ a.txt; echo new > c.txt'
is "$rc" 0 "a run on PostgreSQL metadata"
RUN=$(printf '%s' "$err" | sed -n 's/^run \(r[0-9a-f]*\):.*/\1/p')
like "$RUN" "^r[0-9a-f]{13}$" "…names its run"
is "$(rows runs id)" "$RUN" "…whose record is a row of the database"
run "$AL" runs p
like "$out" "$RUN" "airlock runs lists it"
run "$AL" review "$RUN" --stat
like "$out" "a.txt" "review (the draft's diff) shows its change"
like "$out" "c.txt" "…and its new file"

# the live head moves meanwhile: the draft applies with a conflict strategy
"$AL" snapshot export "$HEAD1" "$T/w" >/dev/null
sed -i s/two/deux/ "$T/w/a.txt"
"$AL" commit p "$T/w" --base "$HEAD1" -m "theirs" >/dev/null
run "$AL" apply "$RUN" --accept-all
is "$rc" 5 "apply over a moved head: the default strategy refuses the conflict (exit 5)"
run "$AL" apply "$RUN" --accept-all --strategy conflict_copy
is "$rc" 0 "apply with --strategy conflict_copy"
[ "$rc" = 0 ] || echo "# $err"
run "$AL" project log p
like "$out" "conflict a.txt -> " "the conflict is recorded, with its copy"
"$AL" snapshot export "$("$AL" project head p)" "$T/out" >/dev/null
is "$(cat "$T/out/c.txt")" "new" "the run's new file is in the project"

# a tenant, a principal and a token: the directory on the database
run "$AL" admin tenant create acme
is "$rc" 0 "admin tenant create"
run "$AL" admin tenant create acme
is "$rc" 7 "…twice: exists (exit 7)"
is "$(rows tenants)" "acme,default" "both tenants are rows"
run "$AL" admin principal create alice --role admin,author
is "$rc" 0 "admin principal create"
run "$AL" admin token create alice
TOK=$out
TID=$(sed -n 's/.*token \(t[0-9a-f]*\) for.*/\1/p' <<<"$err")
like "$TOK" "^alk_[0-9a-f]{64}$" "admin token create"
"$AL" --tenant acme admin principal create bob --role admin,author >/dev/null
BTOK=$("$AL" --tenant acme admin token create bob 2>/dev/null)
is "$(rows principals name)" "alice,bob" "the principals are rows"
is "$(rows tokens principal)" "alice,bob" "…and their tokens (hashes)"
# an admin act and its ledger entry are one transaction there: when the
# entry's checkpoint cannot be written (a trigger the owner adds), the
# principal is not created either
owner_sql -c "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS
	\$\$BEGIN RAISE EXCEPTION 'injected'; END\$\$;
	CREATE TRIGGER boom BEFORE INSERT ON checkpoints FOR EACH ROW EXECUTE FUNCTION boom();"
run "$AL" admin principal create carol --role author
is "$rc" 1 "a principal whose ledger entry cannot be sealed: the command fails (exit 1)"
is "$(rows principals name)" "alice,bob" "…and the principal is not created: act and entry commit together"
owner_sql -c "DROP TRIGGER boom ON checkpoints; DROP FUNCTION boom();"
run "$AL" admin principal create carol --role author
is "$rc" 0 "…and is, once the entry can be"

# the second tenant sees nothing of the first through the CLI
run "$AL" --tenant acme project list
is "$rc:$out" "0:" "tenant acme lists no project"
run "$AL" --tenant acme project log p
is "$rc" 3 "…and p is not found there (exit 3)"
run "$AL" --tenant acme runs p
isnt0=$([ "$rc" != 0 ] || [ -z "$out" ] && echo yes)
is "$isnt0" yes "…nor its runs"
run "$AL" --tenant acme admin principal list
unlike=$(grep -c "alice\|carol" <<<"$out")
is "$unlike" 0 "…nor its principals"
run "$AL" --tenant acme audit verify
like "$out" "^ok: 3 entries" "acme's ledger is its own (tenant create, principal, token)"
run "$AL" --tenant nope project list
is "$rc" 3 "a tenant the database does not have: not found (exit 3)"

# the policy: the deployment's (deployment_policy, no tenant) and a tenant's
# (its row of policy), the tenant's ceiling bounded by the deployment's
run "$AL" admin policy set --deployment --max-timeout 600
is "$rc" 0 "admin policy set --deployment"
is "$(owner_sql -c "SELECT doc FROM deployment_policy" | grep -c '"timeout":600')" 1 \
	"…stored in deployment_policy"
run "$AL" --tenant acme admin policy set --max-timeout 900
is "$rc" 8 "a tenant's ceiling above the deployment's: refused (exit 8)"
run "$AL" --tenant acme admin policy set --max-timeout 300
is "$rc" 0 "…one below it is set"
is "$(rows policy)" "acme" "…as acme's row of policy"
run "$AL" --tenant acme admin policy show --json
like "$out" '"timeout":300' "acme's effective ceiling is its own"
run "$AL" admin policy show --json
like "$out" '"timeout":600' "default's is the deployment's"
run "$AL" run p --timeout 700 -- true
is "$rc" 8 "a run above the deployment's ceiling is refused (exit 8)"

# the ledger: exported from PostgreSQL, verified offline
run "$AL" audit export "$T/ledger.jsonl"
is "$rc" 0 "audit export"
"$AL" audit pubkey > "$T/pub.pem"
unset AIRLOCK_METADATA
run "$AL" --home "$T/nohome" audit verify "$T/ledger.jsonl" --key "$T/pub.pem"
is "$rc" 0 "the export verifies offline, with no home and no database"
like "$out" "^ok: [0-9]+ entries" "…ok"
N=$(sed -n 's/^ok: \([0-9]*\) entries.*/\1/p' <<<"$out")
is "$N" "$(rows ledger seq "WHERE tenant = 'default'" | tr ',' '\n' | wc -l)" \
	"…as many entries as the database holds for the tenant"
export AIRLOCK_METADATA="$SVC"

# a snapshot is recorded under the tenant's write lock (gc's pause holds
# it: a snapshot row must not slip past its second mark): with the lock
# held elsewhere, an import waits for it
psql -h "$H" -p "$P" -U airlock -d airlock -qtAX -c "BEGIN;
	SELECT set_config('airlock.tenant', 'default', true);
	SELECT pg_advisory_xact_lock(hashtext('airlock.tenant:default'));
	SELECT pg_sleep(3); COMMIT;" >/dev/null &
LOCKER=$!
sleep 0.5
mkdir -p "$T/imp"; echo held > "$T/imp/f"
"$AL" snapshot import "$T/imp" > "$T/imp.out" 2>&1 &
IMP=$!
sleep 1
ok "an import waits while another transaction holds the tenant's write lock" -- kill -0 "$IMP"
wait "$LOCKER"
wait "$IMP"
is "$?" 0 "…and records its snapshot once the lock is released"
like "$(rows snapshots source "WHERE tenant = 'default'")" "$T/imp" "…in the database"

# gc and fsck on the database's metadata
run "$AL" gc
is "$rc" 0 "gc"
like "$out" "ledger entry [0-9]+" "…recorded in the ledger"
run "$AL" fsck
is "$rc" 0 "fsck is clean"
like "$out$err" "0 corrupt, 0 missing, 0 differ from the ledger" "…nothing missing or differing"
run "$AL" audit verify
is "$rc" 0 "the live ledger verifies"

# ---- the daemon on PostgreSQL
serve_start --gc-interval 1
is "$?" 0 "airlock serve starts with AIRLOCK_METADATA"
unlike=$(grep -c "cannot check it\|difference" "$T/serve.log")
is "$unlike" 0 "…its start-up check finds every tenant's metadata agreeing with its ledger"
# its collector's round takes every tenant (airlock_tenants()): acme's
# ledger gets its first gc entry
for i in $(seq 100); do
	[ -n "$(rows ledger tenant "WHERE kind = 'gc' AND tenant = 'acme'")" ] && break
	sleep 0.1
done
like "$(rows ledger tenant "WHERE kind = 'gc'")" "acme" "…and its collector goes through both tenants"
api GET /projects "$TOK"
is "$status" 200 "GET /projects with alice's token"
like "$out" '"name":"p"' "…lists p"
api GET /projects "$BTOK"
is "$status" 200 "GET /projects with bob's token (tenant acme)"
unlike=$(grep -c '"name":"p"' <<<"$out")
is "$unlike" 0 "…lists nothing of default's"
api GET /projects/p/log "$BTOK"
is "$status" 404 "…and default's p is not found for acme"
api GET /projects "alk_$(printf '0%.0s' $(seq 64))"
is "$status" 401 "an unknown token: 401"
run "$AL" admin token revoke "$TID"
is "$rc" 0 "admin token revoke, the daemon running"
api GET /whoami "$TOK"
is "$status" 401 "a revoked token: 401"
serve_stop
run "$AL" serve --listen 127.0.0.1:0 --metadata "postgresql://airlock@/empty?host=$H&port=$P"
is "$rc" 9 "serve --metadata on a database without the schema: refused at start (exit 9)"
like "$err" "no airlock schema" "…saying so"
done_testing
