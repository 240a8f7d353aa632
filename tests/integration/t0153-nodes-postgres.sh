#!/bin/bash
# Two `airlock serve` nodes on one real PostgreSQL, each with its own home
# (the deployment's keys shared): liveness is the cluster's, not a node's
# (architecture.md "Several nodes").  A run in flight on node A is never
# taken for interrupted by node B, neither by B's own runs in the tenant
# nor by its sweep, past the lease; once A is killed with kill -9, B
# keeps serving and records A's run as "failed: interrupted" within the
# lease, once, with one ledger entry; on one node a killed process's run
# is recovered at once (its lock in the home is free); the ledger
# exported from PostgreSQL verifies offline.  Schema 6's functions refuse
# a malformed node id and the service role cannot touch `nodes` directly.
. "$(dirname "$0")/../lib.sh"
need_userns
pg_server
su_sql -c "CREATE ROLE airlock_owner LOGIN" -c "CREATE ROLE airlock LOGIN NOSUPERUSER NOBYPASSRLS" \
	-c "CREATE DATABASE airlock OWNER airlock_owner" -c "REVOKE ALL ON DATABASE airlock FROM PUBLIC" \
	-c "GRANT CONNECT ON DATABASE airlock TO airlock"
OWNER="postgresql://airlock_owner@/airlock?host=$H&port=$P"
SVC="postgresql://airlock@/airlock?host=$H&port=$P"
as() { local role=$1; shift; psql -h "$H" -p "$P" -U "$role" -d airlock -v ON_ERROR_STOP=1 -qtAX "$@"; }
# a value of every tenant's rows, as the owner (FORCE lifted in its own transaction)
q() {
	as airlock_owner -c "BEGIN; ALTER TABLE $1 NO FORCE ROW LEVEL SECURITY; $2; ROLLBACK;"
}
outcome() { q runs "SELECT substring(record FROM '\"outcome\":\"([^\"]*)\"') FROM runs WHERE id = '$1'"; }
run_entries() {
	q ledger "SELECT count(*) FROM ledger WHERE kind = 'run' AND
		position('$1' IN convert_from(entry, 'UTF8')) > 0"
}

run "$AL" --metadata "$OWNER" admin metadata migrate --service-role airlock
is "$rc:$out" "0:schema 0 -> 9" "migrate (schema 9; 6 made nodes)"

# ---- schema 6 as the service role: the functions only
run as airlock -c "SELECT count(*) FROM nodes"
like "$err" "permission denied" "the service role cannot read nodes directly"
run as airlock -c "UPDATE nodes SET heartbeat = 0"
like "$err" "permission denied" "…nor write them (no node silences another)"
run as airlock -c "SELECT airlock_node_beat('x; DROP TABLE runs')"
like "$err" "nodes_id_check" "a malformed node id is refused by the table's CHECK"
as airlock -c "SELECT airlock_node_beat('00000000000000aa')" >/dev/null
is "$(as airlock -c "SELECT airlock_node_alive('00000000000000aa', 10),
	airlock_node_alive('00000000000000bb', 10)")" \
	"t|f" "a beat makes its node alive; a node that never beat is not"
as airlock_owner -c "UPDATE nodes SET heartbeat = heartbeat - 11 WHERE id = '00000000000000aa'"
is "$(as airlock -c "SELECT airlock_node_alive('00000000000000aa', 10)")" "f" \
	"…and a heartbeat older than the lease is not"

# ---- node A's home, node B's a copy of it (the deployment's keys shared)
export AIRLOCK_METADATA="$SVC"
A="$T/a" B="$T/b"
AIRLOCK_HOME=$A "$AL" init >/dev/null 2>&1
AIRLOCK_HOME=$A "$AL" admin principal create alice --role admin,author >/dev/null 2>&1
TOK=$(AIRLOCK_HOME=$A "$AL" admin token create alice 2>/dev/null)
AIRLOCK_HOME=$A "$AL" admin principal create bob --role author >/dev/null 2>&1
BOB=$(AIRLOCK_HOME=$A "$AL" admin token create bob 2>/dev/null)
S="$T/src"; mkdir -p "$S"; echo one > "$S/a.txt"
run env AIRLOCK_HOME="$A" "$AL" project create pa --from "$S"
is "$rc" 0 "project pa through node A's home"

# ---- on one node, the lock in its home decides at once (a CLI process on A)
MARK=m$$x$RANDOM
AIRLOCK_HOME=$A "$AL" run pa -- sh -c "sleep 120; echo $MARK-cli" >/dev/null 2>&1 &
CLI=$!
for i in $(seq 100); do
	RC=$(q runs "SELECT id FROM runs WHERE record LIKE '%$MARK-cli%'")
	[ -n "$RC" ] && break
	sleep 0.1
done
like "$(q runs "SELECT record FROM runs WHERE id = '$RC'")" '"node":"[0-9a-f]{16}"' \
	"a running attempt on PostgreSQL names its node"
