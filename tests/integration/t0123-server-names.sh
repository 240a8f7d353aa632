#!/bin/bash
# The CLI as a client, for people: airlock whoami over --server (the token's
# principal, tenant, roles); --tenant with --server refused; a known path
# with another method is 405 MethodNotAllowed with an Allow header; paths
# in a draft accepted as completion writes them (./a/, b/).
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S/dir"; echo one > "$S/a"; echo x > "$S/dir/x"
"$AL" project create p --from "$S" >/dev/null
"$AL" admin principal create au --role author,reviewer >/dev/null
AU=$("$AL" admin token create au 2>/dev/null)
serve_start
export AIRLOCK_TOKEN="$AU"

run "$AL" --server "$URL" whoami
is "$rc" 0 "whoami --server"
like "$out" "principal  au" "  the token's principal"
like "$out" "tenant     default" "  its tenant"
like "$out" "roles      author,reviewer" "  its roles"
like "$out" "token      t[0-9a-f]+" "  the token's id"
like "$out" "created    20[0-9-]{8} [0-9:]{5} UTC, " "  when the principal was made, for people"
run "$AL" --server "$URL" whoami --json
like "$out" '^\{.*"name":"au".*\}$' "whoami --server --json: the API's answer"
run env AIRLOCK_TOKEN=bogus "$AL" --server "$URL" whoami
is "$rc" 10 "whoami with a bad token: unauthorized (10)"
run "$AL" --server "$URL" --tenant other whoami
is "$rc" 2 "--tenant with --server: usage error"

status=$(curl -s -D "$T/h" -o "$T/b" -w '%{http_code}' -X DELETE -H "Authorization: Bearer $AU" "$URL/api/projects")
is "$status" 405 "DELETE /api/projects: 405"
like "$(tr -d '\r' < "$T/h")" "
[Aa]llow: GET, POST" "  with Allow naming the path's methods"
like "$(cat "$T/b")" '"code":"MethodNotAllowed"' "  and the code MethodNotAllowed"
status=$(curl -s -D "$T/h" -o "$T/b" -w '%{http_code}' -X PUT -H "Authorization: Bearer $AU" "$URL/api/whoami")
is "$status" 405 "PUT /api/whoami: 405"
like "$(tr -d '\r' < "$T/h")" "
[Aa]llow: GET" "  Allow: GET"
status=$(curl -s -o "$T/b" -w '%{http_code}' -X GET -H "Authorization: Bearer $AU" "$URL/api/nosuch")
is "$status" 404 "an unknown path stays 404 NotFound"
serve_stop

# draft paths as a shell's completion writes them
echo two > "$S/a"; echo y > "$S/dir/x"; echo z > "$S/new"
D=$("$AL" draft create p --from "$S")
run "$AL" apply "$D" --accept ./dir/ --json
is "$rc" 0 "apply --accept ./dir/: accepted"
like "$out" '"paths":\["dir"\]' "  as the path dir"
mkdir -p "$T/out"; "$AL" snapshot export p "$T/out/h" >/dev/null
is "$(cat "$T/out/h/dir/x")" y "  the head has dir/x's change"
is "$(cat "$T/out/h/a")" one "  and not a's"
D2=$("$AL" draft create p --from "$S")
run "$AL" apply "$D2" --accept-all --accept ./a
is "$rc" 2 "two modes are still refused"
run "$AL" apply "$D2" --accept ././a
is "$rc" 0 "apply --accept ././a: the path a"
run "$AL" apply "$("$AL" draft create p --from "$S")" --accept ./
is "$rc" 6 "./ alone is not a path in the draft (6)"
done_testing
