#!/bin/bash
# Admin acts are in the ledger (issue 12, item 5): tenant and principal
# creation, roles, grants, token create and revoke (the id, never the
# token), image imports, policy changes of the tenant and of the
# deployment, and refused requests (403), bounded per window with the
# excess counted in one summary entry.
. "$(dirname "$0")/../lib.sh"
need_userns
"$AL" init >/dev/null
export AIRLOCK_AUTHOR=operator-alice
entries() { "$AL" ${2:+--tenant "$2"} audit --kind "$1" --json; }
count() { entries "$@" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
jq_() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

"$AL" admin tenant create acme >/dev/null
is "$(entries tenant_create acme | jq_ '(d[0]["data"]["tenant"], d[0]["actor"])')" "('acme', 'operator-alice')" "tenant creation is the new tenant's first ledger entry, with who did it"
is "$(count tenant_create)" 0 "…in that tenant's ledger only"
run "$AL" admin tenant create acme
is "$rc:$(count tenant_create acme)" "7:1" "creating it again is refused (exit 7), its ledger unchanged"
like "$err" "tenant acme already exists" "…saying so"

"$AL" project create p >/dev/null
"$AL" admin principal create ag --role agent --project p >/dev/null
is "$(entries principal_create | jq_ '(d[0]["data"]["principal"], d[0]["data"]["roles"], d[0]["actor"])')" "('ag', 'agent', 'operator-alice')" "principal creation: name, roles, actor"
is "$(entries grant | jq_ '(d[0]["data"]["principal"], d[0]["data"]["project"])')" "('ag', 'p')" "the grant that came with it"
"$AL" admin grant ag p >/dev/null
is "$(count grant)" 1 "granting what is granted changes and records nothing"
TOK=$("$AL" admin token create ag 2>/dev/null)
TID=$("$AL" admin token list --json | jq_ 'd[0]["id"]')
is "$(entries token_create | jq_ '(d[0]["data"]["token"], d[0]["data"]["principal"])')" "('$TID', 'ag')" "token creation names the token's id and principal"
ok "…never the token" -- sh -c "! '$AL' audit export '$T/x' >/dev/null 2>&1 || ! grep -qF '${TOK#alk_}' '$T/x'"
"$AL" admin token revoke "$TID" >/dev/null
is "$(entries token_revoke | jq_ '(d[0]["data"]["token"], d[0]["actor"])')" "('$TID', 'operator-alice')" "token revocation"
BEFORE=$(count token_revoke)
run "$AL" admin token revoke tffffffffffffff
is "$rc:$(count token_revoke)" "3:$BEFORE" "a refused revocation (no such token) records nothing"
run "$AL" admin principal create ag --role agent
is "$rc:$(count principal_create)" "7:1" "a refused creation (exists) records nothing"

mkdir -p "$T/img/bin"; cp "$AIRLOCK_BUILD/image/busybox/bin/busybox" "$T/img/bin/"
"$AL" image import "$T/img" --name tools >/dev/null
is "$(entries image_import | jq_ '(d[0]["data"]["name"], d[0]["actor"], d[0]["data"]["snapshot"][:7])')" "('tools', 'operator-alice', 'sha256:')" "an image import: name, snapshot, actor"
"$AL" admin policy set --deployment --max-pids 4096 >/dev/null
for t in default acme; do
	is "$(entries policy $t | jq_ '(d[-1]["data"]["scope"], d[-1]["data"]["after"]["ceilings"]["pids"])')" "('deployment', 4096)" "a deployment policy change is in tenant $t's ledger"
done

# over the API: the acting principal, and refusals
"$AL" admin principal create adm --role admin >/dev/null
ADM=$("$AL" admin token create adm 2>/dev/null)
AG=$("$AL" admin token create ag 2>/dev/null)
serve_start --refusal-window 3
api POST /principals "$ADM" '{"name":"bot","roles":["agent"],"projects":["p"]}'
is "$status" 201 "the tenant's admin creates a principal over the API"
is "$(entries principal_create | jq_ 'd[-1]["actor"]')" adm "…recorded with the admin as actor"
api GET /audit "$AG"
is "$status" 403 "an agent reading the audit is refused"
is "$(entries refused | jq_ '(d[0]["actor"], d[0]["data"]["route"], d[0]["data"]["status"])')" "('ag', 'audit', 403)" "…and the refusal is a ledger entry"
# a flood: at most 20 entries in a window, the rest counted
N0=$(count refused)
for i in $(seq 40); do curl -s -o /dev/null -H "Authorization: Bearer $AG" "$URL/api/audit"; done
N1=$(count refused)
ok "a flood of 40 refusals is bounded ($((N1 - N0)) entries, at most 40 over two windows)" -- test $((N1 - N0)) -le 40
# the next window's first refusal brings the summary of what was counted
for i in $(seq 100); do
	api GET /audit "$AG"
	entries refused | jq_ 'sum(e["data"].get("suppressed", 0) for e in d)' > "$T/supp"
	[ "$(cat "$T/supp")" -gt 0 ] && break
	sleep 0.1
done
TOTAL=$(entries refused | jq_ 'sum(1 for e in d if "route" in e["data"]) + sum(e["data"].get("suppressed", 0) for e in d)')
ok "…the excess is counted in a summary entry ($(cat "$T/supp") suppressed)" -- test "$(cat "$T/supp")" -gt 0
ok "…and every refusal is accounted for (entries + counted >= 42, got $TOTAL)" -- test "$TOTAL" -ge 42
serve_stop
run "$AL" audit verify
is "$rc" 0 "the ledger verifies"
done_testing
