#!/bin/bash
# airlock admin integration create/grant/list/show/delete and run
# --integration: a credential bound to a base URL, used on the host on a
# run's behalf.  The target: a loopback HTTPS server with a test CA that
# records the Authorization header it got (tests/helpers/integ_target.py).
# The sandbox reaches $AIRLOCK_INTEGRATIONS/NAME/PATH; the credential is
# added on the host and is never in the sandbox, the record, the ledger
# or any file of the home in clear.
. "$(dirname "$0")/../lib.sh"
need_userns
command -v openssl >/dev/null || skip_all "needs openssl"
"$AL" init >/dev/null
mkdir -p "$T/src"; echo data >"$T/src/a"
"$AL" project create p --from "$T/src" >/dev/null
"$AL" project create q --from "$T/src" >/dev/null
J() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }

integ_target
trap 'kill $SRV 2>/dev/null; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
RSECRET=$(printf %s "$SECRET" | rev) # what the sandbox is told: it never sees the secret's text
LEDGER0=$("$AL" audit --json | J 'print(len(d))')

# bad inputs: refused with a clear error, nothing stored, nothing in the ledger
run "$AL" admin integration create 'Bad Name' --base-url "$BASE" --header "Authorization: Bearer @secret" --secret-file "$T/secret"
is "$rc" 6 "a bad name is refused (exit 6)"
like "$err" "invalid integration name" "…saying why"
run "$AL" admin integration create gh --base-url "http://127.0.0.1:$PORT/" --header "Authorization: Bearer @secret" --secret-file "$T/secret"
is "$rc" 6 "an http:// base URL is refused without --insecure"
like "$err" "is not https" "…saying so"
run "$AL" admin integration create gh --base-url "http://example.com/" --insecure --header "Authorization: Bearer @secret" --secret-file "$T/secret"
is "$rc" 6 "--insecure allows loopback only"
like "$err" "loopback address only" "…saying so"
run "$AL" admin integration create gh --base-url "https://u:p@example.com/" --header "Authorization: Bearer @secret" --secret-file "$T/secret"
is "$rc" 6 "a base URL with a user is refused"
run "$AL" admin integration create gh --base-url "ftp://example.com/" --header "Authorization: Bearer @secret" --secret-file "$T/secret"
is "$rc" 6 "a non-http(s) base URL is refused"
run "$AL" admin integration create gh --base-url "$BASE" --header "Authorization: Bearer $SECRET" --secret-file "$T/secret"
is "$rc" 6 "a header without @secret is refused"
like "$err" "@secret exactly once" "…saying where the credential goes"
run "$AL" admin integration create gh --base-url "$BASE" --header "Host: @secret" --secret-file "$T/secret"
is "$rc" 6 "a header that would set Host is refused"
run "$AL" admin integration create gh --base-url "$BASE" --header "Authorization: Bearer @secret" </dev/null
is "$rc" 6 "an empty secret is refused"
like "$err" "no secret" "…saying so"
printf 'a\001b\n' >"$T/badsecret"
run "$AL" admin integration create gh --base-url "$BASE" --header "Authorization: Bearer @secret" --secret-file "$T/badsecret"
is "$rc" 6 "a secret with a control character is refused"
run "$AL" admin integration create gh --base-url "$BASE" --header "Authorization: Bearer @secret" --secret-file "$T/secret" --ca-file "$T/src/a"
is "$rc" 6 "a CA file without a certificate is refused"
run "$AL" admin integration grant nope p
is "$rc" 3 "granting an unknown integration: not found (exit 3)"
is "$("$AL" admin integration list)" "" "…and nothing was stored"
is "$("$AL" audit --json | J 'print(len(d))')" "$LEDGER0" "…nor any ledger entry"

