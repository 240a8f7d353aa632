# TAP helpers for airlock's shell tests. Source it; then use ok/is/fails.
set -u
: "${AIRLOCK_BUILD:=$(cd "$(dirname "$0")/../.." && pwd)/build}"
AL="$AIRLOCK_BUILD/airlock"
T=$(mktemp -d "${TMPDIR:-/tmp}/airlock-test.XXXXXX")
export AIRLOCK_HOME="$T/home"
unset AIRLOCK_TENANT
trap 'chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
_n=0
_failed=0

ok() { # ok DESCRIPTION -- COMMAND...   (passes when COMMAND exits 0)
	local desc=$1; shift; [ "${1:-}" = "--" ] && shift
	_n=$((_n + 1))
	if "$@" >"$T/.out" 2>&1; then echo "ok $_n - $desc"; else
		echo "not ok $_n - $desc"; _failed=$((_failed + 1))
		sed 's/^/# /' "$T/.out" | head -20
	fi
}

is() { # is GOT WANT DESCRIPTION
	_n=$((_n + 1))
	if [ "$1" = "$2" ]; then echo "ok $_n - $3"; else
		echo "not ok $_n - $3"; _failed=$((_failed + 1))
		printf '# got:  %s\n# want: %s\n' "$1" "$2"
	fi
}

like() { # like GOT PATTERN DESCRIPTION  (grep -E)
	_n=$((_n + 1))
	if printf '%s' "$1" | grep -Eq -- "$2"; then echo "ok $_n - $3"; else
		echo "not ok $_n - $3"; _failed=$((_failed + 1))
		printf '# got:  %s\n# want /%s/\n' "$1" "$2" | head -20
	fi
}

# run CMD...: sets $out (stdout), $err (stderr), $rc
run() {
	"$@" >"$T/.stdout" 2>"$T/.stderr"; rc=$?
	out=$(cat "$T/.stdout"); err=$(cat "$T/.stderr")
}

# store_state: a fingerprint of every stored object (for "nothing changed")
store_state() {
	local d="$AIRLOCK_HOME/tenants/${1:-default}"
	{
		find "$d/objects" -type f -printf '%P %s\n' | sort
		"$AL" snapshot list 2>/dev/null
		"$AL" fsck --json 2>/dev/null | sed 's/.*"objects":\([0-9]*\).*/objects=\1/'
	} | sha256sum | cut -c1-64
}

done_testing() {
	echo "1..$_n"
	[ "$_failed" -eq 0 ]
}

# serve_start [OPTIONS...]: start 'airlock serve' on 127.0.0.1, any port;
# sets $URL and $SERVE_PID; its stderr (the request log) goes to $T/serve.log
serve_start() {
	"$AL" serve --listen 127.0.0.1:0 "$@" >"$T/serve.out" 2>>"$T/serve.log" &
	SERVE_PID=$!
	local i
	for i in $(seq 100); do
		URL=$(sed -n 's/^airlock serve: listening on //p' "$T/serve.out" 2>/dev/null)
		[ -n "$URL" ] && return 0
		sleep 0.05
	done
	echo "# airlock serve did not start"; cat "$T/serve.log" | sed 's/^/# /'
	return 1
}

serve_stop() {
	[ -n "${SERVE_PID:-}" ] || return 0
	kill -TERM "$SERVE_PID" 2>/dev/null
	wait "$SERVE_PID" 2>/dev/null
	SERVE_PID=
}

# api METHOD PATH TOKEN [BODY]: sets $status and $out (the answer's body)
api() {
	local m=$1 p=$2 tok=$3; shift 3
	local args=(-s -o "$T/.api" -w '%{http_code}' -X "$m")
	[ -n "$tok" ] && args+=(-H "Authorization: Bearer $tok")
	[ $# -gt 0 ] && args+=(-H 'Content-Type: application/json' --data-binary "$1")
	status=$(curl "${args[@]}" "$URL/api$p")
	out=$(cat "$T/.api")
}

# jq-less JSON field: echo JSON | field a.b.0.c
field() {
	python3 -c 'import json,sys
d=json.load(sys.stdin)
for k in sys.argv[1].split("."):
    d=d[int(k)] if isinstance(d,list) else d[k]
print(d if not isinstance(d,(dict,list)) else json.dumps(d,sort_keys=True))' "$1"
}

# prereq_required: whether a missing prerequisite is a failure.  .ci/run
# sets AIRLOCK_REQUIRE_SANDBOX=1 (CI=1 does the same), so that CI cannot pass
# with the sandbox or the API untested; on a laptop a test skips instead.
prereq_required() { [ -n "${AIRLOCK_REQUIRE_SANDBOX:-}" ] || [ -n "${CI:-}" ]; }
# skip_all REASON: the test cannot run here.  The only place a test skips
# (no test prints a SKIP of its own): under prereq_required it fails.
skip_all() {
	if prereq_required; then
		echo "not ok 1 - prerequisite missing (AIRLOCK_REQUIRE_SANDBOX or CI is set): $*"
		echo "1..1"; exit 1
	fi
	echo "1..0 # SKIP $*"; exit 0
}
# nobody_airlock DIR: a copy of the build (airlock, airlock-init, the
# busybox image) that the user nobody can run, whatever the checkout's modes;
# prints the path of its airlock
nobody_airlock() {
	mkdir -p "$1/bin"
	cp "$AL" "$AIRLOCK_BUILD/airlock-init" "$1/bin/"
	cp -a "$AIRLOCK_BUILD/image" "$1/bin/"
	chmod -R a+rX "$1"
	echo "$1/bin/airlock"
}
need_root() { [ "$(id -u)" = 0 ] || skip_all "needs root"; }
need_userns() { unshare -U true 2>/dev/null || skip_all "no unprivileged user namespaces"; }
# have_userns: for a test whose parts without a sandbox always run.  True
# when user namespaces work; false when they do not (said as a TAP comment),
# and under prereq_required a failed test instead.
have_userns() {
	unshare -U true 2>/dev/null && return 0
	_n=$((_n + 1))
	if prereq_required; then
		echo "not ok $_n - user namespaces are missing (AIRLOCK_REQUIRE_SANDBOX or CI is set)"
		_failed=$((_failed + 1))
	else
		echo "ok $_n - # SKIP the parts that need a sandbox: no user namespaces"
	fi
	return 1
}
