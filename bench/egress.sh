#!/bin/bash
# Egress figures (issue 18), side by side in one run: a 1 GiB download from
# a loopback HTTP server through a run's egress proxy (curl inside the
# sandbox, HTTP_PROXY) against the same download by the same curl on the
# host, direct; and the latency a connection gains through the proxy (p50
# of 200 new connections each way, a small answer).  Prints rows in
# bench/run.sh's format on stdout; never fails on time.
#   bench/egress.sh OUT        (make bench runs it where user namespaces work)
# The proxy is a third process on the data path (server -> proxy -> curl):
# on a loaded host its CPU share decides the ratio, so its CPU seconds per
# GiB (the airlock process, sandbox setup included) and the sandbox's are
# printed too.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
B=${AIRLOCK_BUILD:-$root/build}
AL="$B/airlock"
OUT=$1
N=${BENCH_EGRESS_N:-3}
SIZE=$((1 << 30))

egress_bench egress
R=(run p --image curl --network egress --allow "127.0.0.1:$PORT" --egress-bytes 2G
	--egress-connections 1000 --timeout 600 --cpus 2 --)

echo "== 1 GiB from a loopback server: through the egress proxy vs direct (median of $N)" >&2
direct=$(for _ in $(seq "$N"); do
	curl -s -o /dev/null -w '%{speed_download}\n' "$U/bytes/$SIZE"; done | median)
proxied=$(for _ in $(seq "$N"); do
	"$AL" "${R[@]}" curl -s -o /dev/null -w '%{speed_download}\n' "$U/bytes/$SIZE" 2>/dev/null; done | median)
# airlock's rusage includes the sandbox it waited for (curl): the run's
# record has the sandbox's own (its cgroup), which is taken off
/usr/bin/time -o "$OUT/egress-time" -f '%S %U' "$AL" "${R[@]:0:2}" --json "${R[@]:2}" \
	curl -s -o /dev/null "$U/bytes/$SIZE" >"$OUT/egress-run.json" 2>/dev/null
sbx=$(python3 -c 'import json,sys; u=json.load(open(sys.argv[1]))["usage"]
print("%.2f" % ((u["cpu_user_ms"] + u["cpu_sys_ms"]) / 1000))' "$OUT/egress-run.json")
cpu=$(tail -1 "$OUT/egress-time" | awk -v s="$sbx" '{printf "%.2f", $1 + $2 - s}')
mb() { awk -v v="$1" 'BEGIN { printf "%.0f", v / 1048576 }'; }
row "egress: 1 GiB download (MiB/s)" "$(mb "$proxied")" "$(mb "$direct")" "$(ratio "$proxied" "$direct")" ">= 0.80 x direct (same curl, same server)"
row "egress: the proxy's CPU for 1 GiB (s)" "$cpu" "-" "-" "airlock's user+sys, the run's setup included, the sandbox's not"
row "egress: the sandbox's CPU for 1 GiB (s)" "$sbx" "-" "-" "curl in the sandbox (its cgroup's user+sys)"

echo "== latency of a new connection: through the proxy vs direct (p50 of 200)" >&2
# curl's URL glob: 200 requests, each on a new connection (Connection: close)
lat() { tr -d '\r' | sort -n | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)] * 1000}'; }
dl=$(curl -s -o /dev/null -H 'Connection: close' -w '%{time_total}\n' "$U/hello?[1-200]" | lat)
pl=$("$AL" "${R[@]}" curl -s -o /dev/null -H 'Connection: close' -w '%{time_total}\n' "$U/hello?[1-200]" 2>/dev/null | lat)
added=$(awk -v a="$pl" -v b="$dl" 'BEGIN { printf "%.3f", a - b }')
row "egress: new connection, p50 (ms)" "$pl" "$dl" "$(ratio "$pl" "$dl")" "added $added ms (<= 1 ms)"