kill -9 "$CLI"; wait "$CLI" 2>/dev/null
run env AIRLOCK_HOME="$A" "$AL" run pa -- true
is "$rc" 0 "the next run on the same home (its node's beat still fresh)…"
is "$(outcome "$RC")" "failed: interrupted" "…records the killed process's run at once: its lock is free"
is "$(run_entries "$RC")" 1 "…with one ledger entry"

# ---- two daemons
# B's home: a copy of A's (the deployment's keys, and the objects so far:
# the default image A's first run made); without --blobs each node's later
# objects are its own, so each has a project of its own
cp -a "$A" "$B"
ok "the homes share ledger.key and secrets.key" -- sh -c "cmp -s $A/ledger.key $B/ledger.key && cmp -s $A/secrets.key $B/secrets.key"
run env AIRLOCK_HOME="$B" "$AL" project create pb --from "$S"
is "$rc" 0 "project pb through node B's home"
fresh() {
	q nodes "SELECT count(*) FROM nodes WHERE heartbeat >=
		CAST(extract(epoch FROM clock_timestamp()) AS BIGINT) - 10"
}
N0=$(fresh)
node_start() { # node_start NAME HOME: sets URL_<NAME>, PID_<NAME>
	: >"$T/$1.out"
	AIRLOCK_HOME=$2 "$AL" serve --listen 127.0.0.1:0 >"$T/$1.out" 2>>"$T/$1.log" &
	eval "PID_$1=$!"
	local i u
	for i in $(seq 200); do
		u=$(sed -n 's/^airlock serve: listening on //p' "$T/$1.out" 2>/dev/null)
		[ -n "$u" ] && { eval "URL_$1=$u"; return 0; }
		sleep 0.05
	done
	sed 's/^/# /' "$T/$1.log"
	return 1
}
node_start A "$A"
is "$?" 0 "node A serves"
node_start B "$B"
is "$?" 0 "node B serves, on the same database"
trap 'kill -9 $PID_A $PID_B 2>/dev/null; "$PG" stop "$T/pg"; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
is "$(fresh)" $((N0 + 2)) "both nodes beat in the nodes table (each its own id)"

# a node asks for a tenant's row once: a tenant is never deleted, so a
# store opened for a tenant it has seen (per request, per run) does not
# ask again (the statements, as the server logs them)
URL=$URL_A
api GET /projects "$TOK"
is "$status" 200 "node A lists the projects (it has seen the tenant)"
su_sql -c "ALTER SYSTEM SET log_statement = 'all'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
L0=$(wc -l <"$T/pg/server.log")
for i in 1 2 3; do api GET /projects "$TOK"; done
is "$status" 200 "three more requests to node A"
ok "…none reads the tenants table (the statements logged: some)" -- \
	sh -c "tail -n +$((L0 + 1)) '$T/pg/server.log' | grep -q 'FROM projects'"
is "$(tail -n +$((L0 + 1)) "$T/pg/server.log" | grep -c 'FROM tenants')" 0 \
	"…and none of them is a tenant's row asked again"
# a run reads its image and project where it is accepted, and the run
# itself only reads the project again (its head when it starts)
L0=$(wc -l <"$T/pg/server.log")
api POST /projects/pa/runs "$TOK" '{"argv":["true"],"wait":true}'
is "$status" 200 "a run through node A"
is "$(tail -n +$((L0 + 1)) "$T/pg/server.log" | grep -c 'FROM images WHERE name')" 1 \
	"…looks its image up once (the run uses the id its request resolved)"
is "$(tail -n +$((L0 + 1)) "$T/pg/server.log" | grep -c 'execute [a-z0-9]*: SELECT p.name, p.volume, v.head, p.created, v.seq FROM projects')" 2 \
	"…and its project twice: to accept it, and for its base as it starts"
su_sql -c "ALTER SYSTEM RESET log_statement" -c "SELECT pg_reload_conf()" >/dev/null

api POST /projects/pa/runs "$TOK" "{\"argv\":[\"sh\",\"-c\",\"sleep 300; echo $MARK-a\"]}"
is "$status" 202 "a long run through node A"
RA=$(field id <<<"$out")
T0=$(date +%s)
for i in $(seq 100); do
	[ "$(outcome "$RA")" = running ] && break
	sleep 0.1
done
is "$(outcome "$RA")" "running" "…its attempt is recorded running in the database"
ok "…its sandbox runs" -- pgrep -f "$MARK-[a]"

# the hazard: B's run in the same tenant recovers interrupted attempts
# first; A's has no lock file in B's home, but A beats
URL=$URL_B
api POST /projects/pb/runs "$TOK" '{"argv":["sh","-c","echo from-b"],"wait":true}'
is "$status" 200 "a run through node B meanwhile"
like "$out" "from-b" "…runs"
is "$(outcome "$RA")" "running" "…and leaves node A's run in flight alone"
api GET "/runs/$RA" "$TOK"
is "$status:$(field state <<<"$out"):$(field principal <<<"$out")" "200:running:alice" \
	"GET /runs/ID on node B: node A's run is running, alice's"
