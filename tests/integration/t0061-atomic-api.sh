#!/bin/bash
# An API operation happens whole or not at all: `--server project create
# --from DIR` whose upload fails (over --upload-max, cut off half-way,
# refused) leaves no project, and a retry succeeds.  And the smaller answers
# of issue 12 item 10: snapshot list counts, apply --json's draft, reject_all.
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
"$AL" admin principal create au --role author >/dev/null
AU=$("$AL" admin token create au 2>/dev/null)
export AIRLOCK_TOKEN=$AU
S="$T/src"; mkdir -p "$S/d"; echo one > "$S/a.txt"; echo two > "$S/d/b.txt"
BIG="$T/big"; mkdir -p "$BIG"; head -c 200000 /dev/urandom > "$BIG/blob.bin"
serve_start --upload-max 64K --conn-timeout 2

# ---- an upload over --upload-max --------------------------------------------------
before=$(store_state)
run "$AL" --server "$URL" project create p --from "$BIG"
is "$rc" 8 "project create --from a tree over --upload-max: refused (exit 8, 413)"
api GET /projects/p "$AU"
is "$status" 404 "  no project is left"
is "$(store_state)" "$before" "  nothing is stored"
run "$AL" --server "$URL" project create p --from "$S"
is "$rc:$out" "0:$("$AL" snapshot import "$S")" "  the retry succeeds, its head DIR's snapshot"
like "$("$AL" project log p)" "^1 sha256:[0-9a-f]{64} create strict au: create project$" "  its one commit recorded"
run "$AL" --server "$URL" project create p --from "$S"
is "$rc" 7 "a second create of the same name: 409, exit 7"
like "$err" "already exists" "  saying so"

# ---- an upload cut off half-way: Content-Length larger than what is sent ------------
(cd "$S" && tar -cf "$T/tree.tar" .)
cut_off() { # cut_off PATH: send half of tree.tar under a Content-Length for all of it, then close
	python3 - "$URL" "$1" "$AU" "$T/tree.tar" <<'PY'
import socket, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); body = open(sys.argv[4], "rb").read()
s = socket.create_connection((u.hostname, u.port))
s.sendall(("POST /api%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
           "Content-Type: application/x-tar\r\nContent-Length: %d\r\n\r\n" % (sys.argv[2], sys.argv[3], len(body))).encode())
s.sendall(body[:len(body) // 2])
s.close()
PY
}
before=$(store_state)
cut_off /projects/q
# the daemon logs the request as aborted once it has seen the connection close
for i in $(seq 300); do grep -q "POST /api/projects/{name} 0 .*(aborted)" "$T/serve.log" && break; sleep 0.05; done
ok "the cut-off upload was seen and aborted" -- grep -q "POST /api/projects/{name} 0 .*(aborted)" "$T/serve.log"
api GET /projects/q "$AU"
is "$status" 404 "  no project is left"
is "$(store_state)" "$before" "  nothing is stored"
status=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" -H 'Content-Type: application/x-tar' \
	--data-binary @"$T/tree.tar" "$URL/api/projects/q")
is "$status" 201 "  the retry (whole) creates it: 201"
is "$(field head < "$T/.api"):$(field tree < "$T/.api")" "$("$AL" snapshot import "$S"):$("$AL" snapshot import "$S")" \
	"  its head is the uploaded tree, answered as 'tree' too"

# ---- refused bodies ----------------------------------------------------------------
before=$(store_state)
printf 'not a tar archive at all, not even close' > "$T/junk"
status=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" -H 'Content-Type: application/x-tar' \
	--data-binary @"$T/junk" "$URL/api/projects/r")
is "$status" 422 "a body that is not a tar archive: 422"
status=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" -H 'Content-Type: application/json' \
	--data-binary '{}' "$URL/api/projects/r")
is "$status" 422 "a body that is not declared a tar archive: 422"
like "$(cat "$T/.api")" "application/x-tar" "  saying what is expected"
status=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" -H 'Content-Type: application/x-tar' \
	--data-binary @"$T/tree.tar" "$URL/api/projects/-bad")
is "$status" 422 "a bad project name: 422"
api GET /projects/r "$AU"
is "$status:$(store_state)" "404:$before" "  no project, nothing stored"
serve_stop
unset AIRLOCK_TOKEN

done_testing
