#!/bin/bash
# The integrations' admin routes (docs/api.md "Integrations (admin)") and
# `airlock --server URL admin integration create|grant|rotate|list|show|delete`:
# only an admin of the tenant manages its integrations, another tenant's
# are invisible, bad input is a clear 4xx that changes nothing, the secret
# goes in once (the create request's body) and comes back from no route, in
# no form, nor is it in the ledger or the daemon's log; a run over the API
# uses an integration made over the API.  The target: a loopback HTTPS
# server with a test CA (tests/helpers/integ_target.py).
. "$(dirname "$0")/../lib.sh"
need_userns
command -v openssl >/dev/null || skip_all "needs openssl"
"$AL" init >/dev/null
"$AL" admin tenant create acme >/dev/null
mkdir -p "$T/src"; echo data >"$T/src/a"
"$AL" project create p --from "$T/src" >/dev/null
"$AL" project create q --from "$T/src" >/dev/null
"$AL" admin principal create root --role admin >/dev/null
"$AL" admin principal create au --role author >/dev/null
"$AL" admin principal create rv --role reviewer >/dev/null
"$AL" admin principal create ag --role agent --project p >/dev/null
"$AL" --tenant acme admin principal create boss --role admin >/dev/null
ADM=$("$AL" admin token create root 2>/dev/null)
AU=$("$AL" admin token create au 2>/dev/null)
RV=$("$AL" admin token create rv 2>/dev/null)
AG=$("$AL" admin token create ag 2>/dev/null)
ACME=$("$AL" --tenant acme admin token create boss 2>/dev/null)
J() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }

integ_target
trap 'kill $SRV 2>/dev/null; serve_stop; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
SECRET2="rot2-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d " \n")"
SECRET3="rot3-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d " \n")"
CA_JSON=$(python3 -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read()))' "$T/ca.pem")
serve_start || exit 1
R() { env AIRLOCK_TOKEN="$ADM" "$AL" --server "$URL" "$@"; }
state() { # the tenant's integrations and ledger length, read from the home
	"$AL" admin integration list --json
	"$AL" audit --json | J 'print(len(d))'
}
body() { # body NAME BASE_URL HEADER [EXTRA-JSON-FIELDS]
	printf '{"name":"%s","base_url":"%s","header":"%s","secret":"%s","ca_pem":%s%s}' \
		"$1" "$2" "$3" "$SECRET" "$CA_JSON" "${4:-}"
}

# ---- bad input: a clear 4xx, nothing stored, no ledger entry --------------------------------
S0=$(state)
api POST /integrations "$ADM" "$(body gh "ftp://example.com/" "Authorization: Bearer @secret")"
is "$status" 422 "a base URL that is not https:// is 422"
like "$out" "is not https://HOST" "…saying why"
api POST /integrations "$ADM" "$(body gh "https://u:p@example.com/" "Authorization: Bearer @secret")"
is "$status" 422 "a base URL with a user is 422"
api POST /integrations "$ADM" "$(body gh "$BASE" "Authorization: Bearer $SECRET")"
is "$status" 422 "a header without @secret is 422"
like "$out" "@secret exactly once" "…saying where the credential goes"
api POST /integrations "$ADM" "$(body gh "$BASE" "Host: @secret")"
is "$status" 422 "a header that would set Host is 422"
api POST /integrations "$ADM" "$(body gh "http://127.0.0.1:$PORT/" "Authorization: Bearer @secret" ',"insecure":true')"
is "$status" 422 "insecure (http:// to loopback) is refused over the API"
like "$out" "local home only" "…saying it is a local home's"
api POST /integrations "$ADM" "$(body 'Bad Name' "$BASE" "Authorization: Bearer @secret")"
is "$status" 422 "a bad name is 422"
api POST /integrations "$ADM" "$(body gh "$BASE" "Authorization: Bearer @secret" ',"colour":"red"')"
is "$status" 422 "an unknown field is 422"
api POST /integrations "$ADM" '{"name":"gh","base_url":"'"$BASE"'","header":"Authorization: Bearer @secret"}'
is "$status" 422 "no secret is 422"
api POST /integrations "$ADM" '{"name":"gh","base_url":"'"$BASE"'","header":"X: @secret","secret":"a\u0001b"}'
is "$status" 422 "a secret with a control character is 422"
api POST /integrations "$ADM" "{\"name\":\"gh\",\"secret\":\"$SECRET\" \"oops\"}"
is "$status" 422 "a malformed body is 422"
is "$(printf %s "$out" | grep -c -e "$SECRET")" 0 "…and its message does not quote the secret near the error"
api POST /integrations "$ADM" "$(body gh "$BASE" "Authorization: Bearer @secret" ',"keep_bodies":"yes"')"
is "$status" 422 "keep_bodies that is not a boolean is 422"
is "$(state)" "$S0" "…and none of these stored anything or wrote a ledger entry"

