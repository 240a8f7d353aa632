#!/bin/bash
# Daemon figures (issue 6), side by side in the same run: GET a project's
# head under 16 clients (wrk); POST a /bin/true run under 1 and 16 clients
# against the embedded `airlock run` under the same load (bench/apiload.py
# drives both); the daemon's RSS idle, under load and after.  Prints rows in
# bench/run.sh's format; never fails on time.  bench/api.sh OUT
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
B=${AIRLOCK_BUILD:-$root/build}
AL="$B/airlock"
OUT=$1
SECS=${BENCH_API_SECS:-10}
H="$OUT/homeapi"; rm -rf "$H"; A() { "$AL" --home "$H" "$@"; }
A init >/dev/null
# 16 clients of one principal: the run policy's runs in flight (default 16
# per tenant, 8 per principal) would refuse half of them with 503
A admin policy set --deployment --runs-per-tenant 64 --runs-per-principal 64 >/dev/null
mkdir -p "$OUT/small"; echo hi > "$OUT/small/a.txt"
A project create p --from "$OUT/small" >/dev/null
A admin principal create bench --role author,agent,reviewer >/dev/null
TOK=$(A admin token create bench 2>/dev/null)
A run p -- true >/dev/null 2>&1   # the image and the layers, once
"$AL" --home "$H" serve --listen 127.0.0.1:0 --max-runs 64 >"$OUT/serve.out" 2>"$OUT/serve.log" &
PID=$!
trap 'kill -TERM $PID 2>/dev/null; wait $PID 2>/dev/null' EXIT
for _ in $(seq 100); do URL=$(sed -n 's/^airlock serve: listening on //p' "$OUT/serve.out"); [ -n "$URL" ] && break; sleep 0.05; done
rss() { awk '/^VmRSS/ {print $2}' "/proc/$PID/status"; }
hwm() { awk '/^VmHWM/ {print $2}' "/proc/$PID/status"; }
curl -s -H "Authorization: Bearer $TOK" "$URL/api/projects/p" >/dev/null
idle=$(rss)

echo "== GET /api/projects/p, 16 clients, ${SECS}s (wrk)" >&2
cat >"$OUT/get.lua" <<LUA
wrk.headers["Authorization"] = "Bearer $TOK"
done = function(summary, latency, requests)
  io.stderr:write(string.format("WRK %.2f %.2f %.0f\n", latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.requests / (summary.duration / 1e6)))
end
LUA
wrk -t2 -c16 -d"${SECS}s" -s "$OUT/get.lua" "$URL/api/projects/p" >/dev/null 2>"$OUT/wrk.txt"
read -r _ g50 g99 grps < <(grep '^WRK' "$OUT/wrk.txt")
get_peak=$(hwm)
row "GET project head, 16 clients: p50/p99 (ms)" "$g50/$g99" "-" "-" "$grps requests/s"

echo "== POST run /bin/true vs airlock run, 1 client, ${SECS}s" >&2
read -r a50 a99 arps afail < <(python3 "$root/bench/apiload.py" http "$URL" "$TOK" p 1 "$SECS")
read -r c50 c99 crps cfail < <(python3 "$root/bench/apiload.py" cli "$AL" "$H" p 1 "$SECS")
row "run /bin/true, 1 client: API vs CLI p50 (ms)" "$a50" "$c50" "$(ratio "$a50" "$c50")" "<= 1.5 x embedded; p99 $a99 vs $c99; $arps vs $crps runs/s"
# the whole recorded run made by the daemon (no process start, no store
# opened: what an agent on the API waits for, its HTTP included) beside a
# bare sandbox (issue 21's whole-run figure, which a run in its own CLI
# process cannot reach: bench/sandbox.sh)
if command -v bwrap >/dev/null; then
	bw=$(for _ in $(seq 11); do "$B/bench/timeit" bwrap --unshare-all --ro-bind / / /bin/true; done | median)
	bw=$(awk -v u="$bw" 'BEGIN { printf "%.1f", u / 1000 }')
	row "run /bin/true via the daemon vs bwrap (ms)" "$a50" "$bw" "$(ratio "$a50" "$bw")" "API p50, 1 client, recorded and durable; reported"
fi

echo "== POST run /bin/true vs airlock run, 16 clients, ${SECS}s" >&2
read -r b50 b99 brps bfail < <(python3 "$root/bench/apiload.py" http "$URL" "$TOK" p 16 "$SECS")
run_peak=$(hwm)
read -r d50 d99 drps dfail < <(python3 "$root/bench/apiload.py" cli "$AL" "$H" p 16 "$SECS")
row "run /bin/true, 16 clients: API vs CLI p50 (ms)" "$b50" "$d50" "$(ratio "$b50" "$d50")" "<= 1.5 x embedded; p99 $b99 vs $d99; $brps vs $drps runs/s"
[ "$afail$bfail$cfail$dfail" = 0000 ] || row "failed runs (API 1, API 16, CLI 1, CLI 16)" "$afail $bfail" "$cfail $dfail" "-" "expected 0"

sleep 3
after=$(rss)
row "daemon RSS idle (KiB)" "$idle" "-" "-" "< 32768 KiB"
row "daemon peak RSS, 16 clients GET / runs (KiB)" "$get_peak/$run_peak" "-" "-" \
	"+$(( (get_peak - idle) / 16 ))/+$(( (run_peak - idle) / 16 )) KiB per client (<= 1024)"
row "daemon RSS 3 s after the load (KiB)" "$after" "$idle" "$(ratio "$after" "$idle")" "back to idle"
