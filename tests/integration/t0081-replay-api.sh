#!/bin/bash
# POST /api/runs/{id}/replay: a replay is a run like any other (roles,
# grants, an agent's own runs only, another tenant's run does not exist),
# with its verdict in the record; bad bodies are refused and change nothing;
# the CLI's --server replay prints what the local one prints.
. "$(dirname "$0")/../lib.sh"
need_userns
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S"; printf 'b\na\n' > "$S/in.txt"
"$AL" project create p --from "$S" >/dev/null
"$AL" project create q >/dev/null
"$AL" admin tenant create acme >/dev/null
"$AL" admin principal create adm --role admin >/dev/null
"$AL" admin principal create au --role author >/dev/null
"$AL" admin principal create rv --role reviewer >/dev/null
"$AL" admin principal create ag --role agent --project p >/dev/null
"$AL" admin principal create ag2 --role agent --project p >/dev/null
"$AL" admin principal create ngr --role agent --project q >/dev/null
"$AL" --tenant acme admin principal create mallory --role author >/dev/null
tok() { "$AL" admin token create "$@" 2>/dev/null; }
ADM=$(tok adm); AU=$(tok au); RV=$(tok rv); AG=$(tok ag); AG2=$(tok ag2); NGR=$(tok ngr)
MAL=$("$AL" --tenant acme admin token create mallory 2>/dev/null)
serve_start
nruns() { "$AL" runs p --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }

# the agent's own run, and its replay
api POST /projects/p/runs "$AG" '{"argv":["sh","-c","sort in.txt > out.txt; echo done"],"wait":true}'
is "$status" 200 "the agent runs on its granted project"
ORIG=$(echo "$out" | field id); GROUP=$(echo "$out" | field group)
api POST "/runs/$ORIG/replay" "$AG" '{"wait":true}'
is "$status" 200 "the agent replays its own run (wait)"
is "$(echo "$out" | field verdict.result)" identical "…identical"
is "$(echo "$out" | field replay_of)" "$ORIG" "…linked to the original"
is "$(echo "$out" | field group)" "$GROUP" "…in its group"
is "$(echo "$out" | field principal)" ag "…recorded as the agent's run"
is "$(echo "$out" | field state)" ended "…ended, with its output"
is "$(echo "$out" | field stdout.text)" "done" "…and its output"

# who may not: the missing run's 404 for all who may not see it
api POST /runs/r0000000000000/replay "$AG" '{}'
is "$status" 404 "an unknown run: 404"
MISSING=$(echo "$out" | sed 's/r0000000000000/RUN/')
api POST "/runs/$ORIG/replay" "$NGR" '{"wait":true}'
is "$status" 404 "an agent without the project's grant: 404"
is "$(echo "$out" | sed "s/$ORIG/RUN/")" "$MISSING" "…the same answer as a missing run"
api POST "/runs/$ORIG/replay" "$AG2" '{"wait":true}'
is "$status" 404 "another agent, granted the project, may not replay a run it did not start: 404"
is "$(echo "$out" | sed "s/$ORIG/RUN/")" "$MISSING" "…the same answer as a missing run"
api POST "/runs/$ORIG/replay" "$MAL" '{"wait":true}'
is "$status" 404 "another tenant's author: 404"
is "$(echo "$out" | sed "s/$ORIG/RUN/")" "$MISSING" "…the same answer as a missing run"
api POST "/runs/$ORIG/replay" "$RV" '{"wait":true}'
is "$status" 403 "a reviewer may not start runs, nor replays: 403"
api POST "/runs/$ORIG/replay" "$ADM" '{"wait":true}'
is "$status" 403 "an admin neither: 403"
api POST "/runs/$ORIG/replay" "" '{"wait":true}'
is "$status" 401 "no token: 401"