# ---- create, over the CLI --server (the secret from standard input) -------------------------
run R admin integration create gh --base-url "$BASE/" --header "Authorization: Bearer @secret" --ca-file "$T/ca.pem" <"$T/secret"
is "$rc" 0 "airlock --server … admin integration create"
is "$out" "gh" "…printing its name, as on a local home"
like "$("$AL" admin integration list)" "^gh https://127.0.0.1:$PORT/api/v1 Authorization projects=- principals=-$" "…stored in the tenant's home"
run R admin integration create kb --base-url "$BASE" --header "X-Api-Key: @secret" --ca-file "$T/ca.pem" --keep-bodies --secret-file "$T/secret" --json
is "$rc" 0 "create --json with --keep-bodies"
is "$(echo "$out" | J 'print(sorted(d.items()))')" "[('base_url', '$BASE'), ('header', 'X-Api-Key'), ('name', 'kb')]" "…prints what a local create prints"
api POST /integrations "$ADM" "$(body other "$BASE" "Authorization: Bearer @secret" ',"keep_bodies":false')"
is "$status" 201 "POST /integrations is 201"
is "$(echo "$out" | J 'print(d["name"], d["base_url"], d["header"], d["keep_bodies"], d["insecure"], d["ca"], d["projects"], d["principals"], type(d["created"]).__name__)')" \
	"other $BASE Authorization False False True [] [] int" "…answering the integration: base URL, header name, grants, keep_bodies, created"
S1=$(state)
run R admin integration create gh --base-url "$BASE" --header "Authorization: Bearer @secret" --secret-file "$T/secret"
is "$rc" 7 "the same name again over --server: exists (exit 7)"
api POST /integrations "$ADM" "$(body gh "$BASE" "Authorization: Bearer @secret")"
is "$status" 409 "…and POST is 409"
like "$out" '"code":"AlreadyExists"' "…AlreadyExists"
run R admin integration create bad --base-url "http://127.0.0.1:$PORT/" --insecure --header "Authorization: Bearer @secret" --secret-file "$T/secret"
is "$rc" 6 "create --insecure over --server: refused by the daemon (exit 6)"
like "$err" "local home only" "…saying why"

# ---- grant -----------------------------------------------------------------------------------
run R admin integration grant gh nope
is "$rc" 3 "granting to an unknown project: not found (exit 3)"
api POST /integrations/gh/grants "$ADM" '{"project":"nope"}'
is "$status" 404 "…POST …/grants is 404"
api POST /integrations/gh/grants "$ADM" '{"principal":"nobody"}'
is "$status" 404 "an unknown principal is 404"
api POST /integrations/nope/grants "$ADM" '{"project":"p"}'
is "$status" 404 "an unknown integration is 404"
api POST /integrations/gh/grants "$ADM" '{"project":"p","principal":"ag"}'
is "$status" 422 "a project and a principal at once is 422"
api POST /integrations/gh/grants "$ADM" '{}'
is "$status" 422 "neither is 422"
api POST /integrations/Bad%20Name/grants "$ADM" '{"project":"p"}'
is "$status" 422 "a malformed integration name is 422"
is "$(state)" "$S1" "…and none of these changed anything"
run R admin integration grant gh p
is "$rc:$out" "0:gh: project p" "grant NAME PROJECT over --server"
run R admin integration grant kb --principal ag --json
is "$(echo "$out" | J 'print(d["integration"], d["principal"])')" "kb ag" "grant --principal --json"
api POST /integrations/kb/grants "$ADM" '{"project":"p"}'
is "$status" 200 "POST …/grants is 200"
is "$(echo "$out" | J 'print(d["projects"], d["principals"])')" "['p'] ['ag']" "…answering the integration with its grants"

