#!/bin/bash
# airlock serve: the HTTP API driven with curl and with the CLI (--server):
# authentication (missing, malformed, expired, revoked tokens), the role
# matrix, every route's success and error paths, body caps, runs (wait,
# async, status, output, cancel), conflicts, and the CLI's parity with the
# embedded home.  Everything but the runs needs no sandbox and runs
# everywhere; the runs need user namespaces (a failure under .ci/run).
. "$(dirname "$0")/../lib.sh"
SANDBOX=; have_userns && SANDBOX=1
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S/d"; echo one > "$S/a.txt"; echo two > "$S/d/b.txt"
"$AL" project create p --from "$S" >/dev/null
"$AL" project create other >/dev/null
HEAD0=$("$AL" project head p)

"$AL" admin principal create adm --role admin >/dev/null
"$AL" admin principal create au --role author >/dev/null
"$AL" admin principal create rv --role reviewer >/dev/null
"$AL" admin principal create ag --role agent --project p >/dev/null
"$AL" admin principal create ag2 --role agent >/dev/null
"$AL" admin principal create ag3 --role agent --project p >/dev/null
tok() { "$AL" admin token create "$@" 2>/dev/null; }
ADM=$(tok adm); AU=$(tok au); RV=$(tok rv); AG=$(tok ag); AG2=$(tok ag2); AG3=$(tok ag3)
like "$ADM" '^alk_[0-9a-f]{64}$' "a token is alk_ and 64 hex digits"
like "$("$AL" admin principal list)" "^adm admin -
ag agent p
ag2 agent -" "admin principal list: name roles projects"
run "$AL" admin principal create bad --role root
is "$rc" 2 "an unknown role is a usage error"
run "$AL" admin token create nobody
is "$rc" 3 "a token for no principal: exit 3"
ok "the home keeps no token's text" -- bash -c "! grep -rqF '${ADM#alk_}' '$AIRLOCK_HOME'"
serve_start --body-max 4K --upload-max 64K --conn-timeout 2
ok "the daemon prints the URL it listens on" -- test -n "$URL"

# ---- public routes, authentication -------------------------------------------
api GET /health ""
is "$status" 200 "health needs no token"
api GET /openapi.json ""
is "$status" 200 "the OpenAPI document needs no token"
ok "…and it is docs/openapi.json, byte for byte (make check-api validates it and checks its routes against the daemon's)" -- cmp "$T/.api" "$SRC_ROOT/docs/openapi.json"
api GET /projects ""
is "$status" 401 "no token: 401"
NOTOKEN=$out
like "$out" '^\{"error":\{"code":"Unauthorized","message":"invalid, expired or revoked token"\}\}$' "…as a JSON error"
api GET /projects "alk_0000000000000000000000000000000000000000000000000000000000000000"
is "$status:$out" "401:$NOTOKEN" "an unknown token: the same answer"
api GET /projects "garbage"
is "$status:$out" "401:$NOTOKEN" "a malformed token: the same answer"
# token expiry with an injected clock (AIRLOCK_NOW), not by sleeping
NOW=$(date +%s)
SHORT=$(AIRLOCK_NOW=$NOW tok au --ttl 60)
api GET /whoami "$SHORT"
is "$status" 200 "a fresh token with a lifetime works"
MAIN_URL=$URL; MAIN_PID=$SERVE_PID
AIRLOCK_NOW=$((NOW + 59)) serve_start
api GET /whoami "$SHORT"
is "$status" 200 "…until the last second of its lifetime"
serve_stop
AIRLOCK_NOW=$((NOW + 60)) serve_start
api GET /whoami "$SHORT"
is "$status:$out" "401:$NOTOKEN" "an expired token: the same answer"
serve_stop
URL=$MAIN_URL; SERVE_PID=$MAIN_PID
REV=$("$AL" admin token create au 2>"$T/revid")
REVID=$(sed -n 's/.*: token \(t[0-9a-f]*\) for .*/\1/p' "$T/revid")
run "$AL" admin token revoke "$REVID"
is "$rc" 0 "admin token revoke"
api GET /whoami "$REV"
is "$status:$out" "401:$NOTOKEN" "a revoked token: the same answer"
api GET /whoami "$AG"
is "$(echo "$out" | field roles)" '["agent"]' "whoami: the principal's roles"
is "$(echo "$out" | field projects)" '["p"]' "…and its granted projects"
ok "the request log names principals and routes, never a token" -- bash -c "grep -q 'default/ag GET /api/whoami 200' '$T/serve.log' && ! grep -qF '${AG#alk_}' '$T/serve.log' && ! grep -q 'alk_' '$T/serve.log'"

