#!/bin/bash
# The ledger is the truth (issue 12, item 6): fsck checks that run records,
# commits, heads and drafts' states say what the ledger says, and names
# each difference; editing meta.db behind the ledger's back is caught even
# though the ledger itself still verifies.
. "$(dirname "$0")/../lib.sh"
need_userns
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S"; echo one > "$S/a.txt"
"$AL" project create p --from "$S" >/dev/null
"$AL" run p -- sh -c 'echo hello; echo two > b.txt' >/dev/null 2>&1
RUN=$("$AL" runs p --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
"$AL" apply "$RUN" --accept-all >/dev/null
"$AL" run p -- sh -c 'echo three > c.txt' >/dev/null 2>&1
RUN2=$("$AL" runs p --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
"$AL" apply "$RUN2" --reject-all >/dev/null
run "$AL" fsck
is "$rc" 0 "fsck of a home nobody tampered with is clean"
like "$err" "0 differ from the ledger" "…and says the tables agree with the ledger"
DB="$AIRLOCK_HOME/tenants/default/meta.db"
sql() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()' "$DB" "$1"; }
sql "PRAGMA wal_checkpoint(TRUNCATE)" # the WAL stays beside the database: fold it in first
cp "$DB" "$T/meta.orig"
restore() { cp "$T/meta.orig" "$DB"; rm -f "$DB-wal" "$DB-shm"; }

tamper() { # tamper SQL PATTERN DESCRIPTION
	restore
	sql "$1"
	run "$AL" audit verify
	local v=$rc
	run "$AL" fsck
	is "$v:$rc" "0:4" "$3: the ledger still verifies, fsck fails (exit 4)"
	like "$out" "$2" "…naming it"
}
tamper "UPDATE runs SET record = replace(record, '\"exit_code\":0', '\"exit_code\":1') WHERE id = '$RUN'" \
	"^ledger .*run $RUN: its record differs from its ledger entry in 'exit_code'" "a run record's exit status edited"
OTHER=$(python3 -c 'print("sha256:" + "ab" * 32)')
tamper "UPDATE runs SET record = json_set(record, '\$.stdout.blob', '$OTHER') WHERE id = '$RUN'" \
	"run $RUN: its record differs from its ledger entry in 'stdout'" "a run record's stdout swapped"
tamper "DELETE FROM runs WHERE id = '$RUN2'" "run $RUN2: in the ledger, but its record is gone" "a run record deleted"
tamper "UPDATE volumes SET head = (SELECT base FROM volumes WHERE kind = 'draft' LIMIT 1) WHERE kind = 'live'" \
	"project p: its head is not what the ledger says" "a project's head moved without a commit"
tamper "UPDATE commits SET result = (SELECT parent FROM commits c2 WHERE c2.id = commits.id) WHERE id = (SELECT max(id) FROM commits)" \
	"commit [0-9]+ of .*: the history says .*, the ledger" "a commit's result edited"
tamper "UPDATE volumes SET state = 'open' WHERE public_id = (SELECT draft FROM runs WHERE id = '$RUN2')" \
	"draft d[0-9a-f]+: open, but the ledger has its reject" "a rejected draft reopened"
# the daemon checks at start, logs what differs, and serves
sql "UPDATE runs SET record = replace(record, '\"exit_code\":0', '\"exit_code\":1') WHERE id = '$RUN'"
serve_start
api GET /health ""
is "$status" 200 "the daemon serves a home that differs from its ledger"
like "$(cat "$T/serve.log")" "tenant default: differs from its ledger: run $RUN: its record differs" "…and logged the difference at start"
serve_stop
restore
run "$AL" fsck --json
is "$rc:$(printf '%s' "$out" | field ledger_differences)" "0:0" "restored: clean again (--json counts ledger_differences)"
done_testing