# ---- list and show: the same as on the local home -------------------------------------------
is "$(R admin integration list)" "$("$AL" admin integration list)" "list over --server prints what the local list prints"
is "$(R admin integration list --json)" "$("$AL" admin integration list --json)" "…and --json too"
is "$(R admin integration show kb --json)" "$("$AL" admin integration show kb --json)" "show --json over --server"
is "$(R admin integration show gh)" "$("$AL" admin integration show gh)" "show over --server"
run R admin integration show nope
is "$rc" 3 "show of an unknown one: not found (exit 3)"
api GET /integrations/gh "$ADM"
is "$status" 200 "GET /integrations/{name}"
api GET /integrations "$ADM"
is "$(echo "$out" | J 'print(" ".join(i["name"] for i in d))')" "gh kb other" "GET /integrations lists them by name"

# ---- roles: only an admin; a refusal changes nothing ----------------------------------------
L2=$("$AL" admin integration list --json)
for who in AU RV AG; do
	tok=${!who}
	api GET /integrations "$tok"; a=$status
	api GET /integrations/gh "$tok"; b=$status
	api POST /integrations "$tok" "$(body x1 "$BASE" "Authorization: Bearer @secret")"; c=$status
	api POST /integrations/gh/grants "$tok" '{"project":"q"}'; d=$status
	api DELETE /integrations/gh "$tok"; e=$status
	api POST /integrations/gh/secret "$tok" '{"secret":"x"}'; f=$status
	is "$a $b $c $d $e $f" "403 403 403 403 403 403" "$who (not an admin): every integration route is 403"
done
run env AIRLOCK_TOKEN="$AU" "$AL" --server "$URL" admin integration list
is "$rc" 11 "…and the CLI says so (exit 11)"
is "$("$AL" admin integration list --json)" "$L2" "…nothing changed"

# ---- another tenant: invisible ---------------------------------------------------------------
api GET /integrations "$ACME"
is "$out" "[]" "another tenant's admin lists none of them"
api GET /integrations/gh "$ACME"; g=$status
api POST /integrations/gh/grants "$ACME" '{"project":"mine"}'; h=$status
api DELETE /integrations/gh "$ACME"; i=$status
api POST /integrations/gh/secret "$ACME" '{"secret":"x"}'; j=$status
api GET /integrations/nothing "$ACME"; n=$status
is "$g $h $i $j" "404 404 404 404" "…and gets for gh exactly what it gets for a name that does not exist ($n)"
api POST /integrations "$ACME" "$(body gh "$BASE" "Authorization: Bearer @secret")"
is "$status" 201 "…it may have its own gh"
is "$("$AL" --tenant acme admin integration list | cut -d' ' -f1)" "gh" "…in its own home"
is "$("$AL" admin integration list --json)" "$L2" "…and the default tenant's are unchanged"

# ---- a run over the API uses the integration created over the API ---------------------------
api POST /projects/p/runs "$AG" '{"argv":["sh","-c","wget -q -O- $AIRLOCK_INTEGRATIONS/gh/repos; echo; wget -q -O- --post-data=k $AIRLOCK_INTEGRATIONS/kb/items"],"wait":true,"integrations":["gh","kb"]}'
is "$status" 200 "the agent's run on p over the API, with gh (granted to p) and kb (granted to it)"
is "$(echo "$out" | J 'print(" ".join("%s:%s:%s" % (c["integration"], c["status"], c["verdict"]) for c in d["integrations"]["calls"]))')" \
	"gh:200:done kb:201:done" "…both calls were made"
RUNREC=$out
is "$(python3 -c '
import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l); print(r["path"], r["authorization"], r["x_api_key"])' "$T/log")" \
"/api/v1/repos Bearer $SECRET None
/api/v1/items None $SECRET" "…and reached the service with the credential added on the host"

