#!/bin/bash
# A real PostgreSQL for the tests: Debian's, a throwaway cluster made by
# initdb as the postgres user in DIR/data, listening on a Unix socket in
# DIR/sock and on 127.0.0.1:PORT.  DIR's parents must be traversable by the
# postgres user.
#   tests/servers/postgres.sh start DIR   prints "HOST PORT" (HOST: the socket directory)
#   tests/servers/postgres.sh stop DIR
# The superuser is postgres (peer over the socket: psql as root with
# "runuser -u postgres --"); trust authentication for every local
# connection, so a test can log in as any role it made.
set -eu
cmd=${1:?start|stop} D=${2:?directory}
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
as_pg() { if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi; }
if [ "$cmd" = stop ]; then
	[ -f "$D/data/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$D/data" -m immediate -w stop >/dev/null 2>&1
	exit 0
fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ -x "$PGBIN/initdb" ] || { echo "postgres.sh: no PostgreSQL server (scripts/deps.sh: postgresql)" >&2; exit 1; }
mkdir -p "$D/sock"
chown postgres: "$D" "$D/sock"
chmod 700 "$D"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_pg "$PGBIN/initdb" -D "$D/data" -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 >"$D/initdb.log" 2>&1 ||
	{ tail -5 "$D/initdb.log" >&2; exit 1; }
# fsync stays on: the figures and the crash behaviour are the real ones
as_pg "$PGBIN/pg_ctl" -D "$D/data" -l "$D/server.log" -w -t 60 \
	-o "-c listen_addresses=127.0.0.1 -p $port -k $D/sock -c max_connections=50" start >/dev/null ||
	{ tail -5 "$D/server.log" >&2; exit 1; }
echo "$D/sock $port"
