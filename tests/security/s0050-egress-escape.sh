#!/bin/bash
# Egress without a way around the proxy (docs/threat-model.md, "Network
# egress"): no route for a program that ignores HTTP(S)_PROXY, no resolver,
# no UDP; the proxy pins SNI and Host to the allowed name, refuses names that
# resolve to loopback, private or metadata addresses unless an entry names
# the address, refuses hostile request heads, and records every attempt.
# Targets: a host in this test's own network namespace, and loopback.
. "$(dirname "$0")/../lib.sh"
need_userns
need_root
command -v ip >/dev/null && command -v openssl >/dev/null || skip_all "needs iproute2 and openssl"
"$AL" init >/dev/null
netns_target || { echo "not ok 1 - the test host in its network namespace"; echo "1..1"; exit 1; }
mkdir -p "$T/src" "$T/www"; cp "$T/ca.pem" "$T/src/ca.pem"; echo loopback-service >"$T/www/hello"
"$AL" project create p --from "$T/src" >/dev/null
image_with "$T/img" curl /usr/bin/curl
# a host service on loopback, on a port of its own
LPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$T/www" && { python3 -m http.server --bind 127.0.0.1 "$LPORT" >/dev/null 2>&1 & echo $! >>"$T/cleanup.pids"; })
for i in $(seq 100); do command curl -s "http://127.0.0.1:$LPORT/hello" >/dev/null && break; sleep 0.05; done
cat >"$T/hosts" <<EOF
127.0.0.1 localhost
$TIP web.airlock.test other.airlock.test
127.0.0.1 loop.airlock.test
169.254.169.254 meta.airlock.test
::ffff:127.0.0.1 mapped.airlock.test
10.0.0.1 private.airlock.test
EOF
"$AL" admin policy set --deployment --egress-allow "*.airlock.test:*,$TIP,127.0.0.1:$LPORT" >/dev/null
H() { with_hosts "$T/hosts" "$AL" "$@"; }
J() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }
E=(--image curl --network egress --allow web.airlock.test --allow "$TIP")
conns() { echo "$1" | J 'print("\n".join("%s %s %s|%s" % (c["verdict"], c["host"] or "-", c["address"] or "-", c["reason"]) for c in d["egress"]["connections"]))'; }
before=$(wc -l <"$TLOG")

# no route: a program that ignores the proxy gets nowhere
run H run p --json "${E[@]}" -- sh -c "
	curl -sS --noproxy '*' --connect-timeout 5 http://$TIP/hello; echo \"noproxy http \$?\"
	curl -sS --noproxy '*' --connect-timeout 5 --cacert ca.pem https://web.airlock.test/hello; echo \"noproxy https \$?\"
	nc -w 3 $TIP 80 </dev/null; echo \"nc \$?\"
	echo x | nc -u -w 1 $TIP 53; echo \"udp \$?\"
	nslookup web.airlock.test $TIP >/dev/null 2>&1; echo \"nslookup \$?\"
	wc -l </proc/net/route; cat /proc/net/if_inet6 2>/dev/null | grep -vc ' lo\$'; true"
is "$rc" 0 "a run that tries every way around the proxy"
is "$(echo "$out" | field stdout.text | sed 's/ [1-9][0-9]*$/ fail/')" "noproxy http fail
noproxy https fail
nc fail
udp fail
nslookup fail
1
0" "curl --noproxy '*' (HTTP, HTTPS), a raw TCP connect, UDP and a DNS lookup all fail: no route, only lo"
like "$(echo "$out" | field stderr.text)" "Network is unreachable|Couldn't connect" "…for want of a route"
is "$(wc -l <"$TLOG")" "$before" "the test host never saw a packet from any of them (TCP or UDP)"
is "$(echo "$out" | J 'print(len(d["egress"].get("connections", [])))')" 0 "…and the proxy saw none"

# SNI and Host pinned to the allowed name
run H run p --json "${E[@]}" -- sh -c "
	curl -sS --cacert ca.pem https://other.airlock.test/hello --connect-to other.airlock.test:443:web.airlock.test:443; echo \"fronted \$?\"
	curl -sS -k https://web.airlock.test/hello --connect-to web.airlock.test:443:$TIP:443; echo \"sni-to-address \$?\"
	curl -sS -o /dev/null -w '%{http_code} ' -H 'Host: other.airlock.test' http://web.airlock.test/hello; echo host
	curl -sS -o /dev/null -w '%{http_code} ' -p http://web.airlock.test/hello; echo plain-in-tunnel
	curl -sS -o /dev/null -w '%{http_code} ' -p http://web.airlock.test:443/hello; echo plain-in-tunnel-443"
