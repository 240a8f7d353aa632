#!/bin/bash
# airlock run --network egress --allow: the sandbox still has no route; its
# HTTP(S)_PROXY is airlock's proxy, which reaches the allowed hosts over HTTP
# and HTTPS, refuses the others, and records every connection in the run's
# record and ledger entry; the policy bounds what a run may allow and its
# egress caps.  The only targets: a host in a network namespace this test
# makes (veth pair) and loopback.
. "$(dirname "$0")/../lib.sh"
need_userns
need_root
command -v ip >/dev/null && command -v openssl >/dev/null || skip_all "needs iproute2 and openssl"
"$AL" init >/dev/null
netns_target || { echo "not ok 1 - the test host in its network namespace"; echo "1..1"; exit 1; }
mkdir -p "$T/src"; cp "$T/ca.pem" "$T/src/ca.pem"
"$AL" project create p --from "$T/src" >/dev/null
image_with "$T/img" curl /usr/bin/curl
# multi.airlock.test: first the host's own end of the veth (nothing listens
# on its port 80: refused), then the test host
printf '127.0.0.1 localhost\n%s web.airlock.test other.airlock.test\n%s multi.airlock.test\n%s multi.airlock.test\n' \
	"$TIP" "$HIP" "$TIP" >"$T/hosts"
H() { with_hosts "$T/hosts" "$AL" "$@"; }
J() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }

# refused before anything runs: the built-in policy allows no destination
run H run p --image curl --network egress --allow web.airlock.test -- true
is "$rc" 11 "with the built-in policy (egress_allow empty) an --allow is refused (exit 11)"
like "$err" "egress to 'web.airlock.test' is not allowed by the policy" "…naming the entry"
is "$("$AL" audit --kind run --json | grep -c web.airlock.test)" 0 "…and nothing ran"
run "$AL" run p --allow web.airlock.test -- true
is "$rc" 2 "--allow without --network egress is a usage error"
run "$AL" run p --network egress --allow 'bad host' -- true
is "$rc" 2 "a malformed --allow is a usage error"
like "$err" "bad --allow" "…saying which"

run "$AL" admin policy set --deployment --egress-allow "*.airlock.test,$TIP,$HIP" --max-egress-connections 64
is "$rc" 0 "the operator allows *.airlock.test and the test host's (private) address"
like "$out" "egress allowed to: \*.airlock.test, $TIP" "policy show lists them"
run "$AL" admin policy set --egress-allow "web.airlock.test,multi.airlock.test,$TIP,$HIP"
is "$rc" 0 "the tenant narrows it to web.airlock.test and multi.airlock.test"
run "$AL" admin policy set --egress-allow "*.example.com"
is "$rc" 8 "a tenant may not allow what the deployment does not (exit 8)"
like "$("$AL" admin policy show)" "egress allowed to: web.airlock.test, multi.airlock.test, $TIP, $HIP" "…and its policy is as before"

# allowed over HTTP and HTTPS, another host refused; all of it recorded
run H run p --json --image curl --network egress --allow web.airlock.test --allow "$TIP" -- sh -c '
	curl -sS http://web.airlock.test/hello
	curl -sS --cacert ca.pem https://web.airlock.test/hello
	curl -sS -o /dev/null -w "%{http_code}\n" http://other.airlock.test/hello
	curl -sS --cacert ca.pem https://other.airlock.test/hello || echo "https refused: $?"
	curl -sS -X POST --data-binary posted-body http://web.airlock.test/echo; echo'
is "$rc" 0 "an egress run with allowed hosts"
REC=$out
is "$(echo "$REC" | field stdout.text)" "hello web.airlock.test
hello web.airlock.test
403
https refused: 56
posted-body" "the allowed host answers over HTTP, HTTPS and a POST; another host gets 403 and no tunnel"
is "$(echo "$REC" | J 'print(" ".join(sorted(x for x in d["env"] if "proxy" in x.lower())))')" \
	"HTTPS_PROXY HTTP_PROXY http_proxy https_proxy" "HTTP(S)_PROXY name the proxy in the run's environment"
is "$(echo "$REC" | J 'print("\n".join("%s %s %s %d %s %s" % (c["verdict"], c["kind"], c["host"], c["port"], c["address"] or "-", c["bytes_down"] > 0) for c in d["egress"]["connections"]))')" \
"allowed http web.airlock.test 80 $TIP True
allowed connect web.airlock.test 443 $TIP True
refused http other.airlock.test 80 - False
refused connect other.airlock.test 443 - False
allowed http web.airlock.test 80 $TIP True" "the record lists every connection: verdict, kind, name, port, address, bytes"
like "$(echo "$REC" | J 'print(d["egress"]["connections"][2]["reason"])')" "not in the run's allowlist" "…and why one was refused"
is "$(echo "$REC" | J 'print(d["egress"]["allow"], d["limits"]["egress_connections"], d["limits"]["egress_bytes"])')" \
	"['web.airlock.test', '$TIP'] 64 1073741824" "…its allowlist and egress limits (the default connections followed the ceiling down to 64)"
