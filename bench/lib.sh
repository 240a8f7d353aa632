# Helpers the benchmarks share; each sources it after setting root:
#   . "$root/bench/lib.sh"
# Figures are printed, never judged: a bench does not fail on time.

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }   # ms since a date +%s%N
us() { echo $(( ($(date +%s%N) - $1) / 1000 )); }      # µs since a date +%s%N
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_ms() { local s; s=$(date +%s%N); "$@" >/dev/null 2>&1; ms "$s"; }
time_us() { local s; s=$(date +%s%N); "$@" >/dev/null 2>&1; us "$s"; }
# a / b with three decimals (0 when b is 0)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
# one row of bench/run.sh's table: figure, airlock, peer, ratio, note
row() { printf '%-46s %12s %12s %8s   %s\n' "$@"; }
# a field of the JSON on stdin, by dotted path: field usage.wall_ms
field() { python3 -c 'import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d=d[k]
print(d)' "$1"; }