R=$out
is "$(echo "$R" | field stdout.text | sed 's/ [1-9][0-9]*$/ fail/')" "fronted fail
sni-to-address fail
400 host
000 plain-in-tunnel
000 plain-in-tunnel-443" "a ClientHello naming another host, SNI in a tunnel to an address, another Host, a tunnel to port 80 of an entry without a port, plain HTTP in a tunnel: all refused"
is "$(conns "$R")" "refused web.airlock.test $TIP|TLS SNI 'other.airlock.test' is not the name allowed (web.airlock.test)
refused $TIP $TIP|TLS SNI 'web.airlock.test' in a tunnel to the address $TIP
refused web.airlock.test -|a Host header that is not the request's host
refused web.airlock.test -|web.airlock.test port 80: an entry without a port allows plain HTTP (http://) there, not a tunnel; name the port to allow this (web.airlock.test:80)
refused web.airlock.test $TIP|a tunnel carries TLS only (plain HTTP goes through the proxy as http://)" \
	"each is recorded with its reason"
is "$(wc -l <"$TLOG")" "$before" "the test host saw none of them: the refusal comes before the first byte"

# names that resolve to special addresses
run H run p --json --image curl --network egress --allow "loop.airlock.test:$LPORT" --allow meta.airlock.test \
	--allow "mapped.airlock.test:$LPORT" --allow private.airlock.test -- sh -c "
	for u in http://loop.airlock.test:$LPORT/hello http://meta.airlock.test/latest/meta-data/ \
		http://mapped.airlock.test:$LPORT/hello http://private.airlock.test/ http://127.0.0.1:$LPORT/hello; do
		curl -sS -o /dev/null -w '%{http_code} ' \$u
	done"
is "$(echo "$out" | field stdout.text)" "403 403 403 403 403 " \
	"loopback, metadata (169.254.169.254), IPv4-mapped loopback and private addresses by name: refused, and the loopback address itself is not allowed"
is "$(conns "$out" | cut -d'|' -f1)" "refused loop.airlock.test 127.0.0.1
refused meta.airlock.test 169.254.169.254
refused mapped.airlock.test 127.0.0.1
refused private.airlock.test 10.0.0.1
refused 127.0.0.1 -" "…recorded with the address each resolved to"
like "$(conns "$out" | sed -n 2p)" "special address that no allow entry names" "…and why"
run H run p --json --image curl --network egress --allow "loop.airlock.test:$LPORT" --allow "127.0.0.1:$LPORT" -- \
	curl -sS "http://loop.airlock.test:$LPORT/hello"
is "$(echo "$out" | field stdout.text)" "loopback-service" "an entry naming the address itself (127.0.0.1:$LPORT) lets the name reach it"
run H run p --image curl --network egress --allow 169.254.169.254 -- true
is "$rc" 11 "a special address the policy does not name is refused even under *.airlock.test:* (exit 11)"

# this host's own addresses: a public-looking one on the test's veth, and a
# service of the host's on every address (0.0.0.0)
SIP="11.231.$(( $$ % 250 + 1 )).1"
ip addr add "$SIP/32" dev "$_NETNS_VETH"
APORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("0.0.0.0",0)); print(s.getsockname()[1])')
mkdir -p "$T/www2"; echo host-own-service >"$T/www2/hello"
(cd "$T/www2" && { python3 -m http.server --bind 0.0.0.0 "$APORT" >/dev/null 2>&1 & echo $! >>"$T/cleanup.pids"; })
for i in $(seq 100); do command curl -s "http://$SIP:$APORT/hello" >/dev/null && break; sleep 0.05; done
echo "$SIP self.airlock.test" >>"$T/hosts"
run H run p --json --image curl --network egress --allow "self.airlock.test:$APORT" -- \
	curl -sS -o /dev/null -w '%{http_code}' "http://self.airlock.test:$APORT/hello"
is "$(echo "$out" | field stdout.text)" 403 "a name that resolves to an address of this host is refused"
like "$(conns "$out")" "refused self.airlock.test $SIP\|.*this host's own" "  …recorded with its reason"
"$AL" admin policy set --deployment --egress-allow "*:*" >/dev/null
run H run p --image curl --network egress --allow "$SIP:$APORT" -- true
is "$rc" 11 "  and so is the address itself under a policy of *:* (exit 11)"
"$AL" admin policy set --deployment --egress-allow "*.airlock.test:*,$TIP,127.0.0.1:$LPORT,$SIP:$APORT" >/dev/null
run H run p --json --image curl --network egress --allow "$SIP:$APORT" -- curl -sS "http://$SIP:$APORT/hello"
is "$(echo "$out" | field stdout.text)" host-own-service "  an entry naming it in the policy and the run reaches it, as for loopback"
"$AL" admin policy set --deployment --egress-allow "*.airlock.test:*,$TIP,127.0.0.1:$LPORT" >/dev/null

# hostile request heads, straight to the proxy
run H run p --json "${E[@]}" -- sh -c '
	send() { printf "$1" | nc -w 5 127.0.0.1 3128 | head -1 | cut -c1-12; }
	send "GET http://web.airlock.test@other.airlock.test/ HTTP/1.1\r\n\r\n"
	send "CONNECT web.airlock.test HTTP/1.1\r\n\r\n"
	send "CONNECT \033[31mevil:443 HTTP/1.1\r\n\r\n"
	send "GET http://web.airlock.test/ HTTP/1.1\r\nX: a\000b\r\n\r\n"
	send "POST http://web.airlock.test/echo HTTP/1.1\r\nHost: web.airlock.test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
	send "GET http://web.airlock.test/ HTTP/1.1\r\nX: $(head -c 9000 /dev/zero | tr "\0" a)\r\n\r\n"
	send "GET http://web.airlock.test/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"
	send "GET https://web.airlock.test/ HTTP/1.1\r\n\r\n"
	send "GET http://web.airlock.test/hello HTTP/1.1\r\n folded: x\r\n\r\n"
	send "GET http://web.airlock.test/hello HTTP/1.1\r\nHost : other.airlock.test\r\n\r\n"
	send "POST http://web.airlock.test/echo HTTP/1.1\r\nTransfer-Encoding\t: chunked\r\n\r\n0\r\n\r\n"
	send "GET http://web.airlock.test/hello HTTP/1.1\r\nX: \001\033[31m\r\n\r\n"'
is "$(echo "$out" | field stdout.text | tr '\n' ' ' | sed 's/ *$//')" "HTTP/1.1 400 HTTP/1.1 400 HTTP/1.1 400 HTTP/1.1 400 HTTP/1.1 411 HTTP/1.1 431 HTTP/1.1 400 HTTP/1.1 400 HTTP/1.1 400 HTTP/1.1 400 HTTP/1.1 400 HTTP/1.1 400" \
	"userinfo, CONNECT without a port, escapes in a name, a NUL, chunked, a 9000-byte head, two lengths, https://, a folded header, 'Host :' and 'Transfer-Encoding<tab>:' (a space before the colon), control bytes in a value: refused"
is "$(echo "$out" | J 'print(len(d["egress"]["connections"]), set(c["verdict"] for c in d["egress"]["connections"]))')" \
	"12 {'refused'}" "every attempt is in the record, refused"
printf '%s' "$out" >"$T/hostile.json"
ok "no control character reaches the record" -- bash -c "! grep -qiF '\\u001b' '$T/hostile.json' && ! grep -q \$'\\e' '$T/hostile.json'"
is "$(wc -l <"$TLOG")" "$before" "the test host saw none of them"
# a client that leaves mid-download: the proxy's write fails for that
# connection only, never with a SIGPIPE for airlock
run H run p --json "${E[@]}" -- sh -c '
	curl -sS http://web.airlock.test/bytes/50000000 2>/dev/null | head -c 10 | wc -c
	curl -sS http://web.airlock.test/hello'
is "$rc $(echo "$out" | field stdout.text | tr '\n' ' ' | sed 's/ *$//')" "0 10 hello web.airlock.test" \
	"a client that hangs up mid-download ends its connection only: the run and the next connection go on"
ok "the ledger verifies" -- "$AL" audit verify
done_testing