# ---- rotate: a new secret (and header), grants kept; bad input changes nothing ----------------
S3=$(state)
api POST /integrations/nope/secret "$ADM" '{"secret":"x"}'
is "$status" 404 "rotating an unknown integration is 404"
api POST /integrations/gh/secret "$ADM" '{"secret":"x","header":"Host: @secret"}'
is "$status" 422 "a reserved header is 422"
api POST /integrations/gh/secret "$ADM" '{"secret":""}'
is "$status" 422 "an empty secret is 422"
api POST /integrations/gh/secret "$ADM" '{"secret":"a\u001bb"}'
is "$status" 422 "a secret with a control character is 422"
api POST /integrations/gh/secret "$ADM" '{"secret":"x","colour":"red"}'
is "$status" 422 "an unknown field is 422"
api POST /integrations/gh/secret "$ADM" "{\"secret\":\"$SECRET2\" \"oops\"}"
is "$status" 422 "a malformed body is 422"
is "$(printf %s "$out" | grep -c -e "$SECRET2")" 0 "…and its message does not quote the secret"
run R admin integration rotate gh --header "Authorization: @secret @secret" --secret-file /nonexistent
is "$rc" 6 "rotate over --server checks the header before reading the secret (exit 6)"
is "$(state)" "$S3" "…and none of these changed anything"
printf '%s\n' "$SECRET2" >"$T/secret2"
run R admin integration rotate gh --secret-file "$T/secret2"
is "$rc:$out" "0:rotated gh" "rotate over --server"
api POST /integrations/kb/secret "$ADM" "{\"secret\":\"$SECRET3\",\"header\":\"Authorization: Token @secret\"}"
is "$status:$(echo "$out" | J 'print(d["header"], d["projects"], d["principals"])')" "200:Authorization ['p'] ['ag']" \
	"POST …/secret answers the integration: its new header's name, its grants kept"
: >"$T/log"
api POST /projects/p/runs "$AG" '{"argv":["sh","-c","wget -q -O- $AIRLOCK_INTEGRATIONS/gh/r2 >/dev/null; wget -q -O- $AIRLOCK_INTEGRATIONS/kb/r3 >/dev/null"],"wait":true,"integrations":["gh","kb"]}'
is "$(python3 -c '
import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l); print(r["path"], r["authorization"], r["x_api_key"])' "$T/log")" \
"/api/v1/r2 Bearer $SECRET2 None
/api/v1/r3 Token $SECRET3 None" "a later run reaches the service with the new credentials"

# ---- delete ----------------------------------------------------------------------------------
run R admin integration delete other
is "$rc:$out" "0:deleted other" "delete over --server"
api DELETE /integrations/kb "$ADM"
is "$status:$out" '200:{"deleted":"kb"}' "DELETE /integrations/{name}"
api GET /integrations/kb "$ADM"
is "$status" 404 "…gone"
run R admin integration delete kb
is "$rc" 3 "deleting it again: not found (exit 3)"
api POST /projects/p/runs "$AG" '{"argv":["true"],"integrations":["kb"]}'
is "$status" 404 "a run asking for a deleted integration is 404"

# ---- the ledger: every create, grant and delete, by the admin --------------------------------
is "$("$AL" audit --json | J 'print(" ".join("%s:%s:%s" % (e["kind"], e["actor"], e["data"]["integration"]) for e in d if e["kind"].startswith("integration_")))')" \
	"integration_create:root:gh integration_create:root:kb integration_create:root:other integration_grant:root:gh integration_grant:root:kb integration_grant:root:kb integration_rotate:root:gh integration_rotate:root:kb integration_delete:root:other integration_delete:root:kb" \
	"each create, grant, rotate and delete over the API is a ledger entry naming the admin"
ok "the ledger verifies" -- "$AL" audit verify

# ---- the secret: in no answer, no ledger, no log, no file ------------------------------------
"$AL" audit export "$T/ledger.export" >/dev/null 2>&1
B64=$(printf %s "$SECRET" | base64)
B64b=$(printf %s "$SECRET2" | base64)
B64c=$(printf %s "$SECRET3" | base64)
ALLOUT=$(R admin integration list --json; R admin integration show gh --json; echo "$RUNREC")
is "$(printf %s "$ALLOUT" | grep -c -e "$SECRET" -e "$B64" -e "$SECRET2" -e "$SECRET3")" 0 "no CLI output nor the run's record holds the secret"
is "$(grep -rlaF -e "$SECRET" -e "$B64" -e "$SECRET2" -e "$B64b" -e "$SECRET3" -e "$B64c" "$API_LOG" "$T/serve.log" "$T/ledger.export" "$AIRLOCK_HOME" | wc -l)" 0 \
	"no answer the daemon gave (every body recorded), nor its log, the ledger export or any file of the home holds it (nor its base64)"
done_testing
