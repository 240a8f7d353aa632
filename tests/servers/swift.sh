#!/bin/bash
# A real S3 server for the tests: Debian's OpenStack Swift, one node on
# 127.0.0.1 (proxy with s3api + tempauth, account, container and object
# servers), rings of one device and one replica, its storage in DIR.
#   tests/servers/swift.sh start DIR    prints the S3 endpoint (http://127.0.0.1:PORT)
#   tests/servers/swift.sh stop DIR     stops what start started (by pid)
# S3 credentials: access key "test:tester", secret "testing" (tempauth).
# The Swift API (for the tests' own checks): user test:tester key testing,
# account AUTH_test.
set -eu
cmd=${1:?start|stop} D=${2:?directory}

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

if [ "$cmd" = stop ]; then
	for f in "$D"/run/*.pid; do
		[ -e "$f" ] || continue
		kill "$(cat "$f")" 2>/dev/null || true
	done
	for f in "$D"/run/*.pid; do
		[ -e "$f" ] || continue
		p=$(cat "$f")
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null || true
		rm -f "$f"
	done
	exit 0
fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
for b in swift-ring-builder swift-proxy-server swift-account-server swift-container-server \
	swift-object-server memcached; do
	command -v $b >/dev/null || { echo "swift.sh: $b missing (scripts/deps.sh)" >&2; exit 1; }
done

mkdir -p "$D/srv/d1" "$D/run" "$D/log" "$D/cache"
user=$(id -un)
pp=$(free_port) ap=$(free_port) cp=$(free_port) op=$(free_port) mp=$(free_port)
cat >"$D/swift.conf" <<CONF
[swift-hash]
swift_hash_path_suffix = airlock-tests
swift_hash_path_prefix = airlock-tests
[storage-policy:0]
name = Policy-0
default = yes
CONF
common="[DEFAULT]
bind_ip = 127.0.0.1
swift_dir = $D
devices = $D/srv
mount_check = false
disable_fallocate = true
user = $user
workers = 0
log_name = swift
log_address = $D/log/nonexistent
log_level = WARNING
"
printf '%sbind_port = %s\n[pipeline:main]\npipeline = account-server\n[app:account-server]\nuse = egg:swift#account\n' \
	"$common" "$ap" >"$D/account-server.conf"
printf '%sbind_port = %s\n[pipeline:main]\npipeline = container-server\n[app:container-server]\nuse = egg:swift#container\n' \
	"$common" "$cp" >"$D/container-server.conf"
printf '%sbind_port = %s\n[pipeline:main]\npipeline = object-server\n[app:object-server]\nuse = egg:swift#object\n' \
	"$common" "$op" >"$D/object-server.conf"
cat >"$D/proxy-server.conf" <<CONF
${common}bind_port = $pp
[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache s3api tempauth slo dlo proxy-logging proxy-server
[app:proxy-server]
use = egg:swift#proxy
allow_account_management = true
account_autocreate = true
[filter:s3api]
use = egg:swift#s3api
location = us-east-1
[filter:tempauth]
use = egg:swift#tempauth
user_admin_admin = admin .admin .reseller_admin
user_test_tester = testing .admin
[filter:catch_errors]
use = egg:swift#catch_errors
[filter:gatekeeper]
use = egg:swift#gatekeeper
[filter:healthcheck]
use = egg:swift#healthcheck
[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:$mp
[filter:slo]
use = egg:swift#slo
[filter:dlo]
use = egg:swift#dlo
[filter:proxy-logging]
use = egg:swift#proxy_logging
CONF
for r in account:$ap container:$cp object:$op; do
	name=${r%%:*} port=${r##*:}
	swift-ring-builder "$D/$name.builder" create 4 1 1 >/dev/null
	swift-ring-builder "$D/$name.builder" add r1z1-127.0.0.1:$port/d1 100 >/dev/null
	swift-ring-builder "$D/$name.builder" rebalance >/dev/null 2>&1 || true
done
# tempauth keeps its tokens in memcached, even for S3 requests
setsid memcached -l 127.0.0.1 -p "$mp" -U 0 -m 16 -u "$user" >"$D/log/memcached.log" 2>&1 </dev/null &
echo $! >"$D/run/memcached.pid"
for s in account container object proxy; do
	setsid swift-$s-server "$D/$s-server.conf" -v >"$D/log/$s.log" 2>&1 </dev/null &
	echo $! >"$D/run/$s.pid"
done
# ready when the proxy answers S3 (SigV4): a bucket made and listed.  The
# access key has a colon, which curl's --user cannot carry: a netrc file.
printf 'machine 127.0.0.1 login test:tester password testing\n' >"$D/netrc"
deadline=$((SECONDS + 60))
while :; do
	if command curl -sf -o /dev/null --netrc-file "$D/netrc" --aws-sigv4 "aws:amz:us-east-1:s3" \
		-H "x-amz-content-sha256: $(printf '' | sha256sum | cut -c1-64)" -X PUT "http://127.0.0.1:$pp/airlock-probe" 2>/dev/null; then
		break
	fi
	if [ $SECONDS -ge $deadline ]; then
		echo "swift.sh: Swift did not start within 60 s; logs:" >&2
		tail -n 5 "$D"/log/*.log >&2
		"$0" stop "$D"
		exit 1
	fi
	for s in account container object proxy; do
		kill -0 "$(cat "$D/run/$s.pid")" 2>/dev/null && continue
		echo "swift.sh: swift-$s-server exited; its log:" >&2
		tail -n 20 "$D/log/$s.log" >&2
		"$0" stop "$D"
		exit 1
	done
	sleep 0.2
done
echo "http://127.0.0.1:$pp"
