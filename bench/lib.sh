# Helpers the benchmarks share; each sources it after setting root:
#   . "$root/bench/lib.sh"
# Figures are printed, never judged: a bench does not fail on time.

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }   # ms since a date +%s%N
us() { echo $(( ($(date +%s%N) - $1) / 1000 )); }      # µs since a date +%s%N
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# a command's wall time from its fork to its exit (bench/timeit: two
# `date` calls around it would add date's own start, about 1 ms); a shell
# function (vm.sh's boot, seconds long) between two dates
time_us() {
	if [ "$(type -t "$1")" = file ]; then "${B:?}/bench/timeit" "$@"; return; fi
	local s; s=$(date +%s%N); "$@" >/dev/null 2>&1; us "$s"
}
time_ms() { awk -v u="$(time_us "$@")" 'BEGIN { printf "%.1f\n", u / 1000 }'; }
# a / b with three decimals (0 when b is 0)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
# one row of bench/run.sh's table: figure, airlock, peer, ratio, note
row() { printf '%-46s %12s %12s %8s   %s\n' "$@"; }
# a field of the JSON on stdin, by dotted path: field usage.wall_ms
field() { python3 -c 'import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d=d[k]
print(d)' "$1"; }

# egress_bench NAME: a home ($H, exported as AIRLOCK_HOME) with a project p,
# an image "curl" (busybox plus the host's curl and its libraries) and a
# loopback HTTP server (tests/helpers/egress_target.py) on $PORT ($U),
# killed at exit, which the deployment policy lets runs reach.  Needs $B,
# $OUT and $AL.
egress_bench() {
	H="$OUT/$1-home"; rm -rf "$H" "$OUT/$1-img" "$OUT/$1-src"; mkdir -p "$OUT/$1-src"
	export AIRLOCK_HOME="$H"
	"$AL" init >/dev/null
	"$AL" project create p --from "$OUT/$1-src" >/dev/null
	local I="$OUT/$1-img" f
	cp -a "$B/image/busybox" "$I"
	for f in /usr/bin/curl $(ldd /usr/bin/curl | awk '/=> \//{print $3} /^\t\/[^ ]*ld-linux/{print $1}'); do
		mkdir -p "$I$(dirname "$f")"; cp -L "$f" "$I$f"
	done
	"$AL" image import "$I" --name curl >/dev/null
	PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	python3 "$root/tests/helpers/egress_target.py" 127.0.0.1 "$OUT/$1-target.log" --http-port "$PORT" \
		--no-udp >"$OUT/$1-target.out" 2>&1 &
	SRV=$!
	trap 'kill $SRV 2>/dev/null' EXIT
	for _ in $(seq 100); do grep -q ready "$OUT/$1-target.out" 2>/dev/null && break; sleep 0.05; done
	"$AL" admin policy set --deployment --egress-allow "127.0.0.1:$PORT" --max-egress-bytes 4G >/dev/null
	U="http://127.0.0.1:$PORT"
}