like "$(field node <<<"$out")" "^[0-9a-f]{16}$" "…naming the node that runs it"
# cancel through the other node: A finds the request at its next beat
api POST /projects/pa/runs "$TOK" "{\"argv\":[\"sh\",\"-c\",\"sleep 300; echo $MARK-c\"]}"
RC2=$(field id <<<"$out")
for i in $(seq 100); do [ "$(outcome "$RC2")" = running ] && break; sleep 0.1; done
URL=$URL_B
api POST "/runs/$RC2/cancel" "$BOB"
is "$status" 403 "cancel through node B by an author who did not start it: 403"
is "$(q run_cancels "SELECT count(*) FROM run_cancels")" 0 "…and nothing is asked of node A"
api POST "/runs/$RC2/cancel" "$TOK"
is "$status:$(field state <<<"$out")" "202:cancelling" "cancel through node B of a run on node A: 202"
for i in $(seq 100); do [ "$(outcome "$RC2")" = cancelled ] && break; sleep 0.1; done
is "$(outcome "$RC2")" "cancelled" "…node A cancels it within a beat or two"
like "$(q runs "SELECT record FROM runs WHERE id = '$RC2'")" '"cancelled":true' "…its record says cancelled"
ok "…its sandbox is gone" -- sh -c "! pgrep -f '$MARK-[c]'"
api POST "/runs/$RC2/cancel" "$TOK"
is "$status" 409 "cancelling it again: 409, it has ended"
# past the lease (10 s) with A alive: B's sweep leaves it alone too
while [ $(($(date +%s) - T0)) -lt 13 ]; do sleep 0.5; done
is "$(outcome "$RA")" "running" "past the lease, with node A beating, its run is still running"
ok "…its sandbox too" -- pgrep -f "$MARK-[a]"

# the policy's runs in flight hold across nodes: counted in the database
run env AIRLOCK_HOME="$A" "$AL" admin policy set --runs-per-tenant 1 --runs-per-principal 1
is "$rc:$err" "0:" "policy: runs_per_tenant 1 (A's run in flight)"
api POST /projects/pb/runs "$BOB" '{"argv":["sh","-c","echo over"],"wait":true}'
is "$status" 503 "bob's run through node B beyond the tenant's runs in flight (alice's, on node A): 503"
like "$out" "1 runs of the tenant in flight across the nodes .*runs_per_tenant" "…naming the policy"
is "$(q runs "SELECT count(*) FROM runs WHERE record LIKE '%echo over%'")" 0 "…and nothing is recorded"
run env AIRLOCK_HOME="$A" "$AL" admin policy set --runs-per-tenant 2 --runs-per-principal 1
api POST /projects/pb/runs "$TOK" '{"argv":["sh","-c","echo over"],"wait":true}'
is "$status" 503 "with runs_per_principal 1: alice's second run, through node B: 503"
like "$out" "runs of yours in flight across the nodes .*runs_per_principal" "…naming the policy"
api POST /projects/pb/runs "$BOB" '{"argv":["sh","-c","echo bob-runs"],"wait":true}'
is "$status" 200 "…while bob's first runs through node B"
run env AIRLOCK_HOME="$A" "$AL" admin policy set --runs-per-tenant 8 --runs-per-principal 8

# ---- kill -9 node A mid-run
kill -9 "$PID_A"; wait "$PID_A" 2>/dev/null
K0=$(date +%s)
for i in $(seq 300); do
	[ "$(outcome "$RA")" = "failed: interrupted" ] && break
	sleep 0.1
done
K1=$(date +%s)
is "$(outcome "$RA")" "failed: interrupted" "node A killed: node B records its run as failed: interrupted"
ok "…within the lease and two beats (took $((K1 - K0)) s)" -- test $((K1 - K0)) -le 16
is "$(run_entries "$RA")" 1 "…once: one run ledger entry for it"
like "$(cat "$T/B.log")" "1 run of lost nodes in default recorded" "…and B's log says so"
ok "A's sandbox died with it" -- sh -c "! pgrep -f '$MARK-[a]'"
api GET "/runs/$RA" "$TOK"
is "$status" 200 "B answers for the run"
like "$out" '"outcome":"failed: interrupted"' "…with its record"
api POST /projects/pb/runs "$TOK" '{"argv":["sh","-c","echo still-here"],"wait":true}'
is "$status:$(field exit_code <<<"$out")" "200:0" "node B keeps serving runs"
is "$(run_entries "$RA")" 1 "B's later runs record nothing more for A's run"

# ---- the ledger, from PostgreSQL, verified offline
kill -TERM "$PID_B"; wait "$PID_B" 2>/dev/null
run env AIRLOCK_HOME="$B" "$AL" audit export "$T/ledger.jsonl"
is "$rc" 0 "audit export from PostgreSQL"
AIRLOCK_HOME=$B "$AL" audit pubkey >"$T/pub.pem"
run env -u AIRLOCK_METADATA "$AL" --home "$T/nohome" audit verify "$T/ledger.jsonl" --key "$T/pub.pem"
is "$rc" 0 "the export verifies offline, with no home and no database"
like "$out" "^ok: [0-9]+ entries" "…ok"
done_testing
