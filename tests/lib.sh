# TAP helpers for airlock's shell tests. Source it; then use ok/is/fails.
set -u
: "${AIRLOCK_BUILD:=$(cd "$(dirname "$0")/../.." && pwd)/build}"
AL="$AIRLOCK_BUILD/airlock"
T=$(mktemp -d "${TMPDIR:-/tmp}/airlock-test.XXXXXX")
export AIRLOCK_HOME="$T/home"
unset AIRLOCK_TENANT AIRLOCK_URL AIRLOCK_TOKEN
# the user's own config file (docs/cli.md) never reaches a test
export XDG_CONFIG_HOME="$T/.config"
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
	api_contract
	echo "1..$_n"
	[ "$_failed" -eq 0 ]
}

# ---- the API contract (docs/api.md) ------------------------------------------------
# Every answer a test gets from the daemon through curl (api() included) is
# recorded in $API_LOG: curl is this wrapper, which has curl dump the
# headers to a file of its own (copied to the caller's -D file), keeps a
# copy of a JSON body, leaves stdout, the caller's -o file and the exit
# status as curl makes them, and appends "ID METHOD URL EXIT" to
# $API_LOG/index.  done_testing then checks every
# answer against docs/openapi.json (tests/api/check.mjs answers): a route,
# status, content type, header or field the document does not declare is a
# failed test.
SRC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
API_LOG="$T/.api-log"
API_DOC="$SRC_ROOT/docs/openapi.json"
curl() {
	mkdir -p "$API_LOG"
	local rec
	rec=$(mktemp "$API_LOG/XXXXXXXX") || { command curl "$@"; return; }
	local args=() out="" hdr="" method="" url="" data="" a rc
	while [ $# -gt 0 ]; do
		a=$1; shift
		case $a in
		-o | --output) out=${1-}; shift; continue ;;
		-D | --dump-header) hdr=${1-}; shift; continue ;;
		-X | --request) method=${1-}; args+=("$a" "${1-}"); shift; continue ;;
		-X*) method=${a#-X} ;;
		-d | --data | --data-binary | --data-raw | --data-urlencode | -F | --form) data=POST; args+=("$a" "${1-}"); shift; continue ;;
		-T | --upload-file) data=PUT; args+=("$a" "${1-}"); shift; continue ;;
		-I | --head) data=HEAD ;;
		-H | --header | -w | --write-out | --cacert | -u | --user | -m | --max-time | --connect-timeout | -r | --range)
			args+=("$a" "${1-}"); shift; continue ;;
		http://* | https://*) url=$a ;;
		esac
		args+=("$a")
	done
	method=${method:-${data:-GET}}
	local body="$rec.b"
	[ -n "$out" ] && [ "$out" != /dev/null ] && body=$out
	command curl "${args[@]}" -D "$rec.h" -o "$body" >"$rec.w"
	rc=$?
	[ -n "$hdr" ] && cp "$rec.h" "$hdr"
	[ -z "$out" ] && [ -f "$rec.b" ] && cat "$rec.b"
	cat "$rec.w"
	# the checker reads JSON bodies only (the others can be large)
	if grep -qi '^content-type:[[:space:]]*application/json' "$rec.h" 2>/dev/null; then
		[ "$body" != "$rec.b" ] && [ -f "$body" ] && cp "$body" "$rec.b"
	else
		rm -f "$rec.b"
	fi
	printf '%s\t%s\t%s\t%s\n' "${rec##*/}" "$method" "$url" "$rc" >>"$API_LOG/index"
	return $rc
}

# api_contract: one TAP test, if the test got any answer from a daemon:
# every one obeys docs/openapi.json.
# AIRLOCK_API_LOG_KEEP=DIR keeps each test's answers in DIR/TEST, for
# check.mjs coverage.
api_contract() {
	[ -s "$API_LOG/index" ] || return 0
	[ -n "${AIRLOCK_API_LOG_KEEP:-}" ] && cp -r "$API_LOG" "$AIRLOCK_API_LOG_KEEP/$(basename "$0" .sh)"
	_n=$((_n + 1))
	if node "$SRC_ROOT/tests/api/check.mjs" answers "$API_DOC" "$API_LOG" >"$T/.contract" 2>&1; then
		echo "ok $_n - every answer the daemon gave obeys docs/openapi.json ($(head -1 "$T/.contract"))"
	else
		echo "not ok $_n - every answer the daemon gave obeys docs/openapi.json"
		_failed=$((_failed + 1))
		sed 's/^/# /' "$T/.contract" | head -60
	fi
}

