#!/bin/bash
# airlock replay: a recorded run again from its record, into a new draft in
# the original's group, with a verdict: identical, divergent (each
# difference, its likely cause) or not_replayable (recorded, no sandbox).
. "$(dirname "$0")/../lib.sh"
need_userns
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S"
printf 'pear\napple\nfig\n' > "$S/fruit.txt"; echo "first notes" > "$S/notes.txt"
"$AL" project create p --from "$S" >/dev/null
runid() { printf '%s' "$1" | sed -n 's/^run \(r[0-9a-f]\{13\}\):.*/\1/p' | tail -1; }
vfield() { echo "$1" | field "verdict.$2"; }
nruns() { "$AL" runs p --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }

# ---- a deterministic program replays identical -------------------------------------
run "$AL" run p -- sh -c 'sort fruit.txt > sorted.txt; wc -l fruit.txt > report.txt; echo sorted; env | sort; nproc; cat /proc/uptime | cut -d. -f1'
is "$rc" 0 "the deterministic program runs"
ORIG=$(runid "$err")
GROUP=$("$AL" run show "$ORIG" --json | field group)
run "$AL" replay "$ORIG"
is "$rc" 0 "its replay is identical: exit 0"
like "$out" "^replay r[0-9a-f]{13} of $ORIG: identical" "…and says so"
REP=$(printf '%s' "$out" | sed -n 's/^replay \(r[0-9a-f]*\) of.*/\1/p')
run "$AL" run show "$REP" --json
is "$(echo "$out" | field replay_of)" "$ORIG" "the replay's record links the original (replay_of)"
is "$(echo "$out" | field group)" "$GROUP" "…and is in the original's group"
is "$(vfield "$out" result)" identical "the record holds the verdict"
is "$(echo "$out" | field base)" "$("$AL" run show "$ORIG" --json | field base)" "it ran on the original's base"
is "$(echo "$out" | field stdout.text)" "$("$AL" run show "$ORIG" --json | field stdout.text)" \
   "…and printed the same: environment (sorted), CPUs, boot clock"
like "$(echo "$out" | field stdout.text)" "SOURCE_DATE_EPOCH=[0-9]+" "SOURCE_DATE_EPOCH is set"
SDE=$(echo "$out" | field env.SOURCE_DATE_EPOCH)
is "$SDE" "$("$AL" project log p --json | field 0.time)" "…to the base's commit time"
is "$(echo "$out" | field pinned.source_date_epoch)" "$SDE" "…and the record says it was pinned"
is "$(echo "$out" | field pinned.time_namespace)" True "the run had a time namespace"
UPTIME=$(echo "$out" | field stdout.text | awk NF | tail -1)
ok "the boot clock starts at 1000 s in a sandbox (read: $UPTIME)" -- test "$UPTIME" -ge 1000 -a "$UPTIME" -lt 1030
like "$(echo "$out" | field stdout.text)" "
1
[0-9]+$" "nproc is 1 with the default --cpus 1"
is "$("$AL" run p --cpus 2 --json -- nproc | field stdout.text)" 2 "--cpus 2: nproc says 2"
is "$("$AL" run p --cpus 1.5 --json -- nproc | field pinned.cpus)" 2 "--cpus 1.5 rounds up to 2 CPUs"
run "$AL" run show "$REP"
like "$out" "replay   of $ORIG: identical" "run show says what a replay replayed, and its verdict"
run "$AL" review "$REP" --stat
like "$out" "sorted.txt" "the replay has its own draft, reviewable by its run id"
run "$AL" audit --group "$GROUP" --json
is "$(echo "$out" | python3 -c 'import json,sys; print(" ".join(e["data"]["id"] for e in json.load(sys.stdin) if e["kind"] == "run"))')" \
   "$ORIG $REP" "the ledger's group has the original and its replay side by side"
like "$(echo "$out" | python3 -c 'import json,sys; print([e["data"].get("verdict", {}).get("result") for e in json.load(sys.stdin) if e["kind"] == "run"])')" \
   "None, 'identical'" "…and the replay's ledger entry holds its verdict"
run "$AL" replay "$ORIG" --json
is "$rc" 0 "--json: exit 0 too"
is "$(vfield "$out" result)" identical "--json prints the record with its verdict"
REP2=$(echo "$out" | field id)
run "$AL" replay "$REP2"
is "$rc" 0 "a replay can itself be replayed"
is "$("$AL" run show "$(printf '%s' "$out" | sed -n 's/^replay \(r[0-9a-f]*\) of.*/\1/p')" --json | field group)" "$GROUP" \
   "…in the same group"

