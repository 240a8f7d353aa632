#!/bin/bash
# Integrations without a way around them (docs/threat-model.md,
# "Integrations"): a request through $AIRLOCK_INTEGRATIONS stays below the
# integration's base URL (no "..", encoded or not, no encoded slash or
# backslash, no absolute URL, no CONNECT), cannot replace the credential,
# and is bounded in size and count; every attempt is recorded.  The target:
# a loopback HTTPS server with a test CA (tests/helpers/integ_target.py)
# that logs every request it gets.
. "$(dirname "$0")/../lib.sh"
need_userns
command -v openssl >/dev/null || skip_all "needs openssl"
"$AL" init >/dev/null
mkdir -p "$T/src"; echo data >"$T/src/a"
# raw requests: the first line of each answer
cat >"$T/src/req.sh" <<'SH'
req() { printf "$1" | nc 127.0.0.1 3129 | head -1 | tr -d '\r'; }
req 'GET /gh/../x HTTP/1.1\r\nHost: a\r\n\r\n'
req 'GET /gh/%%2e%%2e/x HTTP/1.1\r\nHost: a\r\n\r\n'
req 'GET /gh/%%2E%%2e/x HTTP/1.1\r\nHost: a\r\n\r\n'
req 'GET /gh/.%%2E/x HTTP/1.1\r\nHost: a\r\n\r\n'
req 'GET /gh/a/./x HTTP/1.1\r\nHost: a\r\n\r\n'
req 'GET /gh/a/..?x HTTP/1.1\r\nHost: a\r\n\r\n'
req 'GET /gh/a%%2f..%%2fx HTTP/1.1\r\nHost: a\r\n\r\n'
req 'GET /gh/a%%5c..%%5cx HTTP/1.1\r\nHost: a\r\n\r\n'
req 'GET /gh/a\\..\\x HTTP/1.1\r\nHost: a\r\n\r\n'
req 'GET /gh/x%%zz HTTP/1.1\r\nHost: a\r\n\r\n'
req 'GET http://evil.example/gh/x HTTP/1.1\r\nHost: evil.example\r\n\r\n'
req 'GET //evil.example/x HTTP/1.1\r\nHost: a\r\n\r\n'
req 'CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n'
req 'POST /gh/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n'
req 'POST /gh/x HTTP/1.1\r\nContent-Length: 2097152\r\n\r\n'
req 'GET /gh/big HTTP/1.1\r\nHost: a\r\n\r\n'
req 'GET /gh/ok HTTP/1.1\r\nauthorization: Bearer forged\r\nAUTHORIZATION: Bearer forged2\r\n\r\n'
req 'GET /\377\376/x HTTP/1.1\r\nHost: a\r\n\r\n'
SH
"$AL" project create p --from "$T/src" >/dev/null
J() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }
integ_target
python3 "$SRC_ROOT/tests/helpers/integ_target.py" - - "$T/log2" "$T/port2" --http 2>"$T/srv2.err" &
SRV2=$!
trap 'kill $SRV $SRV2 2>/dev/null; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
for i in $(seq 100); do [ -s "$T/port2" ] && break; sleep 0.05; done
PORT2=$(cat "$T/port2")
"$AL" admin integration create gh --base-url "https://127.0.0.1:$PORT/api/v1" \
	--header "Authorization: Bearer @secret" --ca-file "$T/ca.pem" --secret-file "$T/secret" >/dev/null
"$AL" admin integration grant gh p >/dev/null

run "$AL" run p --json --integration gh -- sh req.sh
is "$rc" 0 "a run sends hostile requests to the relay"
REC=$out
is "$(echo "$REC" | field stdout.text)" "HTTP/1.1 403 Error
HTTP/1.1 403 Error
HTTP/1.1 403 Error
HTTP/1.1 403 Error
HTTP/1.1 403 Error
HTTP/1.1 403 Error
HTTP/1.1 403 Error
HTTP/1.1 403 Error
HTTP/1.1 400 Error
HTTP/1.1 403 Error
HTTP/1.1 400 Error
HTTP/1.1 403 Error
HTTP/1.1 405 Error
HTTP/1.1 411 Error
HTTP/1.1 413 Error
HTTP/1.1 502 Error
HTTP/1.1 200 OK
HTTP/1.1 403 Error" "'..' plain and encoded, '.', encoded '/' and '\\', '\\', a bad escape, an absolute URL, '//host', CONNECT, chunked, an over-size body and answer, a name that is not UTF-8: each refused"
is "$(echo "$REC" | J 'print(" ".join(c["verdict"] for c in d["integrations"]["calls"]))')" \
	"refused refused refused refused refused refused refused refused refused refused refused refused refused refused refused failed done refused" \
	"every attempt is in the record"