# serve_start [OPTIONS...]: start 'airlock serve' on 127.0.0.1, any port;
# sets $URL and $SERVE_PID; its stderr (the request log) goes to $T/serve.log
serve_start() {
	# emptied here, not only by the redirection: the background shell may
	# not have truncated it yet when the loop below first reads it, and a
	# previous daemon's "listening on" line would give its (closed) port
	: >"$T/serve.out"
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
# need_vm: the microVM backend's prerequisites (QEMU, the guest built by make)
need_vm() {
	need_userns
	[ -x "${AIRLOCK_QEMU:-/usr/bin/qemu-system-x86_64}" ] || skip_all "no QEMU (qemu-system-x86)"
	[ -r "$AIRLOCK_BUILD/guest/vmlinux" ] && [ -r "$AIRLOCK_BUILD/guest/initramfs.cpio" ] ||
		skip_all "no guest kernel and initramfs (make builds them: scripts/mkguest.sh)"
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

# ---- egress (t013x, s005x) -------------------------------------------------------
# image_with DIR NAME BIN...: the busybox image plus host binaries and the
# libraries they load (ldd), imported as image NAME
image_with() {
	local dir=$1 name=$2 b lib; shift 2
	cp -a "$AIRLOCK_BUILD/image/busybox" "$dir"
	for b in "$@"; do
		mkdir -p "$dir$(dirname "$b")"; cp -L "$b" "$dir$b"
		for lib in $(ldd "$b" | awk '/=> \//{print $3} /^\t\/[^ ]*ld-linux/{print $1}'); do
			mkdir -p "$dir$(dirname "$lib")"; cp -L "$lib" "$dir$lib"
		done
	done
	"$AL" image import "$dir" --name "$name" >/dev/null
}
# pg_server: a throwaway PostgreSQL cluster (Debian's, tests/servers/
# postgres.sh) in $T/pg for this test file, stopped at exit.  Sets $H and
# $P (its socket directory and port) and su_sql (psql as the postgres
# superuser on database ${DB:-postgres}).
pg_server() {
	PG="$SRC_ROOT/tests/servers/postgres.sh"
	need_root # initdb runs as the postgres user
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && id postgres >/dev/null 2>&1 ||
		skip_all "no PostgreSQL server (scripts/deps.sh installs postgresql)"
	chmod 711 "$T" # the postgres user reaches its directory inside
	read -r H P < <("$PG" start "$T/pg") || skip_all "PostgreSQL did not start (above)"
	trap '"$PG" stop "$T/pg"; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
}
su_sql() { runuser -u postgres -- psql -h "$H" -p "$P" -d "${DB:-postgres}" -v ON_ERROR_STOP=1 -qtAX "$@"; }
# pg_metadata: on pg_server's cluster, the database airlock owned by
# airlock_owner, migrated, with the service role airlock (a test: migrate);
# exports AIRLOCK_METADATA as the service role.
pg_metadata() {
	su_sql -c "CREATE ROLE airlock_owner LOGIN" -c "CREATE ROLE airlock LOGIN NOSUPERUSER NOBYPASSRLS" \
		-c "CREATE DATABASE airlock OWNER airlock_owner" -c "REVOKE ALL ON DATABASE airlock FROM PUBLIC" \
		-c "GRANT CONNECT ON DATABASE airlock TO airlock"
	run "$AL" --metadata "postgresql://airlock_owner@/airlock?host=$H&port=$P" admin metadata migrate \
		--service-role airlock
	is "$rc" 0 "migrate"
	export AIRLOCK_METADATA="postgresql://airlock@/airlock?host=$H&port=$P"
}

# s3_server: a real S3 server for this test file (Debian's Swift with
# s3api, tests/servers/swift.sh) in $T/swift, stopped at exit (and the
# fault proxy, if one was started), with a bucket "blobs".  Sets $EP (its
# endpoint) and the credentials in the environment.  s3 METHOD PATH
# [curl args]: a signed request of the test's own (not airlock's).
s3_server() {
	SW="$SRC_ROOT/tests/servers/swift.sh"
	command -v swift-proxy-server >/dev/null && command -v memcached >/dev/null ||
		skip_all "no OpenStack Swift / memcached (scripts/deps.sh installs them)"
	EP=$("$SW" start "$T/swift") || skip_all "Swift did not start (above)"
	trap '[ -n "${PROXY:-}" ] && kill "$PROXY"; "$SW" stop "$T/swift"; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
	export AWS_ACCESS_KEY_ID=test:tester AWS_SECRET_ACCESS_KEY=testing
	unset AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_REGION AWS_DEFAULT_REGION
	s3 PUT blobs -f -o /dev/null
}
s3() {
	local m=$1 p=$2
	shift 2
	command curl -s --netrc-file "$T/swift/netrc" --aws-sigv4 aws:amz:us-east-1:s3 \
		-H "x-amz-content-sha256: $(printf '' | sha256sum | cut -c1-64)" -X "$m" "$EP/$p" "$@"
}
# fault_proxy: tests/servers/fault-proxy.py in front of $EP, its plan in
# $PLAN and its log in $LOG; sets $PROXY (its pid) and $PEP (its endpoint).
fault_proxy() {
	PLAN="$T/plan" LOG="$T/proxy.log"
	: >"$LOG"
	python3 "$SRC_ROOT/tests/servers/fault-proxy.py" "${EP##*:}" "$PLAN" "$LOG" >"$T/proxy.port" &
	PROXY=$!
	for _ in $(seq 100); do [ -s "$T/proxy.port" ] && break; sleep 0.05; done
	PEP="http://127.0.0.1:$(cat "$T/proxy.port")"
}

# integ_target: a loopback HTTPS server for integration calls
# (tests/helpers/integ_target.py) with a test CA ($T/ca.pem, the
# certificate names localhost and 127.0.0.1), its requests logged in
# $T/log.  Sets $SRV (its pid: the caller's EXIT trap kills it), $PORT,
# $BASE (https://127.0.0.1:$PORT/api/v1), and a fresh $SECRET, also in
# $T/secret.
integ_target() {
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca.key" -out "$T/ca.pem" -days 2 \
		-subj "/CN=airlock test CA" >/dev/null 2>&1
	openssl req -newkey rsa:2048 -nodes -keyout "$T/srv.key" -out "$T/srv.csr" \
		-subj "/CN=localhost" >/dev/null 2>&1
	printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$T/san.ext"
	openssl x509 -req -in "$T/srv.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
		-out "$T/srv.pem" -days 2 -extfile "$T/san.ext" >/dev/null 2>&1
	python3 "$SRC_ROOT/tests/helpers/integ_target.py" "$T/srv.pem" "$T/srv.key" "$T/log" \
		"$T/port" 2>"$T/srv.err" &
	SRV=$!
	local i
	for i in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
	PORT=$(cat "$T/port")
	BASE="https://127.0.0.1:$PORT/api/v1"
	SECRET="tok-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
	printf '%s\n' "$SECRET" >"$T/secret"
}

# netns_target: a test host in a network namespace of this test's own,
# reached from the host over a veth pair: sets $TNS (its namespace), $TIP
# (its address), $HIP (the host's end), $TLOG (every TCP connection and
# UDP datagram it got), and serves HTTP on 80, HTTPS on 443 (a test CA:
# $T/ca.pem; the certificate names web.airlock.test, other.airlock.test
# and $TIP) and UDP on 53 (tests/helpers/egress_target.py).  Removed at exit.
netns_target() {
	local sub=$(( $$ % 250 + 1 ))
	TNS="al-egress-$$"; TIP="10.231.$sub.2"; HIP="10.231.$sub.1"; TLOG="$T/target.log"
	local va="alv$$a" vb="alv$$b"
	_NETNS_VETH=$va
	trap _netns_cleanup EXIT
	ip netns add "$TNS" && ip link add "$va" type veth peer name "$vb" &&
		ip link set "$vb" netns "$TNS" && ip addr add "$HIP/30" dev "$va" &&
		ip link set "$va" up && ip netns exec "$TNS" ip addr add "$TIP/30" dev "$vb" &&
		ip netns exec "$TNS" ip link set "$vb" up && ip netns exec "$TNS" ip link set lo up ||
		return 1
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca.key" -out "$T/ca.pem" -days 2 \
		-subj "/CN=airlock test CA" >/dev/null 2>&1 &&
	openssl req -newkey rsa:2048 -nodes -keyout "$T/srv.key" -out "$T/srv.csr" \
		-subj "/CN=web.airlock.test" >/dev/null 2>&1 &&
	printf 'subjectAltName=DNS:web.airlock.test,DNS:other.airlock.test,IP:%s\n' "$TIP" >"$T/san.ext" &&
	openssl x509 -req -in "$T/srv.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
		-out "$T/srv.pem" -days 2 -extfile "$T/san.ext" >/dev/null 2>&1 || return 1
	: >"$TLOG"
	# not a job of this shell: killed at exit with the namespace, silently
	(ip netns exec "$TNS" python3 "$SRC_ROOT/tests/helpers/egress_target.py" "$TIP" "$TLOG" \
		--https "$T/srv.pem" "$T/srv.key" >"$T/target.out" 2>&1 &)
	local i
	for i in $(seq 100); do grep -q ready "$T/target.out" && return 0; sleep 0.05; done
	cat "$T/target.out" | sed 's/^/# /'; return 1
}
# at exit: the test host, its namespace and veth, the pids in
# $T/cleanup.pids (a test's own servers), then $T
_netns_cleanup() {
	[ -f "$T/cleanup.pids" ] && xargs -r kill <"$T/cleanup.pids" 2>/dev/null
	ip netns pids "$TNS" 2>/dev/null | xargs -r kill -9
	ip netns del "$TNS" 2>/dev/null; ip link del "$_NETNS_VETH" 2>/dev/null
	chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"
}
# with_hosts FILE CMD...: CMD with FILE as /etc/hosts (a mount namespace of
# its own: the host's file is untouched), so a test decides what the
# proxy's resolver answers
with_hosts() {
	local f=$1; shift
	unshare -m --propagation private sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$f" "$@"
}