# ---- the wall clock and /dev/urandom: divergent, naming the files -----------------
run "$AL" run p -- sh -c 'date > now.txt; head -c 64 /dev/urandom > noise.bin; od -An -N32 -tx1 /dev/urandom | tr -d " " > token.txt; date; echo steady'
CLOCKY=$(runid "$err")
FIN=$("$AL" run show "$CLOCKY" --json | field finished)
# the replay must start in a later second than the original ended: poll the clock
for _ in $(seq 100); do [ "$(date +%s)" -gt "$FIN" ] && break; sleep 0.05; done
run "$AL" replay "$CLOCKY"
is "$rc" 20 "a program writing the date and random bytes replays divergent: exit 20"
like "$out" "of $CLOCKY: divergent, 4 differences" "…counting the differences"
like "$out" "stdout differs at line 1:
    original: [A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]{2} [0-9:]{8} UTC [0-9]{4}
    replay:   [A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]{2} [0-9:]{8} UTC [0-9]{4}
    likely cause \(wall_clock\)" "stdout: the first differing line of each, and the wall clock as its cause"
like "$out" "  now.txt: content differs" "now.txt is named"
like "$out" "
-[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]{2} [0-9:]{8} UTC [0-9]{4}
\+[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]{2} [0-9:]{8} UTC [0-9]{4}" "…with its differing lines (a unified diff)"
like "$out" "noise.bin: content differs
    original: A file 0644 64 bytes sha256:[0-9a-f]{64}
    replay:   A file 0644 64 bytes sha256:[0-9a-f]{64}
    binary: sizes and digests above
    likely cause \(random\)" "the binary file: sizes and digests, and random data as its cause"
like "$out" "token.txt: content differs" "the text file of random hex is named"
like "$out" "
-[0-9a-f]{64}
\+[0-9a-f]{64}" "…with its differing lines"
CREP=$(printf '%s' "$out" | sed -n 's/^replay \(r[0-9a-f]*\) of.*/\1/p')
run "$AL" run show "$CREP" --json
J="$out"
is "$(vfield "$J" result)" divergent "the record's verdict is divergent"
is "$(echo "$J" | python3 -c 'import json,sys; v=json.load(sys.stdin)["verdict"]
print(" ".join(d.get("path", d["what"]) + ":" + d.get("hint", "-") for d in v["differences"]))')" \
   "stdout:wall_clock noise.bin:random now.txt:wall_clock token.txt:random" "each difference with its likely cause"
is "$(echo "$J" | python3 -c 'import json,sys; v=json.load(sys.stdin)["verdict"]
print([d["differs"] for d in v["differences"] if d["what"] == "path"])')" "[['content'], ['content'], ['content']]" \
   "…the paths differ in content only"
is "$(echo "$J" | field verdict.paths_differing)" 3 "paths_differing counts them"
run "$AL" audit --group "$("$AL" run show "$CLOCKY" --json | field group)" --json
like "$out" "\"result\":\"divergent\"" "the divergent verdict is in the ledger entry"

