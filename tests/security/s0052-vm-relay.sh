#!/bin/bash
# The microVM relay against its own guest's command: the relay port is
# PID 1's alone (no device node, no way into PID 1's descriptors, no
# mknod); the command can only reach the two listeners, each connection is
# one stream; more connections than the stream cap are refused in the guest
# while the run goes on; a connection that never reads stalls only itself;
# bulk bytes arrive whole through the windows.  Hostile frames from a
# compromised guest agent: tests/unit/test_vm_mux.c and fuzz/fuzz_vmmux.c.
. "$(dirname "$0")/../lib.sh"
need_vm
need_root
command -v ip >/dev/null && command -v openssl >/dev/null || skip_all "needs iproute2 and openssl"
"$AL" init >/dev/null
netns_target || { echo "not ok 1 - the test host in its network namespace"; echo "1..1"; exit 1; }
mkdir -p "$T/src"; echo x >"$T/src/a"
"$AL" project create p --from "$T/src" >/dev/null
image_with "$T/img" curl /usr/bin/curl
printf '127.0.0.1 localhost\n%s web.airlock.test\n' "$TIP" >"$T/hosts"
H() { with_hosts "$T/hosts" "$AL" "$@"; }
J() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }
"$AL" admin policy set --deployment --egress-allow "*.airlock.test,$TIP" --max-egress-connections 1000 >/dev/null

run H run p --backend vm --json --image curl --network egress --allow web.airlock.test --allow "$TIP" --egress-connections 500 -- sh -c '
	ls /dev | grep -c vport
	n=0; for f in /proc/1/fd/*; do (exec 3<>"$f") 2>/dev/null && n=$((n+1)); done; echo "pid1 fds opened: $n"
	ls /sys/class/virtio-ports >/dev/null 2>&1 && echo "sysfs ports: seen" || echo "sysfs ports: none"
	mknod /tmp/port c 250 1 2>/dev/null && echo "mknod: made" || echo "mknod: refused"
	# a connection that never reads a large answer stalls only itself
	curl -sS -N http://web.airlock.test/bytes/50000000 2>/dev/null | sleep 30 &
	sleep 2
	# 100 connections held open at once: past the 64 streams, refused in the guest
	i=0; while [ $i -lt 100 ]; do sleep 20 | nc 127.0.0.1 3128 >/dev/null 2>&1 & i=$((i+1)); done
	sleep 3
	busy=$(curl -sS -m 20 http://web.airlock.test/hello 2>&1 | head -c 100); echo "$busy (while busy)"
	kill $(pidof nc); sleep 2
	echo "$(curl -sS -m 20 http://web.airlock.test/hello) (after)"
	curl -sS -m 60 -o /dev/null -w "bulk: %{size_download}\n" http://web.airlock.test/bytes/5000000
	(printf "\001\002garbage\r\n\r\n"; sleep 3) | nc -w 5 127.0.0.1 3128 | head -1 | tr -d "\r"
	pkill -f "sleep 30"; true'
is "$rc" 0 "a vm run that pushes its relay"
is "$(echo "$out" | field stdout.text | sed -n 1,4p)" "0
pid1 fds opened: 0
sysfs ports: none
mknod: refused" "the relay port is PID 1's alone: no device node, no sysfs, none of PID 1's descriptors opens, no mknod"
like "$(echo "$out" | field stdout.text | sed -n 5p)" "(hello web.airlock.test|Recv failure|Connection reset|Empty reply|timed out).* \(while busy\)" \
	"with the streams taken, a new connection is answered or refused at once, never hangs the run"
is "$(echo "$out" | field stdout.text | sed -n 6,8p)" "hello web.airlock.test (after)
bulk: 5000000
HTTP/1.1 400 Bad Request" "once they close, connections work again; 5 MB arrive whole through the windows, beside a stalled download; garbage gets the proxy's 400"
ok "the run's relay ended without a protocol error" -- test "$(echo "$out" | J 'print(d["vm"].get("relay_error", "none"))')" = none
IDLE=$(echo "$out" | J 'print(sum(1 for c in d["egress"]["connections"] if "ended before a request" in c["reason"]))')
ok "of the 100 idle connections the proxy got at most the stream cap less the stalled one (63; got $IDLE)" -- test "$IDLE" -le 63 -a "$IDLE" -ge 32
is "$(echo "$out" | J 'c=d["egress"]["connections"][0]; print(c["host"], c["verdict"], 0 < c["bytes_down"] < 50000000)')" "web.airlock.test allowed True" \
	"the stalled download was served, held back at what its reader took, while the others went on"
like "$(echo "$out" | J 'print([c["reason"] for c in d["egress"]["connections"]][-1])')" "HTTP/1.x" "…and recorded the garbage with its reason, as for a namespace run"
done_testing