# a request thread keeps its tenant's store open for its next request; an
# idle daemon closes it (its SQLite caches, zstd contexts and buffers go
# back) once it has gone unused for a second
api GET /projects/p "$AG"
is "$status" 200 "a request that opens the tenant's store"
kept() { find "/proc/$SERVE_PID/fd" -lname '*/tenants/*/meta.db' 2>/dev/null | wc -l; }
for _ in $(seq 50); do [ "$(kept)" = 0 ] && break; sleep 0.1; done
is "$(kept)" 0 "…whose store the idle daemon closes within seconds"
api GET /projects/p "$AG"
is "$status" 200 "…and opens again for the next request"

# after a load the request threads' own malloc caches hold the heap's
# pages: a pool idle for a second (no connection open) is replaced by a
# new one on the same socket, and the old one's threads end.  A daemon of
# its own: this one's 2 s connection timeout would close the idle
# connection below.
workers() { for t in /proc/"$SERVE_PID"/task/*; do [ "$(cat "$t/comm" 2>/dev/null)" = MHD-worker ] && basename "$t"; done | sort; }
renewed() { # SET: waits until none of SET's threads is left, and 8 are
	for _ in $(seq 60); do
		[ -z "$(comm -12 <(echo "$1") <(workers))" ] && [ "$(workers | wc -l)" = 8 ] && return 0
		sleep 0.1
	done
	return 1
}
MAIN_URL=$URL; MAIN_PID=$SERVE_PID
serve_start
api GET /projects/p "$AG"
W0=$(workers)
is "$(echo "$W0" | wc -l)" 8 "the daemon's request pool: 8 threads"
renewed "$W0" || true
is "$(comm -12 <(echo "$W0") <(workers) | wc -l)" 0 "…replaced once it has been idle: none of its threads is left"
is "$(workers | wc -l)" 8 "…by a pool of 8 new ones"
api GET /projects/p "$AG"
is "$status" 200 "…which answers on the same address"
# renewed again after that answer (and the old pool gone): from then on
# this pool has answered nothing, so it stays until it does
ok "…and again after each answer and an idle second" -- renewed "$(workers)"
# requests spaced by more than the idle second: each is answered by a
# new pool, which is renewed after it
spaced=
for _ in 1 2 3; do
	W=$(workers); api GET /projects/p "$AG"; spaced="$spaced$status "
	renewed "$W" && spaced="${spaced}renewed "
done
is "$spaced" "200 renewed 200 renewed 200 renewed " "requests across renewals are all answered, and each pool is renewed after its answer"
# a connection open (kept alive, idle) keeps its pool: it is never cut
python3 - "$URL" "$AG" >"$T/keep.out" 2>&1 <<'PY' &
import http.client, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
h = {"Authorization": "Bearer " + sys.argv[2]}
c.request("GET", "/api/projects/p", headers=h); r = c.getresponse(); r.read()
print("first", r.status, flush=True)
time.sleep(3)
c.request("GET", "/api/projects/p", headers=h); r = c.getresponse(); r.read()
print("second", r.status, flush=True)
PY
KEEP=$!
for _ in $(seq 50); do grep -q first "$T/keep.out" && break; sleep 0.1; done
W1=$(workers)
sleep 2.5
W2=$(workers)
wait "$KEEP"
is "$(cat "$T/keep.out")" "first 200
second 200" "a kept-alive connection idle for 3 s is answered again on the same connection"
is "$W2" "$W1" "…and its pool was kept while it was open"
serve_stop
URL=$MAIN_URL; SERVE_PID=$MAIN_PID

# ---- the role matrix ---------------------------------------------------------
# expect TOKEN METHOD PATH STATUS [BODY] WHO
expect() {
	local t=$1 m=$2 p=$3 want=$4; shift 4
	local who=${*: -1}
	if [ $# -gt 1 ]; then api "$m" "$p" "$t" "$1"; else api "$m" "$p" "$t"; fi
	is "$status" "$want" "$m $p as $who: $want"
}
for who in ADM AU RV AG; do
	api GET /projects "${!who}"
	is "$status" 200 "GET /projects as $who: 200"
done
api GET /projects "$AG"
is "$(echo "$out" | python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin)))')" "p" "an agent lists only its granted projects"
api GET /projects "$AG2"
is "$out" "[]" "an agent without grants lists none"
api GET /projects/other "$AG"
is "$status" 404 "an agent's ungranted project is 404"
UNGRANTED=$out
api GET /projects/nosuch "$AG"
is "$status:$out" "404:$(echo "$UNGRANTED" | sed 's/other/nosuch/')" "…exactly like a project that does not exist"
expect "$AU" POST /projects 201 '{"name":"q"}' author
expect "$RV" POST /projects 403 '{"name":"q2"}' reviewer
expect "$AG" POST /projects 403 '{"name":"q2"}' agent
expect "$ADM" POST /projects 403 '{"name":"q2"}' admin
expect "$AU" POST /projects 409 '{"name":"q"}' author
expect "$AU" POST /projects 422 '{"name":"../x"}' author
expect "$RV" GET /projects/p/log 200 reviewer
expect "$AG" GET /projects/p/log 403 agent
expect "$AG" GET /projects/p/drafts 403 agent
expect "$RV" GET /audit 200 reviewer
expect "$ADM" GET /audit 200 admin
expect "$AU" GET /audit 403 author
expect "$AG" GET /audit 403 agent
expect "$AU" GET /principals 403 author
expect "$ADM" GET /principals 200 admin
expect "$RV" POST /projects/p/runs 403 '{"argv":["true"]}' reviewer
expect "$ADM" POST /projects/p/runs 403 '{"argv":["true"]}' admin
expect "$AG2" POST /projects/p/runs 404 '{"argv":["true"]}' "an ungranted agent"
api POST /projects/p/runs "$AG2" '{"argv":["true"]}'
like "$out" '"NotFound"' "…the same NotFound"
api GET /projects "$RV"
like "$(echo "$out" | python3 -c 'import json,sys; print(" ".join(sorted(p["name"] for p in json.load(sys.stdin))))')" "^other p q$" "nothing the refused requests asked was created"
api GET /nosuch "$AU"
is "$status" 404 "an unknown route: 404"
like "$out" '"code":"NotFound"' "…as a JSON error"
api DELETE /projects "$AU"
is "$status" 405 "a known route with another method: 405"

# ---- malformed and oversized bodies --------------------------------------------
LEDGER0=$("$AL" audit --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
STATE0=$(store_state)
expect "$AG" POST /projects/p/runs 422 '{"argv":["true"' "agent, a truncated body"
like "$out" '"code":"InvalidInput"' "…InvalidInput"
expect "$AG" POST /projects/p/runs 422 '[1,2]' "agent, not an object"
expect "$AG" POST /projects/p/runs 422 '{"argv":["true"],"memroy":1}' "agent, an unknown field"
like "$out" "unknown field 'memroy'" "…named"
expect "$AG" POST /projects/p/runs 422 '{"argv":[]}' "agent, an empty command"
expect "$AG" POST /projects/p/runs 422 '{"argv":["true"],"timeout":-1}' "agent, a negative timeout"
expect "$AG" POST /projects/p/runs 422 '{"argv":["true"],"argv":["x"]}' "agent, a duplicate key"
expect "$AG" POST /projects/p/runs 422 '{"argv":["true"],"network":{"mode":"egress","allow":["a b"]}}' "agent, a malformed egress allow entry"
expect "$AG" POST /projects/p/runs 403 '{"argv":["true"],"network":{"mode":"egress","allow":["example.com"]}}' "agent, egress the policy does not allow"
BIG=$(python3 -c 'print("{\"argv\":[\"true\"],\"env\":{\"X\":\"" + "a"*8000 + "\"}}")')
expect "$AG" POST /projects/p/runs 413 "$BIG" "agent, a body over --body-max"
like "$out" '"code":"LimitExceeded"' "…LimitExceeded"
status=$(python3 -c 'import sys; sys.stdout.write("{\"argv\":[\"true\"],\"env\":{\"X\":\"" + "a"*8000 + "\"}}")' |
	curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AG" -H 'Transfer-Encoding: chunked' --data-binary @- "$URL/api/projects/p/runs")
is "$status" 413 "a chunked body over the cap (no Content-Length) is refused too"
is "$("$AL" audit --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" "$LEDGER0" "refused requests wrote no ledger entry"
is "$(store_state)" "$STATE0" "…and stored nothing"

# ---- runs ----------------------------------------------------------------------
if [ -n "$SANDBOX" ]; then
api POST /projects/p/runs "$AG" '{"argv":["sh","-c","echo changed >> a.txt; echo hello; echo oops >&2; exit 3"],"wait":true}'
is "$status" 200 "a run with wait answers when it has ended"
is "$(echo "$out" | field exit_code)" 3 "…with the command's exit status"
is "$(echo "$out" | field stdout.text)" hello "…its stdout"
is "$(echo "$out" | field principal)" ag "…and the principal that started it"
RUN=$(echo "$out" | field id)
is "$("$AL" project head p)" "$HEAD0" "the live head did not move"
api GET "/runs/$RUN" "$AG"
is "$(echo "$out" | field state)" ended "GET /runs/ID: ended"
api GET "/runs/$RUN" "$AG2"
is "$status" 404 "another agent cannot see the run"
api GET "/runs/$RUN" "$RV"
is "$status" 200 "a reviewer can"
api GET "/runs/$RUN/output?stream=stderr" "$AG"
is "$status:$out" "200:oops" "GET /runs/ID/output: one stream, as text"
api GET "/runs/$RUN/output?stream=stdin" "$AG"
is "$status" 422 "…an unknown stream is refused"
api GET /projects/p/runs "$AG3"
is "$out" "[]" "an agent lists only its own runs (another agent of the project sees none)"
api GET "/runs/$RUN" "$AG3"
is "$status" 404 "…and cannot read another agent's run"
api GET /runs/rffffffffffff0 "$RV"
is "$status" 404 "an unknown run: 404"

# output while a run lasts, from an offset
api POST /projects/p/runs "$AG" '{"argv":["sh","-c","echo early; sleep 2; echo late"]}'
FOLLOW=$(echo "$out" | field id)
for i in $(seq 50); do
	state=$(curl -s -D "$T/.hdr" -o "$T/.api" -H "Authorization: Bearer $AG" "$URL/api/runs/$FOLLOW/output" && grep -i '^x-airlock-run-state' "$T/.hdr" | tr -d '\r' | cut -d' ' -f2)
	[ "$(cat "$T/.api")" = early ] && break; sleep 0.1
done
is "$state:$(cat "$T/.api")" "running:early" "GET /runs/ID/output while the run lasts: what it wrote so far"
for i in $(seq 60); do api GET "/runs/$FOLLOW" "$AG"; [ "$(echo "$out" | field state)" = ended ] && break; sleep 0.1; done
api GET "/runs/$FOLLOW/output?offset=6" "$AG"
is "$out" "late" "…and after its end, from an offset"
api GET "/runs/$FOLLOW/output?offset=-1" "$AG"
is "$status" 422 "…a bad offset is refused"

api POST /projects/p/runs "$AG" '{"argv":["sh","-c","echo started > s; sleep 30"]}'
is "$status" 202 "without wait, a run answers 202 at once"
SLOW=$(echo "$out" | field id)
api GET "/runs/$SLOW" "$AG"
is "$(echo "$out" | field state)" running "…and is running"
api GET /health ""
is "$status" 200 "a running run blocks no other request"
api POST "/runs/$SLOW/cancel" "$AG2"
is "$status" 404 "another agent cannot cancel it (404)"
api POST "/runs/$SLOW/cancel" "$RV"
is "$status" 403 "a reviewer cannot cancel it (403)"
api POST "/runs/$SLOW/cancel" "$AG"
is "$status" 202 "its principal cancels it"
for i in $(seq 100); do api GET "/runs/$SLOW" "$AG"; [ "$(echo "$out" | field state)" = ended ] && break; sleep 0.1; done
is "$(echo "$out" | field state)" ended "the cancelled run ends"
is "$(echo "$out" | field cancelled)" True "…recorded as cancelled"
api POST "/runs/$SLOW/cancel" "$AG"
is "$status" 409 "cancelling an ended run: 409 InvalidState"
fi

# ---- review, apply, conflicts ----------------------------------------------------
# (a bundle made from the head before the apply below, for the conflict after it)
mkdir -p "$T/w"; "$AL" snapshot export "$HEAD0" "$T/w/x" >/dev/null; echo theirs > "$T/w/x/a.txt"
D=$("$AL" draft create p --from "$T/w/x")
"$AL" bundle export "$D" "$T/b.tar.zst" >/dev/null
if [ -n "$SANDBOX" ]; then DR=$RUN; BY="by run id"; else
	# without a sandbox, the same change as a draft an author made
	mkdir -p "$T/w2"; "$AL" snapshot export "$HEAD0" "$T/w2/x" >/dev/null; echo changed >> "$T/w2/x/a.txt"
	DR=$("$AL" draft create p --from "$T/w2/x"); BY="by draft id"
fi
api GET "/drafts/$DR/review" "$RV"
is "$(echo "$out" | python3 -c 'import json,sys; print(" ".join(f["op"]+":"+f["path"] for f in json.load(sys.stdin)["files"]))')" "M:a.txt" "review $BY"
api GET "/drafts/$DR" "$RV"
is "$(echo "$out" | field state)" open "GET /drafts/ID"
expect "$AU" POST "/drafts/$DR/apply" 403 '{"mode":"accept_all"}' author
expect "$RV" POST "/drafts/$DR/apply" 422 '{"mode":"accept_selected"}' "reviewer, accept_selected without paths"
expect "$RV" POST "/drafts/$DR/apply" 422 '{"mode":"accept_selected","paths":["nope"]}' "reviewer, a path the draft does not change"
is "$("$AL" project head p)" "$HEAD0" "refused applies moved nothing"
expect "$RV" POST "/drafts/$DR/apply" 200 '{"mode":"accept_all"}' reviewer
HEAD1=$(echo "$out" | field head)
is "$("$AL" project head p)" "$HEAD1" "apply moved the head to the answer's head"
expect "$RV" POST "/drafts/$DR/apply" 409 '{"mode":"accept_all"}' "reviewer, again"
like "$out" '"code":"InvalidState"' "…InvalidState"

# a bundle made from the old head that touches what the head changed: strict conflict
code=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" --data-binary @"$T/b.tar.zst" \
	"$URL/api/projects/p/commits?base=$HEAD0")
is "$code" 409 "a stale bundle commit: 409"
is "$(field error.code < "$T/.api")" VolumeConflictError "…VolumeConflictError"
is "$(field error.head < "$T/.api")" "$HEAD1" "…with the current head"
is "$(field error.paths < "$T/.api")" '["a.txt"]' "…and the overlapping paths"
code=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" --data-binary @"$T/b.tar.zst" \
	"$URL/api/projects/p/commits?base=$HEAD0&strategy=conflict_copy")
is "$code" 201 "with conflict_copy the commit lands"
like "$(field conflicts < "$T/.api")" '"copy_path": "a.conflict-[0-9a-f]{8}.txt"' "…the incoming version beside ours"
head -c 3000 /dev/urandom > "$T/junk"
code=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" --data-binary @"$T/junk" \
	"$URL/api/projects/p/commits?base=$HEAD0")
like "$code" '^4' "a malformed bundle is refused"
head -c 100000 /dev/urandom > "$T/huge"
code=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" --data-binary @"$T/huge" \
	"$URL/api/projects/p/commits?base=$HEAD0")
is "$code" 413 "an upload over --upload-max is refused"
ok "no upload is left behind in tmp/" -- bash -c "[ -z \"\$(ls -A '$AIRLOCK_HOME/tenants/default/tmp')\" ]"

# ---- snapshots, blobs, images, audit --------------------------------------------
api GET "/snapshots/$HEAD0" "$RV"
is "$(echo "$out" | python3 -c 'import json,sys; print(" ".join(e["path"] for e in json.load(sys.stdin)["entries"]))')" "a.txt d d/b.txt" "GET /snapshots/ID lists the entries"
BLOB=$(echo "$out" | python3 -c 'import json,sys; print([e for e in json.load(sys.stdin)["entries"] if e["path"]=="a.txt"][0]["sha256"])')
api GET "/blobs/$BLOB" "$RV"
is "$status:$out" "200:one" "GET /blobs/ID: the bytes"
api GET "/blobs/sha256:$(printf '%064d' 0)" "$RV"
is "$status" 404 "an unknown blob: 404"
api GET "/blobs/nothex" "$RV"
is "$status" 422 "a malformed id: 422"
# (a run imports the default image on first use; without a sandbox, by hand)
[ -n "$SANDBOX" ] || "$AL" image import "$AIRLOCK_BUILD/image/busybox" --name busybox >/dev/null
api GET /images "$AG"
like "$out" '"name":"busybox"' "GET /images"
mkdir -p "$T/img/bin"; echo '#!/bin/sh' > "$T/img/bin/hello"; tar -C "$T/img" -czf "$T/img.tgz" .
code=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" --data-binary @"$T/img.tgz" "$URL/api/images?name=tiny")
is "$code" 201 "POST /images: a tarball becomes an image"
is "$(field name < "$T/.api")" tiny "…under its name"
code=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AG" --data-binary @"$T/img.tgz" "$URL/api/images")
is "$code" 403 "an agent cannot import images"
code=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" --data-binary @"$T/junk" "$URL/api/images")
like "$code" '^4' "garbage is not an image"
ok "…and leaves nothing in tmp/" -- bash -c "[ -z \"\$(ls -A '$AIRLOCK_HOME/tenants/default/tmp')\" ]"
AIRLOCK_TOKEN=$AU run "$AL" --server "$URL" image import "$T/img.tgz" --name tiny2 --json
is "$rc:$(echo "$out" | field name)" "0:tiny2" "airlock --server image import TARBALL uploads it"
AIRLOCK_TOKEN=$AU run "$AL" --server "$URL" image import "$T/img"
is "$rc" 2 "…a directory needs the local home"
if [ -n "$SANDBOX" ]; then
GROUP=$("$AL" run show "$RUN" --json | field group)
api GET "/audit?group=$GROUP" "$RV"
is "$(echo "$out" | python3 -c 'import json,sys; print(" ".join(e["kind"] for e in json.load(sys.stdin)))')" "draft_create commit run apply" "audit by group: the run, its draft and its apply"
SEQ=$(echo "$out" | python3 -c 'import json,sys; print([e["seq"] for e in json.load(sys.stdin) if e["kind"]=="run"][0])')
api GET "/audit/$SEQ" "$RV"
is "$(echo "$out" | field included)" True "GET /audit/SEQ with a valid inclusion proof"
is "$(echo "$out" | field content.stdout)" hello "…and the run's output"
fi
api GET /audit/99999 "$RV"
is "$status" 404 "an unknown entry: 404"
api GET /audit/checkpoint "$RV"
like "$(echo "$out" | field line)" "^airlock" "GET /audit/checkpoint"
curl -s -H "Authorization: Bearer $RV" -o "$T/export.ledger" "$URL/api/audit/export"
ok "GET /audit/export verifies offline" -- "$AL" audit verify "$T/export.ledger"

# ---- admin over the API ------------------------------------------------------------
expect "$ADM" POST /principals 201 '{"name":"bot","roles":["agent"],"projects":["p"]}' admin
expect "$ADM" POST /principals 409 '{"name":"bot","roles":["agent"]}' "admin, an existing name"
expect "$ADM" POST /principals 422 '{"name":"x","roles":["root"]}' "admin, an unknown role"
expect "$ADM" POST /principals/bot/tokens 201 '{"ttl":3600}' admin
BOT=$(echo "$out" | field token); BOTID=$(echo "$out" | field id)
api GET /whoami "$BOT"
is "$(echo "$out" | field name)" bot "the new token works"
api GET /tokens "$ADM"
ok "token listings never carry a token's text" -- bash -c "! grep -q alk_ '$T/.api'"
expect "$ADM" DELETE "/tokens/$BOTID" 200 admin
api GET /whoami "$BOT"
is "$status" 401 "…and after revoke it does not"
expect "$ADM" POST /principals/nobody/tokens 404 '{}' "admin, no such principal"
expect "$ADM" POST /principals/bot/grants 200 '{"name":"other"}' "admin, a grant"

# ---- answers no other part of this test asks for (done_testing holds every
# answer to docs/openapi.json: these put more of its schemas to the test) -----------
expect "$RV" GET /projects/p 200 reviewer
is "$(echo "$out" | field name)" p "GET /projects/NAME: the project"
expect "$RV" GET /projects/p/drafts 200 reviewer
is "$(echo "$out" | python3 -c 'import json,sys; print({d["project"] for d in json.load(sys.stdin)})')" "{'p'}" "GET /projects/NAME/drafts: the project's drafts"
expect "$RV" GET "/drafts/$DR/review?stat=1" 200 "reviewer, stat"
is "$(echo "$out" | python3 -c 'import json,sys; print(sum("unified" in f for f in json.load(sys.stdin)["files"]))')" 0 "…with no diff text"
expect "$AG" GET "/drafts/$DR" 403 agent
expect "$AU" GET /audit/checkpoint 403 author
expect "$AU" GET /tokens 403 author
expect "$RV" GET "/snapshots/nothex" 422 "reviewer, a malformed id"
expect "$RV" GET "/audit?since=yesterday" 422 "reviewer, since not a number"
expect "$RV" GET "/audit/export?from=x" 422 "reviewer, from not a number"
expect "$ADM" POST /principals/bot/tokens 422 '{"ttl":-1}' "admin, a negative lifetime"
api GET "/tokens?principal=bot" "$ADM"
is "$(echo "$out" | python3 -c 'import json,sys; print(sorted({t["principal"] for t in json.load(sys.stdin)}))')" "['bot']" "GET /tokens?principal=P: that principal's only"
tar -C "$T/w/x" -cf "$T/x.tar" .
code=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" -H 'Content-Type: application/x-tar' --data-binary @"$T/x.tar" "$URL/api/projects/p")
is "$code:$(field error.code < "$T/.api")" "409:AlreadyExists" "POST /projects/NAME (a tree) for a name taken: 409"

# ---- the CLI as a client: the same output ---------------------------------------
export AIRLOCK_TOKEN=$RV
same() { # same ARGS...: the embedded and the remote CLI print the same, and exit the same
	local a b ra rb
	a=$("$AL" "$@" 2>&1); ra=$?
	b=$("$AL" --server "$URL" "$@" 2>&1); rb=$?
	is "$rb:$b" "$ra:$a" "airlock $* (--server) prints what the embedded one does"
}
PARITY=("project list" "project head p" "project log p" "draft list p" "runs p" "image list" "audit checkpoint"
	"review $DR" "review $DR --stat")
[ -n "$SANDBOX" ] && PARITY+=("run show $RUN" "audit --group $GROUP" "audit show $SEQ")
for args in "${PARITY[@]}"; do
	# shellcheck disable=SC2086
	same $args
	# shellcheck disable=SC2086
	same $args --json
done
same project head nosuch
same review dnosuch000000a --json
run "$AL" --server "$URL" fsck
is "$rc" 2 "a verb that needs the local home refuses --server (exit 2)"
if [ -n "$SANDBOX" ]; then
AIRLOCK_TOKEN=$AG run "$AL" --server "$URL" run p -- sh -c 'echo from-cli; echo x > cli.txt; exit 4'
is "$rc:$out" "4:from-cli" "airlock --server run: the command's output and exit status"
like "$err" "run r[0-9a-f]{13}: 1 change \(1 added\); exit status 4" "…and the same summary"
CLIRUN=$(printf '%s' "$err" | sed -n 's/^run \(r[0-9a-f]*\):.*/\1/p')
AIRLOCK_TOKEN=$AG "$AL" --server "$URL" run p -- sh -c 'echo first; sleep 2; echo second' > "$T/live.out" 2>"$T/live.err" &
LIVE=$!
for i in $(seq 30); do [ -s "$T/live.out" ] && break; sleep 0.1; done
is "$(cat "$T/live.out"):$(kill -0 $LIVE 2>/dev/null && echo still-running)" "first:still-running" "airlock --server run streams the output while the run lasts"
wait $LIVE
is "$(cat "$T/live.out")" "first
second" "…and all of it by the end"
AIRLOCK_TOKEN=$AG timeout -s INT 1.5 "$AL" --server "$URL" run p -- sh -c 'echo going; sleep 30' >/dev/null 2>"$T/int.err"
like "$(cat "$T/int.err")" "; cancelled; exit status 137" "Ctrl-C cancels the run on the daemon and reports it"
AIRLOCK_TOKEN=$RV run "$AL" --server "$URL" apply "$CLIRUN" --accept cli.txt
is "$rc" 0 "airlock --server apply --accept"
AIRLOCK_TOKEN=$RV run "$AL" --server "$URL" apply "$CLIRUN" --accept-all
is "$rc" 9 "…a second apply: exit 9 as embedded"
fi
AIRLOCK_TOKEN=$AU run "$AL" --server "$URL" project create viacli --json
is "$rc:$(echo "$out" | field name)" "0:viacli" "airlock --server project create"
is "$(echo "$out" | field head)" "$("$AL" project head viacli)" "…the head the embedded home shows"
AIRLOCK_TOKEN=$AU run "$AL" --server "$URL" project create viacli
is "$rc" 7 "…again: exit 7 (AlreadyExists) as embedded"
mkdir -p "$T/tree/sub/empty"; echo hi > "$T/tree/a.txt"; printf x > "$T/tree/sub/run.sh"; chmod 755 "$T/tree/sub/run.sh"
ln -s ../a.txt "$T/tree/sub/link"
AIRLOCK_TOKEN=$AU run "$AL" --server "$URL" project create fromdir --from "$T/tree"
is "$rc:$out" "0:$("$AL" snapshot import "$T/tree")" "airlock --server project create --from DIR: the head is DIR's snapshot, as a local import names it"
TH=$out
echo more >> "$T/tree/a.txt"; rm -r "$T/tree/sub/empty"
AIRLOCK_TOKEN=$AU run "$AL" --server "$URL" commit fromdir "$T/tree" --base "$TH" -m "edit over the API"
is "$rc:$out" "0:$("$AL" snapshot import "$T/tree")" "airlock --server commit DIR (edits, a deleted empty directory)"
AIRLOCK_TOKEN=$AU run "$AL" --server "$URL" commit fromdir "$T/tree" --base "$TH" --json
is "$rc:$(echo "$out" | field error.code)" "5:VolumeConflictError" "…a stale base: exit 5, the conflict document"
mkfifo "$T/tree/fifo"
AIRLOCK_TOKEN=$AU run "$AL" --server "$URL" commit fromdir "$T/tree" --base "$("$AL" project head fromdir)"
is "$rc" 6 "…a FIFO in DIR is refused as the local import refuses it"
rm "$T/tree/fifo"
is "$("$AL" project log fromdir --json | python3 -c 'import json,sys; print(" ".join(c["author"]+":"+c["message"] for c in json.load(sys.stdin)))')" \
   "au:create project au:edit over the API" "the log names the principal as author (create --from is one commit, as locally)"
AIRLOCK_TOKEN=$RV run "$AL" --server "$URL" commit fromdir "$T/tree" --base "$TH"
is "$rc" 11 "a reviewer cannot commit (exit 11)"
AIRLOCK_TOKEN=garbage run "$AL" --server "$URL" project list
is "$rc" 10 "a bad token: exit 10"
AIRLOCK_TOKEN=$AG run "$AL" --server "$URL" audit
is "$rc" 11 "a role that may not: exit 11"
AIRLOCK_TOKEN=$ADM run "$AL" --server "$URL" admin token create au --json
like "$(echo "$out" | field token)" '^alk_' "admin token create --server"
# the HTTP libraries are loaded on first use: a broken one is a clear error
mkdir -p "$T/fakelib"; echo 'int airlock_not_curl;' > "$T/fakelib/empty.c"
cc -shared -fPIC -o "$T/fakelib/libcurl.so.4" "$T/fakelib/empty.c" && cp "$T/fakelib/libcurl.so.4" "$T/fakelib/libmicrohttpd.so.12"
LD_LIBRARY_PATH="$T/fakelib" AIRLOCK_TOKEN=$RV run "$AL" --server "$URL" project list
is "$rc" 1 "a libcurl without its functions: exit 1"
like "$err" "libcurl.so.4 has no curl_global_init" "…naming the library and what is missing"
LD_LIBRARY_PATH="$T/fakelib" run "$AL" serve --listen 127.0.0.1:0
is "$rc" 1 "…the same for serve and libmicrohttpd"
like "$err" "libmicrohttpd.so.12 has no MHD_start_daemon" "…named"
ok "commands that need neither do not load them" -- bash -c "LD_LIBRARY_PATH='$T/fakelib' '$AL' project list >/dev/null && ! grep -q -e libcurl -e microhttpd <(LD_LIBRARY_PATH='$T/fakelib' ldd '$AL')"
unset AIRLOCK_TOKEN
run "$AL" --server "$URL" project list
is "$rc" 10 "no AIRLOCK_TOKEN: exit 10, said so"
like "$err" "AIRLOCK_TOKEN" "…naming the variable"

# ---- slow clients -------------------------------------------------------------------
# (the clients hold their end far longer than the daemon's --conn-timeout 2:
# the daemon's side must close first; the waits poll with a deadline)
conns() { ss -tn state established "( sport = :${URL##*:} )" | tail -n +2 | wc -l; }
STALLED=()
for i in $(seq 20); do (exec 3<>/dev/tcp/127.0.0.1/"${URL##*:}"; printf 'GET /api/health HTTP/1.1\r\nHost: x\r\n' >&3; exec sleep 60) & STALLED+=($!); done
for i in $(seq 100); do [ "$(conns)" -ge 20 ] && break; sleep 0.05; done
api GET /projects "$RV"
is "$status" 200 "20 stalled connections do not block other clients"
for i in $(seq 300); do [ "$(conns)" -eq 0 ] && break; sleep 0.05; done
is "$(conns)" 0 "stalled connections are closed after --conn-timeout (while their clients still hold them)"
kill "${STALLED[@]}" 2>/dev/null; wait "${STALLED[@]}" 2>/dev/null

serve_stop
ok "fsck is clean after all of it" -- "$AL" fsck
ok "the ledger verifies" -- "$AL" audit verify
done_testing