# created: the secret from standard input, never shown again
run "$AL" admin integration create gh --base-url "$BASE/" --header "Authorization: Bearer @secret" --ca-file "$T/ca.pem" <"$T/secret"
is "$rc" 0 "an integration is created, its secret read from standard input"
is "$out" "gh" "…printing its name"
run "$AL" admin integration create gh --base-url "$BASE" --header "Authorization: Bearer @secret" --secret-file "$T/secret"
is "$rc" 7 "the same name again: exists (exit 7)"
printf 'k2-secret-value\n' >"$T/secret2"
ok "a second one keeps its bodies, its key in X-Api-Key" -- "$AL" admin integration create kb --base-url "$BASE" \
	--header "X-Api-Key: @secret" --ca-file "$T/ca.pem" --keep-bodies --secret-file "$T/secret2"
ok "a third one is granted to no one" -- "$AL" admin integration create other --base-url "$BASE" \
	--header "Authorization: Bearer @secret" --ca-file "$T/ca.pem" --secret-file "$T/secret2"
run "$AL" admin integration list
like "$out" "^gh https://127.0.0.1:$PORT/api/v1 Authorization projects=- principals=-" "list: name, base URL (no trailing /), header name"
run "$AL" admin integration show gh --json
is "$(echo "$out" | J 'print(d["name"], d["header"], d["ca"], d["keep_bodies"])')" "gh Authorization True False" "show --json: the header's name only"
ALL="$("$AL" admin integration list; "$AL" admin integration list --json; "$AL" admin integration show gh; "$AL" admin integration show kb --json)"
is "$(printf '%s' "$ALL" | grep -c -e "$SECRET" -e k2-secret-value -e Bearer)" 0 "list and show never print a secret nor the header's value"

# not granted: refused before anything runs
run "$AL" run p --integration gh -- true
is "$rc" 11 "a run asking for an integration not granted is refused (exit 11)"
like "$err" "integration gh is not granted to project p" "…naming it"
run "$AL" run p --integration nope -- true
is "$rc" 3 "an unknown integration: not found"
run "$AL" run p --integration 'Bad/Name' -- true
is "$rc" 2 "a malformed --integration is a usage error"
is "$("$AL" audit --kind run --json | J 'print(len(d))')" 0 "…and nothing ran"

ok "granted to project p" -- "$AL" admin integration grant gh p
ok "kb granted to the principal alice" -- "$AL" admin integration grant kb --principal alice
ok "kb granted to project p too" -- "$AL" admin integration grant kb p
like "$("$AL" admin integration list)" "kb https://127.0.0.1:$PORT/api/v1 X-Api-Key projects=p principals=alice keep-bodies" "list shows the grants"

# the calls: the credential added on the host; the answer returned
run "$AL" run p --json --integration gh --integration kb -- sh -c '
	echo "$AIRLOCK_INTEGRATIONS"
	wget -q -O- "$AIRLOCK_INTEGRATIONS/gh/repos/x?page=2"; echo
	wget -q -O- --post-data=hello "$AIRLOCK_INTEGRATIONS/gh/issues"; echo
	wget -q -O- --header "Authorization: Bearer forged" "$AIRLOCK_INTEGRATIONS/gh/forged"; echo
	wget -q -O- --post-data=kept "$AIRLOCK_INTEGRATIONS/kb/items"; echo
	wget -q -O- "$AIRLOCK_INTEGRATIONS/other/x" 2>&1; echo "other: $?"
	s1=$(echo "'"$RSECRET"'" | rev); s2=$(echo eulav-terces-2k | rev)
	echo "env: $(env | grep -c -e "$s1" -e "$s2") $(env | grep -c AIRLOCK_INTEGRATIONS)"
	echo "files: $(grep -r -l -s -a -e "$s1" -e "$s2" / --exclude-dir=proc --exclude-dir=sys | wc -l) $(grep -r -l -s -a data /workspace | wc -l)"'
