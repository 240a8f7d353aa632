#!/bin/bash
# Reading a big run output through the daemon (issue 11, item 7): a run
# prints 200 MB (explicit --output-limit, so a lower default ceiling does
# not cut it), then 16 clients read it at once with curl, each whole; the
# daemon's RSS is sampled every 20 ms.  Peer: the same daemon answering by
# loading the output whole (the code before) went from 88 to 872 MB on one
# reader.  Target: flat (+/- 10 MiB).  Prints rows in bench/run.sh's format;
# never fails on time.  bench/output.sh OUT
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
B=${AIRLOCK_BUILD:-$root/build}
AL="$B/airlock"
OUT=$1
MB=${BENCH_OUTPUT_MB:-200}
CLIENTS=${BENCH_OUTPUT_CLIENTS:-16}
H="$OUT/homeout"; rm -rf "$H"; A() { "$AL" --home "$H" "$@"; }
A init >/dev/null
mkdir -p "$OUT/small"; echo hi > "$OUT/small/a.txt"
A project create p --from "$OUT/small" >/dev/null
A admin principal create bench --role author,reviewer >/dev/null
TOK=$(A admin token create bench 2>/dev/null)
echo "== a run printing $MB MB" >&2
A run p --output-limit $((MB + 16))M -- sh -c "yes 'airlock output benchmark line 0123456789' | head -c $((MB * 1000000))" >/dev/null 2>&1
RUN=$(A runs p | tail -1 | cut -d' ' -f1)
"$AL" --home "$H" serve --listen 127.0.0.1:0 >"$OUT/serve-out.out" 2>"$OUT/serve-out.log" &
PID=$!
trap 'kill -TERM $PID 2>/dev/null; wait $PID 2>/dev/null' EXIT
for _ in $(seq 100); do URL=$(sed -n 's/^airlock serve: listening on //p' "$OUT/serve-out.out"); [ -n "$URL" ] && break; sleep 0.05; done
rss() { awk '/^VmRSS/ {print $2}' "/proc/$PID/status"; }
# warm: every request thread opens (and keeps) its store handle first
for _ in 1 2 3 4; do
	w=()
	for i in $(seq "$CLIENTS"); do curl -s -H "Authorization: Bearer $TOK" "$URL/api/runs/$RUN" >/dev/null & w+=($!); done
	wait "${w[@]}"
done
idle=$(rss)
echo "== $CLIENTS clients read it at once" >&2
s=$(date +%s%N)
pids=()
for i in $(seq "$CLIENTS"); do
	curl -s -H "Authorization: Bearer $TOK" -o /dev/null -w '%{size_download}\n' "$URL/api/runs/$RUN/output?stream=stdout" >"$OUT/got.$i" &
	pids+=($!)
done
peak=$idle
while kill -0 "${pids[@]}" 2>/dev/null || pgrep -P $$ curl >/dev/null; do
	r=$(rss); [ "$r" -gt "$peak" ] && peak=$r
	sleep 0.02
	running=0; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && running=1; done
	[ $running = 0 ] && break
done
wait "${pids[@]}"
ms=$(( ($(date +%s%N) - s) / 1000000 ))
after=$(rss)
whole=0; for i in $(seq "$CLIENTS"); do [ "$(cat "$OUT/got.$i")" = $((MB * 1000000)) ] && whole=$((whole + 1)); done
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
row "daemon RSS idle before the readers (MiB)" "$(mib "$idle")" "88" "-" "the issue's figure, other build"
row "peak RSS, $CLIENTS readers of a $MB MB output (MiB)" "$(mib "$peak")" "872" "-" "+$(mib $((peak - idle))) MiB; <= +10 MiB (peer: 1 reader, whole)"
row "RSS after the readers (MiB)" "$(mib "$after")" "-" "-" "+$(mib $((after - idle))) MiB over idle"
row "$CLIENTS x $MB MB read (ms, MB/s)" "$ms" "-" "-" "$(( CLIENTS * MB * 1000 / (ms > 0 ? ms : 1) )) MB/s; $whole of $CLIENTS whole"
