#!/bin/bash
# airlock run --backend vm --integration: the guest's $AIRLOCK_INTEGRATIONS
# (127.0.0.1:3129 in the guest) reaches the same host-side relay as a
# namespace run's, over the VM's relay port: the credential is added on the
# host and is never in the guest, its output, the record or the ledger;
# every call is recorded.  The target: a loopback HTTPS server with a test
# CA (tests/helpers/integ_target.py).  TCG: one boot for most checks.
. "$(dirname "$0")/../lib.sh"
need_vm
command -v openssl >/dev/null || skip_all "needs openssl"
"$AL" init >/dev/null
mkdir -p "$T/src"; echo data >"$T/src/a"
"$AL" project create p --from "$T/src" >/dev/null
J() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }
integ_target
trap 'kill $SRV 2>/dev/null; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
RSECRET=$(printf %s "$SECRET" | rev) # what the guest is told: it never sees the secret's text
ok "an integration" -- "$AL" admin integration create gh --base-url "$BASE/" \
	--header "Authorization: Bearer @secret" --ca-file "$T/ca.pem" --secret-file "$T/secret"
ok "…granted to project p" -- "$AL" admin integration grant gh p
ok "another, not granted" -- "$AL" admin integration create other --base-url "$BASE" \
	--header "Authorization: Bearer @secret" --ca-file "$T/ca.pem" --secret-file "$T/secret"

run "$AL" run p --backend vm --json --integration gh -- sh -c '
	echo "$AIRLOCK_INTEGRATIONS"
	wget -q -O- "$AIRLOCK_INTEGRATIONS/gh/repos/x?page=2"; echo
	wget -q -O- --post-data=hello "$AIRLOCK_INTEGRATIONS/gh/issues"; echo
	wget -q -O- --header "Authorization: Bearer forged" "$AIRLOCK_INTEGRATIONS/gh/forged"; echo
	wget -q -O- "$AIRLOCK_INTEGRATIONS/other/x" 2>&1; echo "other: $?"
	wget -q -O- "$AIRLOCK_INTEGRATIONS/gh/../../x" 2>&1; echo "dotdot: $?"
	nc -w 2 127.0.0.1 3128 </dev/null 2>/dev/null && echo reached || echo "proxy port: unreachable"
	s1=$(echo "'"$RSECRET"'" | rev)
	echo "env: $(env | grep -c -e "$s1") $(env | grep -c AIRLOCK_INTEGRATIONS)"
	echo "files: $(grep -r -l -s -a -e "$s1" / --exclude-dir=proc --exclude-dir=sys | wc -l) $(grep -r -l -s -a data /workspace | wc -l)"'
is "$rc" 0 "a vm run with an integration"
REC=$out
is "$(echo "$REC" | field backend)" vm "…on the vm backend"
is "$(echo "$REC" | field stdout.text)" "http://127.0.0.1:3129
{\"method\": \"GET\", \"path\": \"/api/v1/repos/x?page=2\", \"body\": \"\"}
{\"method\": \"POST\", \"path\": \"/api/v1/issues\", \"body\": \"hello\"}
{\"method\": \"GET\", \"path\": \"/api/v1/forged\", \"body\": \"\"}
wget: server returned error: HTTP/1.1 403 Error
other: 1
wget: server returned error: HTTP/1.1 403 Error
dotdot: 1
proxy port: unreachable
env: 0 1
files: 0 1" "the guest gets the answers at \$AIRLOCK_INTEGRATIONS/NAME/PATH; one not granted: 403; a path out of the integration: 403; no proxy without egress; no secret in its environment or any file (while the same greps find what is there)"
is "$(python3 -c '
import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l); print(r["path"], r["authorization"])' "$T/log")" \
"/api/v1/repos/x?page=2 Bearer $SECRET
/api/v1/issues Bearer $SECRET
/api/v1/forged Bearer $SECRET" "the server got each call below the base URL with the credential added on the host (a forged one replaced)"
is "$(echo "$REC" | J 'print("\n".join("%s %s %s %s %s" % (c["integration"], c["method"], c["path"], c["status"], c["verdict"]) for c in d["integrations"]["calls"]))')" \
"gh GET /gh/repos/x?page=2 200 done
gh POST /gh/issues 201 done
gh GET /gh/forged 200 done
other GET /other/x 403 refused
gh GET /gh/../../x 403 refused" "the record lists every call, the refused ones too"
is "$(echo "$REC" | J 'c=d["integrations"]["calls"][1]; print(c["request_sha256"])')" \
	"$(printf hello | sha256sum | cut -c1-64)" "…with the sha256 of a request body"
AUD=$("$AL" audit --kind run --json)
like "$AUD" "\"path\":\"/gh/issues\"" "the calls are in the run's ledger entry"
ok "the ledger verifies" -- "$AL" audit verify
ok "the secret is nowhere in the record, the ledger or the home (nor its base64)" -- bash -c '
	! printf "%s" "$1" | grep -q -e "$2" && ! grep -r -a -q -e "$2" -e "$(printf %s "$2" | base64)" "$AIRLOCK_HOME"' _ "$REC" "$SECRET"
done_testing