# bad bodies change nothing
BEFORE=$(nruns)
api POST "/runs/$ORIG/replay" "$AU" '{"wait":true,"image":"busybox"}'
is "$status" 422 "an unknown field: 422"
api POST "/runs/$ORIG/replay" "$AU" '{"on_head":"yes"}'
is "$status" 422 "on_head not a boolean: 422"
api POST "/runs/$ORIG/replay" "$AU" '{"secrets":[{"name":"1BAD","value":"never-echo-this"}]}'
is "$status" 422 "a bad secret name: 422"
ok "…whose message never echoes the value" -- bash -c "! grep -q never-echo '$T/.api'"
api POST "/runs/$ORIG/replay" "$AU" '{"secrets":[{"name":"K","value":"a","as":"file"}]}'
is "$status" 422 "'as' is the original's, not the request's: 422"
api POST "/runs/$ORIG/replay" "$AU" '{"secrets":[{"name":"K","value":"a"},{"name":"K","value":"b"}]}'
is "$status" 422 "a secret twice: 422"
api POST "/runs/$ORIG/replay" "$AU" '[1]'
is "$status" 422 "not an object: 422"
api POST "/runs/$ORIG/replay" "$AU" '{"secrets":[{"name":"K","value":"a"}],"wait":true}'
is "$status" 422 "a secret the original did not have: 422"
like "$(echo "$out" | field error.message)" "had no secret K" "…naming it"
is "$(nruns)" "$BEFORE" "no refused request left a run"

# asynchronous, and not_replayable over the API
api POST /projects/p/runs "$AU" '{"argv":["sh","-c","echo ${#T} > t.txt"],"secrets":[{"name":"T","value":"abcdef"}],"wait":true}'
SEC=$(echo "$out" | field id)
api POST "/runs/$SEC/replay" "$AU" '{"wait":true}'
is "$status" 200 "a replay without the secret answers its record"
is "$(echo "$out" | field verdict.result)" not_replayable "…not_replayable"
like "$(echo "$out" | field verdict.reason)" "secret T, not supplied" "…with the reason"
api POST "/runs/$SEC/replay" "$AU" '{"secrets":[{"name":"T","value":"abcdef"}]}'
is "$status" 202 "without wait: 202"
RID=$(echo "$out" | field id)
is "$(echo "$out" | field replay_of)" "$SEC" "…naming the run it replays"
for _ in $(seq 200); do api GET "/runs/$RID" "$AU"; [ "$(echo "$out" | field state)" = ended ] && break; sleep 0.05; done
is "$(echo "$out" | field verdict.result)" identical "GET /runs/ID has the verdict once it ends"
is "$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["verdict"]["secrets"])')" \
   "[{'as': 'env', 'name': 'T', 'same': True}]" "…and that the secret's value was the original's"

# the ledger: every replay in the original's group
api GET "/audit?group=$GROUP" "$RV"
is "$(echo "$out" | python3 -c 'import json,sys
print(" ".join(e["data"].get("verdict", {}).get("result", "original") for e in json.load(sys.stdin) if e["kind"] == "run"))')" \
   "original identical" "GET /audit?group= shows the original and its replay"

# the CLI through the daemon prints what it prints locally
export AIRLOCK_URL="$URL" AIRLOCK_TOKEN="$AU"
run "$AL" replay "$ORIG"
is "$rc" 0 "airlock --server replay: exit 0 for identical"
like "$out" "^replay r[0-9a-f]{13} of $ORIG: identical" "…the same verdict line"
run "$AL" replay "$SEC"
is "$rc" 21 "…exit 21 for not_replayable"
run "$AL" replay "$SEC" --secret T=abcdefgh
is "$rc" 20 "…exit 20 for divergent"
like "$out" "t.txt: content differs" "…naming the file"
run "$AL" replay r0000000000000
is "$rc" 3 "…and 3 for a missing run"
AIRLOCK_TOKEN="$NGR" run "$AL" replay "$ORIG"
is "$rc" 3 "…as for a run the principal may not see"
unset AIRLOCK_URL AIRLOCK_TOKEN
serve_stop
run "$AL" fsck
is "$rc" 0 "fsck is clean"
done_testing
