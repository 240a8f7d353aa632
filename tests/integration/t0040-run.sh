#!/bin/bash
# airlock run: a command in a sandbox on the project's head; its changes come
# back exactly, as a draft; the live head does not move until apply.
. "$(dirname "$0")/../lib.sh"
need_userns
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S/dir/sub" "$S/gone"
echo one > "$S/edit.txt"; echo bye > "$S/del.txt"; echo s > "$S/script.sh"; echo g > "$S/gone/g"
echo keep > "$S/dir/sub/keep"
"$AL" project create p --from "$S" >/dev/null
HEAD0=$("$AL" project head p)

run "$AL" run p -- sh -c 'echo more >> edit.txt; rm del.txt; chmod 755 script.sh; rm -rf gone; mkdir -p new/empty; echo n > new/f; echo to-stdout; echo to-stderr >&2'
is "$rc" 0 "a successful run exits 0"
is "$out" "to-stdout" "the command's stdout streams to stdout"
like "$err" "to-stderr" "its stderr streams to stderr"
like "$err" "^to-stderr
run r[0-9a-f]{13}: 7 changes \(3 added, 2 modified, 2 deleted\); review: airlock review r[0-9a-f]{13}$" "the summary line names the changes and how to review them"
RUN=$(printf '%s' "$err" | sed -n 's/^run \(r[0-9a-f]*\):.*/\1/p')
is "$("$AL" project head p)" "$HEAD0" "the live head has not moved"
run "$AL" review "$RUN" --stat
like "$out" "edit.txt" "review takes the run id"
run "$AL" review "$RUN" --json
is "$(echo "$out" | python3 -c 'import json,sys; print(" ".join(f["op"]+":"+f["path"] for f in json.load(sys.stdin)["files"]))')" \
   "D:del.txt M:edit.txt D:gone D:gone/g A:new A:new/empty A:new/f M:script.sh" \
   "writes, deletes, a mode change and an empty directory come back exactly"
run "$AL" apply "$RUN" --accept edit.txt new
is "$rc" 0 "apply takes the run id (accept_selected)"
"$AL" snapshot export "$("$AL" project head p)" "$T/out" >/dev/null
is "$(cat "$T/out/edit.txt")" "one
more" "the accepted edit is in the project"
ok "the accepted empty directory is there" -- test -d "$T/out/new/empty"
ok "what was not accepted is not: del.txt is still there" -- test -f "$T/out/del.txt"
is "$(stat -c %a "$T/out/script.sh")" 644 "…and script.sh keeps its mode"

# JSON, status, environment
run "$AL" run p --json --env FOO=bar --env TZ=Europe/Paris -- sh -c 'echo "$FOO $TZ $LANG $HOME"; hostname; pwd; umask; id -u; exit 7'
is "$rc" 7 "the exit status is the command's"
is "$(echo "$out" | field stdout.text)" "bar Europe/Paris C.UTF-8 /root
airlock
/workspace
0022
0" "pinned: hostname, /workspace, umask 022, uid 0, LANG/HOME defaults, --env over them"
is "$(echo "$out" | field exit_code)" 7 "the record keeps the exit status"
is "$(echo "$out" | field env.FOO)" bar "the record keeps the environment"
run "$AL" run p -- sh -c 'kill -9 $$'
is "$rc" 137 "a command killed by a signal exits 128+N"
run "$AL" run p -- /no/such/command
is "$rc" 127 "a command that cannot be started exits 127"
like "$err" "no/such/command" "…with a message"

run "$AL" run p --secret '1BAD=never-echo-this' --secret-file 'BAD-NAME=never-echo-this-either' -- true
is "$rc" 2 "a secret with a bad name is a usage error"
ok "…whose message names the variable but never echoes the value" -- bash -c "! grep -q never-echo '$T/.stderr'"
run "$AL" run p --secret-file 'BAD-NAME=never-echo-this-either' -- true
like "$err" "bad secret file name 'BAD-NAME'" "…the same for a secret file"
# secrets: in the environment, never stored
SECRET="s3cr3t-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
export AIRLOCK_TEST_TOKEN="$SECRET"
run "$AL" run p --json --secret API_TOKEN=$SECRET --secret AIRLOCK_TEST_TOKEN -- sh -c 'test "$API_TOKEN" = "$AIRLOCK_TEST_TOKEN" && echo secret-seen; echo -n "$API_TOKEN" | wc -c > token-length'
like "$(echo "$out" | field stdout.text)" "secret-seen" "a secret reaches the command"
like "$(echo "$out" | field secrets)" "API_TOKEN" "the record names the secret"
ok "no stored byte holds a secret's value (the whole home, compressed objects unpacked)" -- \
	sh -c "! grep -rqa -- '$SECRET' '$AIRLOCK_HOME' && ! \"$AL\" audit export '$T/ledger.txt' >/dev/null || ! grep -qa -- '$SECRET' '$T/ledger.txt'"
RUNS=$("$AL" runs p --json)
ok "no run record holds it" -- sh -c "! printf '%s' '$RUNS' | grep -q -- '$SECRET'"

