#!/bin/bash
# Every run attempt is recorded (issue 12, items 2 and 3): a local run
# interrupted by SIGINT, SIGTERM or SIGHUP cancels its sandbox and is
# recorded as cancelled with its output; a SIGKILLed airlock takes its
# sandbox with it, and the next run records the attempt as interrupted and
# removes its leftovers; a sandbox that cannot start is recorded as failed.
. "$(dirname "$0")/../lib.sh"
need_root
need_userns
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S"; echo one > "$S/a.txt"
"$AL" project create p --from "$S" >/dev/null
"$AL" run p -- true >/dev/null 2>&1 # the image is imported, the layers materialised
cgdirs() { find /sys/fs/cgroup -maxdepth 4 -type d \( -name 'airlock-run-*' -o -path '*/airlock-runs/run-*' \) 2>/dev/null | sort; }
CG0=$(cgdirs)
# run cgroups that are new and empty: what a run left behind (another
# suite's run in flight holds processes in its own)
leftovers() { local d; for d in $(cgdirs); do case "$CG0" in *"$d"*) continue ;; esac; [ -n "$(cat "$d/cgroup.procs" 2>/dev/null)" ] || echo "$d"; done; }
last_run() { "$AL" runs p --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])'; }
rec() { "$AL" run show "$1" --json | python3 -c 'import json,sys
d=json.load(sys.stdin); o=d.get("stdout") or {}
print(d.get("outcome"), d.get("cancelled"), repr(o.get("text")), d.get("draft") is not None)'; }
wait_for() { local i; for i in $(seq 100); do grep -q "$1" "$2" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
gone() { local i; for i in $(seq 100); do pgrep -f "$1" >/dev/null || return 0; sleep 0.1; done; return 1; }

n=0
for sig in INT TERM HUP; do
	n=$((n + 1)); tag="sleep $((3000 + $$ % 100000))$n" # this suite's own
	"$AL" run p -- sh -c "echo started; echo partial > part$n.txt; $tag" >"$T/o$n" 2>"$T/e$n" &
	P=$!
	wait_for started "$T/o$n"
	kill -$sig $P; wait $P; rc=$?
	is "$rc" $((128 + $(kill -l $sig))) "SIG$sig to airlock run: it exits 128+signal, after the run is dealt with"
	ok "…no process of the sandbox is left" -- gone "^$tag\$"
	like "$(cat "$T/e$n")" "cancelled .*recorded with its output" "…it says the run was cancelled and recorded"
	R=$(last_run)
	is "$(rec "$R")" "cancelled True 'started\\n' True" "…the record: outcome cancelled, the output it produced, a draft"
	like "$("$AL" review "$R" 2>&1)" "part$n.txt" "…whose partial changes are there to review"
	is "$(leftovers)" "" "…and no cgroup of it is left"
done
like "$("$AL" audit --kind run --json)" '"cancelled":true' "cancelled runs are ledger entries"

# SIGKILL: the sandbox dies with airlock; the next run records the attempt
KNAP=$((4000 + $$ % 100000))
"$AL" run p -- sh -c "echo started; sleep $KNAP" >"$T/ok" 2>"$T/ek" &
P=$!
wait_for started "$T/ok"
KILLED=$(last_run)
is "$("$AL" run show "$KILLED" --json | field outcome)" running "while it runs, the attempt is recorded as running"
kill -KILL $P; wait $P 2>/dev/null
ok "SIGKILL of airlock: the sandbox dies with it (parent-death signal)" -- gone "^sleep $KNAP\$"
# what it left: its cgroups (as if a minute had passed) and a half-made layer
mkdir -p "$AIRLOCK_HOME/tenants/default/lower/.tmp-deadbeef0000/sub"
mkdir -p "$AIRLOCK_HOME/tenants/default/lower/.tmp-live00000000"
( flock 9; sleep 20 ) 9>"$AIRLOCK_HOME/tenants/default/lower/.tmp-live00000000.lock" &
LOCKER=$!
AGED=$(leftovers)
for d in $AGED; do touch -d '2 minutes ago' "$d"; done
ok "…leaving cgroup directories behind" -- test -n "$AGED"
run "$AL" run p -- true
is "$rc" 0 "the next run runs"
is "$("$AL" run show "$KILLED" --json | field outcome)" "failed: interrupted" "…and records the killed attempt as interrupted"
like "$("$AL" audit --kind run --json)" "\"id\":\"$KILLED\".*failed: interrupted|failed: interrupted.*\"id\":\"$KILLED\"" "…in the ledger"
# those it left (not another suite's, made meanwhile and still empty)
is "$(for d in $AGED; do [ -d "$d" ] && [ -z "$(cat "$d/cgroup.procs" 2>/dev/null)" ] && echo "$d"; done)" "" \
	"…removes the leftover cgroups"
ok "…and the half-made layer" -- test ! -e "$AIRLOCK_HOME/tenants/default/lower/.tmp-deadbeef0000"
ok "…but not a layer another process is still making" -- test -d "$AIRLOCK_HOME/tenants/default/lower/.tmp-live00000000"
kill $LOCKER 2>/dev/null; wait $LOCKER 2>/dev/null
ok "no lock of a run is left" -- sh -c "! ls '$AIRLOCK_HOME/tenants/default/runs/' | grep -q ."

# a sandbox that cannot start: recorded as failed, with where and why
run unshare -m sh -c "mount -t tmpfs tmpfs /proc/fs && '$AL' run p -- echo hi"
is "$rc" 125 "a run whose sandbox cannot be set up exits 125"
like "$err" "\\(recorded: run r[0-9a-f]+\\)" "…and says it was recorded"
F=$(last_run)
is "$("$AL" run show "$F" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["outcome"], d["draft"], d["stdout"], d["error"]["code"])')" \
   "failed: sandbox None None SandboxError" "…its record: outcome, no draft, no output, the error"
like "$("$AL" run show "$F")" "mounting /proc failed" "run show says why"
like "$("$AL" runs p | tail -1)" "^$F - exit .*failed: sandbox" "runs lists it as failed"
like "$("$AL" audit --kind run --json)" "failed: sandbox" "it is a ledger entry"
run "$AL" audit verify
is "$rc" 0 "the ledger verifies"
run "$AL" fsck
is "$rc" 0 "the store is sound"
done_testing