# ---- secrets: supplied again, compared by their keyed digest ----------------------
run "$AL" run p --secret TOKEN=alpha-secret-1 --secret-file KEY=beta-secret-2 -- sh -c 'echo ${#TOKEN} > tlen.txt; wc -c < /run/airlock/secrets/KEY > klen.txt'
SEC=$(runid "$err")
L="$AIRLOCK_HOME/tenants/default/lower"
STAMPS=$(stat -c '%n %Y.%y' "$L"/*.lock | sort)
BEFORE=$(nruns)
run "$AL" replay "$SEC"
is "$rc" 21 "a replay without the original's secrets is not_replayable: exit 21"
like "$out" "of $SEC: not_replayable: the original had secrets TOKEN, KEY, not supplied" "…naming the secrets"
ok "…and starts no sandbox (no lower layer was used)" -- test "$STAMPS" = "$(stat -c '%n %Y.%y' "$L"/*.lock | sort)"
NR=$(printf '%s' "$out" | sed -n 's/^replay \(r[0-9a-f]*\) of.*/\1/p')
run "$AL" run show "$NR" --json
is "$(echo "$out" | field outcome)" not_replayable "it is recorded, outcome not_replayable"
is "$(echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["draft"], d["stdout"], "exit_code" in d, "pinned" in d)')" \
   "None None False False" "…with no draft, no output, no exit status: it never ran"
is "$(nruns)" $((BEFORE + 1)) "…as one more run of the project"
like "$("$AL" runs p | tail -1)" "^$NR - exit 0 +not_replayable " "airlock runs lists it as not_replayable"
like "$("$AL" run show "$NR")" "run $NR: not_replayable: the original had secrets" "run show gives its reason"
is "$("$AL" audit --group "$("$AL" run show "$SEC" --json | field group)" --json | python3 -c 'import json,sys
print([e["data"]["verdict"]["result"] for e in json.load(sys.stdin) if e["kind"] == "run" and "verdict" in e["data"]])')" \
   "['not_replayable']" "…and a ledger entry in the original's group"
run "$AL" replay "$SEC" --secret TOKEN=alpha-secret-1
is "$rc" 21 "one secret of two is not enough"
like "$out" "had secret KEY, not supplied" "…naming the missing one"
export REPLAY_KEY=beta-secret-2
run "$AL" replay "$SEC" --secret TOKEN=alpha-secret-1 --secret REPLAY_KEY --json
is "$rc" 6 "a secret the original did not have is refused (exit 6)"
like "$err" "had no secret REPLAY_KEY" "…naming it"
run "$AL" replay "$SEC" --secret TOKEN=alpha-secret-1 --secret KEY=beta-secret-2
is "$rc" 0 "with both values again: identical"
run "$AL" replay "$SEC" --secret TOKEN=alpha-secret-1 --secret KEY=beta-secret-2 --json
is "$(echo "$out" | python3 -c 'import json,sys; print([(s["name"], s["as"], s["same"]) for s in json.load(sys.stdin)["verdict"]["secrets"]])')" \
   "[('TOKEN', 'env', True), ('KEY', 'file', True)]" "the verdict says each value is the original's, delivered as it was"
ok "no secret value is stored anywhere" -- sh -c "! grep -rqa -e alpha-secret-1 -e beta-secret-2 '$AIRLOCK_HOME'"
run "$AL" replay "$SEC" --secret TOKEN=other --secret KEY=beta-secret-2
is "$rc" 20 "another value changes what the command wrote: divergent"
like "$out" "tlen.txt: content differs" "…naming the file"
like "$out" "likely cause \(secret\)" "…with the secret as the likely cause"
like "$out" "secret TOKEN: not the original's value" "…and the secret that differs"

# ---- bad input changes nothing -----------------------------------------------------
BEFORE=$(nruns); STATE=$(store_state)
run "$AL" replay r0000000000000
is "$rc" 3 "an unknown run is not found (exit 3)"
like "$err" "no run r0000000000000" "…with a message"
run "$AL" replay 'nonsense'
is "$rc" 3 "a malformed run id is not found either"
run "$AL" replay
is "$rc" 2 "no run id: usage (exit 2)"
run "$AL" replay "$SEC" "$ORIG"
is "$rc" 2 "two run ids: usage"
run "$AL" replay "$SEC" --secret '1BAD=never-echo-this'
is "$rc" 2 "a malformed --secret is a usage error"
ok "…whose message never echoes the value" -- bash -c "! grep -q never-echo '$T/.stderr'"
run "$AL" replay "$SEC" --secret '=value'
is "$rc" 2 "a --secret without a name is a usage error"
run "$AL" replay "$SEC" --secret NOT_IN_ENV_AT_ALL
is "$rc" 2 "--secret NAME not in airlock's environment is a usage error"
run "$AL" replay "$SEC" --secret TOKEN=a --secret TOKEN=b --secret KEY=c
is "$rc" 2 "the same secret twice is a usage error"
run "$AL" replay "$SEC" --bogus
is "$rc" 2 "an unknown option is a usage error"
run "$AL" replay "$NR"
is "$rc" 6 "a replay that never ran cannot be replayed (exit 6)"
like "$err" "replay $SEC, its original" "…the message points at its original"
is "$(nruns)" "$BEFORE" "no refused replay left a run"
is "$(store_state)" "$STATE" "…or any object"

# ---- --on-head: the same command on the head now ---------------------------------
run "$AL" run p -- sh -c 'echo "appended by the run" >> notes.txt; sort fruit.txt > sorted2.txt'
NOTES=$(runid "$err")
run "$AL" replay "$NOTES" --on-head
is "$rc" 0 "on an unchanged head the replay is identical"
like "$out" "\(on the project's head\): identical" "…and says it ran on the head"
echo "notes edited by a person" > "$S/notes.txt"
"$AL" commit p "$S" --base "$("$AL" project head p)" -m "edit notes" >/dev/null
run "$AL" replay "$NOTES"
is "$rc" 0 "after a commit, a replay on the original's base is still identical"
run "$AL" replay "$NOTES" --on-head
is "$rc" 20 "on the head that changed notes.txt: divergent"
like "$out" "notes.txt: content differs" "…naming the file the commit touched"
like "$out" "likely cause \(base\): the path was already different on the head" "…which was different on the head before"
like "$out" "
-first notes
\+notes edited by a person
 appended by the run" "…with the unified diff of the two versions"
ok "sorted2.txt, which the commit did not touch, is no difference" -- bash -c "! grep -q sorted2 '$T/.stdout'"
run "$AL" run show "$(printf '%s' "$out" | sed -n 's/^replay \(r[0-9a-f]*\) of.*/\1/p')" --json
is "$(echo "$out" | field base)" "$("$AL" project head p)" "the replay's base is the head"
is "$(echo "$out" | field env.SOURCE_DATE_EPOCH)" "$("$AL" project log p --json | field 1.time)" \
   "…and its SOURCE_DATE_EPOCH the head's commit time"
is "$(vfield "$out" on_head)" True "the verdict says on_head"

# ---- the request's contract is an input: the replay is held to it too -------------
echo '{"writable": ["out/**"], "on_violation": "drop"}' > "$T/contract.json"
run "$AL" run p --contract "$T/contract.json" -- sh -c 'mkdir -p out; echo kept > out/r.txt; echo stray > stray.txt'
CON=$(runid "$err")
is "$("$AL" run show "$CON" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["contract"]["verdict"], d["changes"]["added"])')" \
   "violated 2" "the original wrote outside its contract, and stray.txt was dropped"
run "$AL" replay "$CON" --json
is "$rc" 0 "its replay, held to the same contract, is identical"
is "$(echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["contract"]["verdict"], json.dumps(d["contract"]["contracts"]["request"], sort_keys=True))')" \
   'violated {"on_violation": "drop", "writable": ["out/**"]}' "…the replay's record names the request's contract again"

# ---- hostile output and names ------------------------------------------------------
run "$AL" run p -- sh -c 'printf "line\033]0;pwned\007 %s\n" "$(od -An -N6 -tx1 /dev/urandom | tr -d " ")"; head -c 16 /dev/urandom | od -An -tx1 > "résumé ☃.txt"'
HOST=$(runid "$err")
run "$AL" replay "$HOST"
is "$rc" 20 "hostile output: divergent"
is "$(grep -c $'\033' "$T/.stdout")" 0 "the terminal escape in the differing line is never sent"
ok "…it is shown escaped" -- grep -qF 'line\x1b]0;pwned' "$T/.stdout"
like "$out" "résumé ☃.txt: content differs" "a UTF-8 name is shown as it is"

# ---- an input the collector removed: not_replayable -----------------------------------
mkdir -p "$T/img1/bin" "$T/img2/bin"
cp -a "$AIRLOCK_BUILD/image/busybox/." "$T/img1/"; cp -a "$AIRLOCK_BUILD/image/busybox/." "$T/img2/"
echo one > "$T/img1/marker"; echo two > "$T/img2/marker"
"$AL" image import "$T/img1" --name mine >/dev/null
run "$AL" run p --image mine -- cat /marker
OLDIMG=$(runid "$err")
"$AL" image import "$T/img2" --name mine >/dev/null   # the name moves on; the old image is only recorded
"$AL" gc retention 0 >/dev/null
"$AL" gc --now $(( $(date +%s) + 3 * 86400 )) >/dev/null
run "$AL" replay "$OLDIMG"
is "$rc" 21 "a run whose image was garbage-collected is not_replayable"
like "$out" "its image sha256:[0-9a-f]{64} is no longer stored" "…naming the input that is gone"
"$AL" gc retention forever >/dev/null

# ---- SIGINT cancels a replay, as it cancels a run ----------------------------------
run "$AL" run p -- sh -c 'sleep 2; echo slept > slept.txt'
SLOW=$(runid "$err")
BEFORE=$(nruns)
"$AL" replay "$SLOW" >"$T/cancel.out" 2>&1 &
RP=$!
# the replay's attempt is recorded (outcome running) once its sandbox is being set up
for _ in $(seq 200); do [ "$(nruns)" -gt "$BEFORE" ] && break; sleep 0.05; done
kill -INT "$RP"; wait "$RP"; crc=$?
is "$crc" 130 "SIGINT cancels a replay: exit 128+2"
CREC=$("$AL" runs p --json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)[-1]))')
is "$(echo "$CREC" | field cancelled)" True "…recorded as cancelled"
is "$(echo "$CREC" | field verdict.result)" divergent "…its verdict says it did not do the same"
is "$(echo "$CREC" | python3 -c 'import json,sys; print(json.load(sys.stdin)["verdict"]["differences"][0])')" \
   "{'original': 'ok', 'replay': 'cancelled', 'what': 'outcome'}" "…first of all in its outcome"

run "$AL" fsck
is "$rc" 0 "fsck is clean: every replay's record matches its ledger entry"
done_testing