# bad input changes nothing
BEFORE=$(store_state); NRUNS=$("$AL" runs p | wc -l)
run "$AL" run p --network egress --allow example.com -- true
is "$rc" 11 "--network egress to a destination the policy does not allow is refused (t0130)"
like "$err" "egress to 'example.com' is not allowed by the policy" "…with the reason"
run "$AL" run nope -- true
is "$rc" 3 "an unknown project is not found"
run "$AL" run p --image nope -- true
is "$rc" 3 "an unknown image is not found"
run "$AL" run p true
is "$rc" 2 "the command must follow --"
run "$AL" run p --memory lots -- true
is "$rc" 2 "a bad size is a usage error"
run "$AL" run p --env 1BAD=x -- true
is "$rc" 2 "a bad variable name is a usage error"
is "$(store_state)" "$BEFORE" "refused runs store nothing"
is "$("$AL" runs p | wc -l)" "$NRUNS" "…and record nothing"

# two concurrent runs get independent drafts
"$AL" run p -- sh -c 'echo a > a.txt; sleep 0.3' 2>"$T/a.err" &
"$AL" run p -- sh -c 'echo b > b.txt; sleep 0.3' 2>"$T/b.err"
wait
RA=$(sed -n 's/^run \(r[0-9a-f]*\):.*/\1/p' "$T/a.err"); RB=$(sed -n 's/^run \(r[0-9a-f]*\):.*/\1/p' "$T/b.err")
like "$("$AL" review "$RA" --stat)" "^A a.txt" "concurrent run A's draft has its own change"
like "$("$AL" review "$RB" --stat)" "^A b.txt" "concurrent run B's draft has its own change"

# records, show, ledger
run "$AL" run show "$RUN"
like "$out" "to-stdout" "run show prints the stdout"
like "$out" "to-stderr" "…and the stderr"
run "$AL" run show r0000000000000
is "$rc" 3 "run show of an unknown run: not found"
run "$AL" run show rnothere0000000
is "$rc" 6 "run show of a malformed run id: invalid input (6)"
run "$AL" runs p --json
is "$(echo "$out" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" "$((NRUNS + 2))" "runs lists every run"
GRP=$("$AL" run show "$RUN" --json | field group)
run "$AL" audit --group "$GRP" --json
KINDS=$(echo "$out" | python3 -c 'import json,sys; print(" ".join(e["kind"] for e in json.load(sys.stdin)))')
like " $KINDS " " run " "the run is in the ledger, in its group (kinds: $KINDS)"
like " $KINDS " " draft_create " "…with its draft"
is "$(echo "$out" | python3 -c 'import json,sys; print([e for e in json.load(sys.stdin) if e["kind"] == "run"][0]["data"]["id"])')" "$RUN" "…the run entry names the run"
run "$AL" audit export "$T/audit.txt"
run "$AL" audit verify "$T/audit.txt"
like "$out" "[1-9][0-9]* content blobs" "the export carries the runs' stdout and stderr"
ok "…as content lines" -- grep -q "^C " "$T/audit.txt"
run "$AL" audit verify
is "$rc" 0 "the ledger verifies"
[ "$rc" = 0 ] || echo "$err" | sed 's/^/# /'

# the cgroup v2 path, exercised on a hybrid host through the testing aid
# (operations.md): the sandbox is born in the run's v2 cgroup (clone3 into
# it), joins its v1 ones itself, and both are gone after the run
if [ -d /sys/fs/cgroup/unified ] || [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
	AIRLOCK_CGROUP2_MEMBERSHIP=1 "$AL" run p -- sh -c 'cat /proc/self/cgroup; sleep 3' cgroup-probe >"$T/cg.out" 2>"$T/cg.err" &
	CGR=$!
	SL=
	for _ in $(seq 100); do SL=$(pgrep -f '^airlock-init -- .* cgroup-probe$' | head -1); [ -n "$SL" ] && break; sleep 0.05; done
	V2=$(grep '^0::' "/proc/$SL/cgroup" 2>/dev/null)
	like "$V2" "^0::/(.*/)?airlock-runs/run-[0-9a-f]{12}$" "the sandbox (its PID 1) is in the run's v2 cgroup"
	like "$(grep -E '^[0-9]+:([^:]*,)?memory(,[^:]*)?:' "/proc/$SL/cgroup" 2>/dev/null || echo 'v2 only')" "airlock-run-|v2 only" "…and in its v1 memory cgroup where there is one"
	wait $CGR
	is "$?" 0 "…where the command runs"
	like "$(cat "$T/cg.out")" "^0::/$" "…seeing its own cgroups as the root (its cgroup namespace)"
	ok "…in every hierarchy, v1 included (the namespace is made after it joined them)" -- \
		sh -c "[ -s '$T/cg.out' ] && ! grep -qv ':/\$' '$T/cg.out'"
	MNT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	ok "…and the run's v2 cgroup is gone after it" -- test ! -e "$MNT${V2#0::}"
elif prereq_required; then
	ok "cgroup v2 is mounted (for the v2 path)" -- false
fi

run "$AL" fsck
is "$rc" 0 "fsck is clean after the runs"
done_testing