RUN=$(echo "$REC" | field id)
AUD=$("$AL" audit --kind run --json)
like "$AUD" "\"id\":\"$RUN\"" "the run is in the ledger"
like "$AUD" "other.airlock.test\",\"kind\":\"connect\"|\"host\":\"other.airlock.test\"" "…with its egress connections, the refused ones too"
ok "the ledger verifies" -- "$AL" audit verify
is "$(grep -c "^tcp 80 $HIP" "$TLOG") $(grep -c "^tcp 443 $HIP" "$TLOG")" "2 1" \
	"the test host saw exactly the allowed connections, from the host's side"

# a name with two addresses: the first refuses, the proxy tries the next
run H run p --json --image curl --network egress --allow multi.airlock.test --allow "$HIP" --allow "$TIP" -- \
	curl -sS http://multi.airlock.test/hello
is "$(echo "$out" | field stdout.text) $(echo "$out" | J 'c=d["egress"]["connections"][0]; print(c["verdict"], c["address"])')" \
	"hello multi.airlock.test allowed $TIP" "a name's first address refuses: the next one is tried, and recorded"

# replay: the same allowlist, under the policy as it is now
run H replay "$RUN" --json
is "$(echo "$out" | field verdict.result) $(echo "$out" | J 'print(d["egress"]["allow"], len(d["egress"]["connections"]))')" \
	"identical ['web.airlock.test', '$TIP'] 5" "a replay runs with the original's allowlist, its connections recorded anew"

# the caps: connections and bytes
run H run p --json --image curl --network egress --allow web.airlock.test --allow "$TIP" --egress-connections 2 -- sh -c '
	for i in 1 2 3 4; do curl -sS -o /dev/null -w "%{http_code} " http://web.airlock.test/hello; done'
is "$(echo "$out" | J 'e=d["egress"]; print(len(e["connections"]), e["connections_over_limit"])')" "2 2" \
	"past --egress-connections 2 a connection is refused and counted"
run H run p --json --image curl --network egress --allow web.airlock.test --allow "$TIP" --egress-bytes 100K -- sh -c '
	curl -sS -o /dev/null http://web.airlock.test/bytes/1000000; echo "curl $?"'
is "$(echo "$out" | J 'e=d["egress"]; print(e["byte_limit_hit"], e["bytes"] <= 102400, e["bytes"] > 50000)')" "True True True" \
	"--egress-bytes 100K ends the download at the limit, recorded"
like "$(echo "$out" | J 'print(d["egress"]["connections"][0]["reason"])')" "egress byte limit" "…with the reason"
run H run p --image curl --network egress --allow web.airlock.test --egress-connections 65 -- true
is "$rc" 8 "--egress-connections above the ceiling (64) is refused (exit 8)"
run H run p --image curl --network egress --allow other.airlock.test -- true
is "$rc" 11 "an --allow the tenant's policy does not cover is refused (exit 11)"
like "$err" "other.airlock.test" "…naming it"
run H run p --image curl --network egress --allow web.airlock.test:80 -- true
is "$rc" 11 "HOST:80 (a tunnel there too) is not covered by the policy's port-less entry (exit 11)"
like "$err" "for plain HTTP to port 80 give the entry without a port" "…saying how to reach port 80"

"$AL" admin policy set --egress-allow web.airlock.test >/dev/null
run H replay "$RUN" --json
is "$(echo "$out" | field verdict.result)" "not_replayable" "once the policy no longer allows its allowlist, a replay is not_replayable"
like "$(echo "$out" | field verdict.reason)" "policy now refuses its egress" "…saying why"

# the API: network {mode, allow}
serve_start || exit 1
"$AL" admin principal create bot --role agent --project p >/dev/null
ADMIN=$("$AL" admin token create bot 2>/dev/null)
api POST /projects/p/runs "$ADMIN" "{\"argv\":[\"true\"],\"network\":{\"mode\":\"egress\",\"allow\":[\"other.airlock.test\"]}}"
is "$status" 403 "API: an allow entry outside the policy is 403"
api POST /projects/p/runs "$ADMIN" "{\"argv\":[\"true\"],\"network\":{\"mode\":\"none\",\"allow\":[\"web.airlock.test\"]}}"
is "$status" 422 "API: allow entries with mode none are 422"
api POST /projects/p/runs "$ADMIN" "{\"argv\":[\"true\"],\"network\":{\"mode\":\"egress\",\"allow\":[\"a b\"]}}"
is "$status" 422 "API: a malformed allow entry is 422"
api POST /projects/p/runs "$ADMIN" "{\"argv\":[\"true\"],\"wait\":true,\"network\":{\"mode\":\"egress\",\"allow\":[\"web.airlock.test\"]},\"egress_connections\":3}"
is "$status" 200 "API: an egress run within the policy"
is "$(echo "$out" | J 'print(d["network"], d["egress"]["allow"], d["limits"]["egress_connections"])')" \
	"egress ['web.airlock.test'] 3" "…recorded with its allowlist and limits"
serve_stop
done_testing