is "$rc" 0 "a run with two integrations"
REC=$out
RUN=$(echo "$REC" | field id)
is "$(echo "$REC" | field stdout.text)" "http://127.0.0.1:3129
{\"method\": \"GET\", \"path\": \"/api/v1/repos/x?page=2\", \"body\": \"\"}
{\"method\": \"POST\", \"path\": \"/api/v1/issues\", \"body\": \"hello\"}
{\"method\": \"GET\", \"path\": \"/api/v1/forged\", \"body\": \"\"}
{\"method\": \"POST\", \"path\": \"/api/v1/items\", \"body\": \"kept\"}
wget: server returned error: HTTP/1.1 403 Error
other: 1
env: 0 1
files: 0 1" "the sandbox gets the answers at \$AIRLOCK_INTEGRATIONS/NAME/PATH; an integration it was not given: 403; neither its environment nor any file of it holds a secret (while the same greps find what is there)"
is "$(python3 -c '
import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l); print(r["path"], r["authorization"], r["x_api_key"])' "$T/log")" \
"/api/v1/repos/x?page=2 Bearer $SECRET None
/api/v1/issues Bearer $SECRET None
/api/v1/forged Bearer $SECRET None
/api/v1/items None k2-secret-value" "the server got each call below the base URL with the credential added on the host (a forged one replaced)"
is "$(echo "$REC" | J 'print("\n".join("%s %s %s %s %s %d %d" % (c["integration"], c["method"], c["path"], c["status"], c["verdict"], c["bytes_up"], c["bytes_down"] > 0) for c in d["integrations"]["calls"]))')" \
"gh GET /gh/repos/x?page=2 200 done 0 1
gh POST /gh/issues 201 done 5 1
gh GET /gh/forged 200 done 0 1
kb POST /kb/items 201 done 4 1
other GET /other/x 403 refused 0 0" "the record lists every call: integration, method, path, status, verdict, bytes"
is "$(echo "$REC" | J 'c=d["integrations"]["calls"][1]; print(c["request_sha256"])')" \
	"$(printf hello | sha256sum | cut -c1-64)" "…the sha256 of the request body"
is "$(echo "$REC" | J 'c=d["integrations"]["calls"][1]; print(c["response_sha256"])')" \
	"$(printf '{"method": "POST", "path": "/api/v1/issues", "body": "hello"}' | sha256sum | cut -c1-64)" "…and of the answer's"
is "$(echo "$REC" | J 'c=d["integrations"]["calls"]; print("request_body_base64" in c[1], __import__("base64").b64decode(c[3]["request_body_base64"]).decode(), __import__("base64").b64decode(c[3]["response_body_base64"]).decode())')" \
	'False kept {"method": "POST", "path": "/api/v1/items", "body": "kept"}' "bodies are kept only for an integration created with --keep-bodies"
like "$(echo "$REC" | J 'print(d["integrations"]["calls"][4]["reason"])')" "not one this run was granted" "…and why one was refused"
is "$(echo "$REC" | J 'print(d["env"].get("AIRLOCK_INTEGRATIONS"))')" "http://127.0.0.1:3129" "the record's environment has \$AIRLOCK_INTEGRATIONS"
AUD=$("$AL" audit --kind run --json)
like "$AUD" "\"path\":\"/gh/issues\"" "the calls are in the run's ledger entry"
like "$AUD" "\"path\":\"/other/x\"" "…the refused one too"
ok "the ledger verifies" -- "$AL" audit verify
is "$("$AL" audit --json | J 'import collections; c=collections.Counter(e["kind"] for e in d); print(c["integration_create"], c["integration_grant"])')" "3 3" \
	"creating and granting are ledger entries"

# nowhere in clear: the run's record, the ledger, the home
is "$(echo "$REC$AUD" | grep -c -e "$SECRET" -e k2-secret-value)" 0 "the record and the ledger never hold a secret"
B64=$(printf %s "$SECRET" | base64)
is "$(grep -r -l -a -e "$SECRET" -e k2-secret-value -e "$B64" "$AIRLOCK_HOME" | wc -l)" 0 \
	"no file of the home holds a secret in clear (nor in base64): meta.db keeps it sealed"
is "$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM integrations WHERE length(secret) > 28").fetchone()[0])' "$AIRLOCK_HOME/tenants/default/meta.db")" 3 "…while meta.db holds the three sealed secrets"

# the API: integrations [NAME...] in a run request; a principal's grant
serve_start || exit 1
"$AL" admin principal create alice --role agent --project q >/dev/null
TOK=$("$AL" admin token create alice 2>/dev/null)
api POST /projects/q/runs "$TOK" '{"argv":["true"],"integrations":["gh"]}'
is "$status" 403 "API: an integration granted neither to the project nor to the principal is 403"
api POST /projects/q/runs "$TOK" '{"argv":["true"],"integrations":["nope"]}'
is "$status" 404 "API: an unknown integration is 404"
api POST /projects/q/runs "$TOK" '{"argv":["true"],"integrations":["Bad/Name"]}'
is "$status" 422 "API: a malformed name is 422"
api POST /projects/q/runs "$TOK" '{"argv":["sh","-c","wget -q -O- --post-data=via-api $AIRLOCK_INTEGRATIONS/kb/api"],"wait":true,"integrations":["kb"]}'
is "$status" 200 "API: a run of alice on project q uses kb, granted to alice"
is "$(echo "$out" | J 'c=d["integrations"]["calls"][0]; print(d["principal"], c["integration"], c["status"], c["verdict"])')" \
	"alice kb 201 done" "…recorded with the call"
like "$(tail -1 "$T/log")" '"path": "/api/v1/api", "authorization": null, "x_api_key": "k2-secret-value", "body": "via-api"' "…which reached the service with kb's credential"
serve_stop

# rotate: a new secret (and header) for kb, its grants kept
N0=$("$AL" audit --json | J 'print(len(d))')
run "$AL" admin integration rotate nope --secret-file "$T/secret2"
is "$rc" 3 "rotating an unknown integration: not found"
run "$AL" admin integration rotate kb --header "Host: @secret" --secret-file /nonexistent
is "$rc" 6 "a reserved header is refused before the secret is read"
run "$AL" admin integration rotate kb </dev/null
is "$rc" 6 "an empty new secret is refused"
printf 'a\033]0;x\007b\n' >"$T/badsecret2"
run "$AL" admin integration rotate kb --secret-file "$T/badsecret2"
is "$rc" 6 "a new secret with a control character is refused"
is "$("$AL" audit --json | J 'print(len(d))')" "$N0" "…and none of them wrote a ledger entry"
printf 'k3-rotated-value\n' >"$T/secret3"
run "$AL" admin integration rotate kb --header "Authorization: Token @secret" --json <"$T/secret3"
is "$rc:$(echo "$out" | J 'print(d["rotated"], d["header"])')" "0:kb True" "kb rotated to a new secret and header, read from standard input"
like "$("$AL" admin integration list)" "kb https://127.0.0.1:$PORT/api/v1 Authorization projects=p principals=alice keep-bodies" "…its grants kept, its new header's name shown"
"$AL" run p --integration kb -- wget -q -O- "http://127.0.0.1:3129/kb/rotated" >/dev/null
like "$(tail -1 "$T/log")" '"path": "/api/v1/rotated", "authorization": "Token k3-rotated-value", "x_api_key": null' "a later run's call carries the new credential, not the old header"
is "$("$AL" audit --kind integration_rotate --json | J 'print(len(d), d[0]["data"])')" "1 {'header': 'Authorization', 'integration': 'kb'}" "the rotation is one ledger entry: the integration and the header's name"
is "$(grep -r -l -a -e k3-rotated-value -e "$(printf k3-rotated-value | base64)" "$AIRLOCK_HOME" | wc -l)" 0 "the new secret is in no file of the home in clear"

# project q was granted nothing; deleted: refused again
run "$AL" run q --integration gh -- true
is "$rc" 11 "another project is refused"
ok "deleted" -- "$AL" admin integration delete gh
run "$AL" run p --integration gh -- true
is "$rc" 3 "a deleted integration: not found"
run "$AL" admin integration delete gh
is "$rc" 3 "deleting it again: not found"
is "$("$AL" admin integration list | cut -d' ' -f1 | tr '\n' ' ')" "kb other " "the others stay"
done_testing
