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
