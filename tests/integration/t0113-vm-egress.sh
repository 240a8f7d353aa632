#!/bin/bash
# airlock run --backend vm --network egress / --integration: the guest has
# no network device; its agent listens where a namespace run's sandbox
# finds the proxy (127.0.0.1:3128) and the integrations (:3129) and carries
# each connection over one virtio-serial port to the host, which hands it
# to the same proxy and relay: the same checks, caps, records and ledger
# entries.  Targets: a host in this test's own network namespace (veth
# pair) and a loopback HTTPS server (tests/helpers/integ_target.py).  TCG:
# a few boots, several checks each.
. "$(dirname "$0")/../lib.sh"
need_vm
need_root
command -v ip >/dev/null && command -v openssl >/dev/null || skip_all "needs iproute2 and openssl"
"$AL" init >/dev/null
netns_target || { echo "not ok 1 - the test host in its network namespace"; echo "1..1"; exit 1; }
mkdir -p "$T/src"; cp "$T/ca.pem" "$T/src/ca.pem"
"$AL" project create p --from "$T/src" >/dev/null
image_with "$T/img" curl /usr/bin/curl
printf '127.0.0.1 localhost\n%s web.airlock.test other.airlock.test\n' "$TIP" >"$T/hosts"
H() { with_hosts "$T/hosts" "$AL" "$@"; }
J() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }
"$AL" admin policy set --deployment --egress-allow "*.airlock.test,$TIP,127.0.0.1:*" >/dev/null

# allowed over HTTP and HTTPS, another host refused, no way around the proxy
run H run p --backend vm --json --image curl --network egress --allow web.airlock.test --allow "$TIP" -- sh -c '
	curl -sS http://web.airlock.test/hello
	curl -sS --cacert ca.pem https://web.airlock.test/hello
	curl -sS -o /dev/null -w "%{http_code}\n" http://other.airlock.test/hello
	curl -sS --cacert ca.pem https://other.airlock.test/hello 2>/dev/null || echo "https refused: $?"
	curl -sS -X POST --data-binary posted-body http://web.airlock.test/echo; echo
	echo "proxy: $HTTP_PROXY $HTTPS_PROXY"
	curl -sS -m 5 --noproxy "*" http://'"$TIP"'/hello 2>/dev/null || echo "direct: $?"
	nc -w 3 '"$TIP"' 80 </dev/null 2>/dev/null && echo reached || echo "raw: unreachable"
	nslookup web.airlock.test 2>/dev/null | grep -q "'"$TIP"'" && echo resolved || echo "dns: fails"
	tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
is "$rc" 0 "a vm egress run"
REC="$out"
is "$(echo "$REC" | field backend)" vm "…on the vm backend"
is "$(echo "$REC" | field stdout.text)" "hello web.airlock.test
hello web.airlock.test
403
https refused: 56
posted-body
proxy: http://127.0.0.1:3128 http://127.0.0.1:3128
direct: 7
raw: unreachable
dns: fails
lo" "the allowed host answers over HTTP, HTTPS and a POST; another host gets 403 and no tunnel; without the proxy (curl --noproxy, nc) nothing is reached; no DNS; no device but lo"
is "$(echo "$REC" | J 'print("\n".join("%s %s %s %d %s %s" % (c["verdict"], c["kind"], c["host"], c["port"], c["address"] or "-", c["bytes_down"] > 0) for c in d["egress"]["connections"]))')" \
"allowed http web.airlock.test 80 $TIP True
allowed connect web.airlock.test 443 $TIP True
refused http other.airlock.test 80 - False
refused connect other.airlock.test 443 - False
allowed http web.airlock.test 80 $TIP True" "the record lists every connection as a namespace run's does"
like "$(echo "$REC" | J 'print(d["egress"]["connections"][2]["reason"])')" "not in the run's allowlist" "…and why one was refused"
ok "…and no relay error" -- test "$(echo "$REC" | J 'print(d["vm"].get("relay_error", "none"))')" = none
RUN=$(echo "$REC" | field id)
AUD=$("$AL" audit --kind run --json)
like "$AUD" "\"id\":\"$RUN\"" "the run is in the ledger"
like "$AUD" "other.airlock.test\",\"kind\":\"connect\"|\"host\":\"other.airlock.test\"" "…with its egress connections, the refused ones too"
ok "the ledger verifies" -- "$AL" audit verify
is "$(grep -c "^tcp 80 $HIP" "$TLOG") $(grep -c "^tcp 443 $HIP" "$TLOG") $(grep -c '^udp' "$TLOG")" "2 1 0" \
	"the test host saw exactly the allowed connections, from the host's side, and no datagram"

# the same command on the namespace backend records the same connections
run H run p --backend ns --json --image curl --network egress --allow web.airlock.test --allow "$TIP" -- sh -c '
	curl -sS http://web.airlock.test/hello
	curl -sS --cacert ca.pem https://web.airlock.test/hello
	curl -sS -o /dev/null -w "%{http_code}\n" http://other.airlock.test/hello
	curl -sS --cacert ca.pem https://other.airlock.test/hello 2>/dev/null || echo "https refused: $?"
	curl -sS -X POST --data-binary posted-body http://web.airlock.test/echo; echo'
CONNS='print("\n".join("%s %s %s %d %s %d %d %s" % (c["verdict"], c["kind"], c["host"], c["port"], c["address"], c["bytes_up"], c["bytes_down"], c["reason"]) for c in d["egress"]["connections"]))'
is "$(echo "$REC" | J "$CONNS")" "$(echo "$out" | J "$CONNS")" \
	"…and a namespace run of the same commands records the same connections, byte for byte"

# the caps are the proxy's: past --egress-connections 2, refused and counted
run H run p --backend vm --json --image curl --network egress --allow web.airlock.test --allow "$TIP" --egress-connections 2 -- sh -c '
	for i in 1 2 3 4; do curl -sS -o /dev/null -w "%{http_code} " http://web.airlock.test/hello 2>/dev/null; done; echo'
is "$(echo "$out" | J 'e=d["egress"]; print(len(e["connections"]), e["connections_over_limit"])')" "2 2" \
	"past --egress-connections 2 a connection from the VM is refused and counted"
like "$(echo "$out" | field stdout.text)" "^200 200 000 000" "…the first two answered, the others closed"
done_testing