like "$(echo "$REC" | J 'print(d["integrations"]["calls"][1]["reason"])')" "must stay below the base URL" "…with its reason"
is "$(echo "$REC" | J 'c=d["integrations"]["calls"][17]; print(c["integration"], c["path"])')" '\xff\xfe /\xff\xfe/x' "…a name that is not UTF-8 too, escaped"
like "$(echo "$REC" | J 'print(d["integrations"]["calls"][15]["reason"])')" "answer is over 8388608 bytes" "an answer over the cap is not returned"
is "$(python3 -c '
import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l); print(r["path"], r["authorization"])' "$T/log")" "/api/v1/big Bearer $SECRET
/api/v1/ok Bearer $SECRET" "the server got only the two requests below the base URL, with the credential (the forged ones, any case, dropped)"
like "$("$AL" audit --kind run --json)" "\"path\":\"/gh/%2e%2e/x\"" "the refused attempts are in the ledger"

# around the relay: the base URL's own address is the sandbox's loopback,
# not the host's; a run without --integration has no relay
run "$AL" run p --json --integration gh -- sh -c "nc -w 2 127.0.0.1 $PORT </dev/null; echo \"direct: \$?\""
is "$(echo "$out" | field stdout.text)" "direct: 1" "the sandbox cannot reach the base URL's host without the relay"
run "$AL" run p --json -- sh -c 'printf "GET /gh/ok HTTP/1.1\r\n\r\n" | nc 127.0.0.1 3129; echo "relay: $?"; echo "${AIRLOCK_INTEGRATIONS:-unset}"'
is "$(echo "$out" | field stdout.text)" "relay: 1
unset" "a run that did not ask for an integration has no relay and no \$AIRLOCK_INTEGRATIONS"
is "$(wc -l <"$T/log")" 2 "…and the server got nothing more"

# the count and byte caps are the run's egress limits, bounded by the policy
run "$AL" run p --json --integration gh --egress-connections 2 -- sh -c '
	for i in 1 2 3 4; do wget -q -O- "$AIRLOCK_INTEGRATIONS/gh/n$i" >/dev/null 2>&1; echo "$i: $?"; done'
is "$(echo "$out" | field stdout.text | tr '\n' ' ' | sed 's/ *$//')" "1: 0 2: 0 3: 1 4: 1" "past --egress-connections calls are refused"
is "$(echo "$out" | J 'i=d["integrations"]; print(len(i["calls"]), i["calls_over_limit"], i["limits"]["calls"])')" "2 2 2" "…counted, not forwarded"
is "$(grep -c '/api/v1/n' "$T/log")" 2 "the server got two"
run "$AL" run p --json --integration gh --egress-bytes 100 -- sh -c '
	wget -q -O- --post-data="$(head -c 150 /dev/zero | tr "\0" x)" "$AIRLOCK_INTEGRATIONS/gh/big-post" >/dev/null 2>&1; echo "$?"'
is "$(echo "$out" | J 'c=d["integrations"]["calls"][0]; print(c["status"], c["verdict"])')" "413 refused" "a body past --egress-bytes is refused"
run "$AL" admin policy set --max-egress-connections 8
run "$AL" run p --integration gh --egress-connections 9 -- true
is "$rc" 8 "a requested call count above the policy's ceiling is refused (exit 8)"

# http:// only with --insecure and to loopback; then it works
printf 'k\n' >"$T/k"
run "$AL" admin integration create plain --base-url "http://127.0.0.1:$PORT2/v" --header "X-Api-Key: @secret" --secret-file "$T/k"
is "$rc" 6 "http:// without --insecure is refused"
ok "http:// to loopback with --insecure" -- "$AL" admin integration create plain --insecure \
	--base-url "http://127.0.0.1:$PORT2/v" --header "X-Api-Key: @secret" --secret-file "$T/k"
"$AL" admin integration grant plain p >/dev/null
run "$AL" run p --json --integration plain -- wget -q -O- "http://127.0.0.1:3129/plain/z"
like "$(echo "$out" | field stdout.text)" '"path": "/v/z"' "…reaches its server"
# https integrations never speak plain http: a redirect is not followed either
run "$AL" run p --json --integration gh -- wget -q -O- "http://127.0.0.1:3129/gh/ok"
is "$(echo "$out" | J 'print(d["integrations"]["calls"][0]["status"])')" 200 "an https integration still answers"
ok "the ledger verifies" -- "$AL" audit verify
done_testing
