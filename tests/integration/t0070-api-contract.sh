#!/bin/bash
# The API contract's checker (tests/api/check.mjs) catches what it is for:
# an invalid document, a route missing on either side, and an answer that
# the document does not declare (a renamed or missing field, a wrong type,
# an undeclared status, content type or route, a missing header), fed to it
# as recorded answers; and tests/lib.sh's curl records what a test receives
# (and changes nothing the test sees).  The daemon's real answers are
# checked by every API test's done_testing.
. "$(dirname "$0")/../lib.sh"
CHECK=("node" "$SRC_ROOT/tests/api/check.mjs")
DOC=$API_DOC
command -v node >/dev/null || skip_all "node is missing (scripts/deps.sh installs it)"
[ -d "$SRC_ROOT/tests/api/node_modules/ajv" ] || skip_all "tests/api/node_modules is missing (make check-api installs it)"

# edit OUT PYTHON: a copy of the document, changed by PYTHON (d is the document)
edit() {
	python3 - "$DOC" "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
}

# ---- the document --------------------------------------------------------------
run "${CHECK[@]}" lint "$DOC"
is "$rc:$out" "0:" "docs/openapi.json is a valid OpenAPI document and keeps the project's rules"
edit "$T/mt.json" 'd["paths"]["/api/projects/{name}/commits"]["post"]["requestBody"]["content"]["application/octet-stream"]["description"] = "a DeltaBundle"'
run "${CHECK[@]}" lint "$T/mt.json"
is "$rc" 1 "a description on a Media Type object (the issue's case) is refused by the validator"
like "$out" 'commits/post/requestBody/content/application~1octet-stream must NOT have additional properties' "…naming where"
edit "$T/default.json" 'r = d["paths"]["/api/whoami"]["get"]["responses"]; r["default"] = r.pop("401")'
run "${CHECK[@]}" lint "$T/default.json"
is "$rc" 1 "a default response (any status would pass) is refused"
like "$out" "GET /api/whoami: response 'default'" "…naming the operation"
edit "$T/open.json" 'del d["components"]["schemas"]["Project"]["additionalProperties"]'
run "${CHECK[@]}" lint "$T/open.json"
is "$rc" 1 "an object schema that does not say whether it allows undeclared fields is refused"
like "$out" '#/components/schemas/Project: an object schema says whether' "…naming it"
edit "$T/req.json" 'd["components"]["schemas"]["Project"]["required"].append("commit_count")'
run "${CHECK[@]}" lint "$T/req.json"
is "$rc" 1 "a required field that is not among the properties is refused"
edit "$T/kw.json" 'd["components"]["schemas"]["Project"]["properties"]["commits"]["minimun"] = 0'
run "${CHECK[@]}" lint "$T/kw.json"
is "$rc" 1 "a misspelt schema keyword is refused (it would check nothing)"

# ---- the route table, both ways ----------------------------------------------------
run "${CHECK[@]}" routes "$DOC" "$SRC_ROOT/src/server/server.c" "$SRC_ROOT/src/server/web.c"
is "$rc:$out" "0:" "every route of src/server/server.c (and page of web.c) is in the document, and every path of the document is served"
edit "$T/noroute.json" 'del d["paths"]["/api/whoami"]'
run "${CHECK[@]}" routes "$T/noroute.json" "$SRC_ROOT/src/server/server.c" "$SRC_ROOT/src/server/web.c"
is "$rc" 1 "a route missing from the document fails"
like "$out" "GET /api/whoami: served" "…naming it"
edit "$T/extra.json" 'd["paths"]["/api/nosuch"] = d["paths"]["/api/health"]'
run "${CHECK[@]}" routes "$T/extra.json" "$SRC_ROOT/src/server/server.c" "$SRC_ROOT/src/server/web.c"
is "$rc" 1 "a documented path the daemon does not serve fails"
like "$out" "GET /api/nosuch: in .* but not served" "…naming it"
sed 's|{ "GET", "whoami", ANY, h_whoami, false },|{ "GET", "whoami", ANY, h_whoami, false }, { "GET", "extra", ANY, h_whoami, false },|' \
	"$SRC_ROOT/src/server/server.c" > "$T/server.c"
run "${CHECK[@]}" routes "$DOC" "$T/server.c" "$SRC_ROOT/src/server/web.c"
is "$rc" 2 "a route table line the check cannot read is an error, never skipped"
sed '/{ "GET", "images", ANY, h_images, false },/d' "$SRC_ROOT/src/server/server.c" > "$T/server2.c"
run "${CHECK[@]}" routes "$DOC" "$T/server2.c" "$SRC_ROOT/src/server/web.c"
is "$rc" 1 "a route the daemon lost fails"
like "$out" "GET /api/images: in .* but not served" "…naming it"
# the UI's pages (src/server/web.c) are routes too
sed '/{ "GET", "\/audit" },/d' "$SRC_ROOT/src/server/web.c" > "$T/web.c"
run "${CHECK[@]}" routes "$DOC" "$SRC_ROOT/src/server/server.c" "$T/web.c"
is "$rc" 1 "a page the daemon lost fails"
like "$out" "GET /audit: in .* but not served" "…naming it"
edit "$T/nopage.json" 'del d["paths"]["/drafts/{id}"]'
run "${CHECK[@]}" routes "$T/nopage.json" "$SRC_ROOT/src/server/server.c" "$SRC_ROOT/src/server/web.c"
is "$rc" 1 "a page missing from the document fails"
like "$out" "GET /drafts/\{id\}: served" "…naming it"

# ---- answers -------------------------------------------------------------------------
# answer DIR METHOD URL STATUS TYPE BODY [HEADER...]: a recorded answer, as
# lib.sh's curl writes it
answer() {
	local dir=$1 m=$2 u=$3 st=$4 ct=$5 body=$6 id; shift 6
	mkdir -p "$dir"
	id=$(mktemp -u XXXXXXXX)
	{
		printf 'HTTP/1.1 %s X\r\n' "$st"
		[ -n "$ct" ] && printf 'Content-Type: %s\r\n' "$ct"
		for h in "$@"; do printf '%s\r\n' "$h"; done
		printf '\r\n'
	} > "$dir/$id.h"
	printf '%s\n' "$body" > "$dir/$id.b"
	printf '%s\t%s\t%s\t0\n' "$id" "$m" "http://127.0.0.1:1$u" >> "$dir/index"
}
H=sha256:$(printf '%064d' 0)
PROJECT="{\"name\":\"p\",\"head\":\"$H\",\"commits\":1,\"created\":1}"
ERR='{"error":{"code":"NotFound","message":"no such thing"}}'
J=application/json
# verdict NAME: run the checker on the answers recorded under $T/NAME
verdict() { run "${CHECK[@]}" answers "$DOC" "$T/$1"; }

answer "$T/good" GET /api/health 200 $J '{"status":"ok","version":"0.1.0"}'
answer "$T/good" GET /api/projects 200 $J "[$PROJECT]"
answer "$T/good" GET /api/projects/p 404 $J "$ERR"
answer "$T/good" GET /api/audit/checkpoint 200 $J "{\"origin\":\"airlock/default\",\"size\":3,\"root\":\"$(printf '%064d' 0)\",\"time\":1,\"signature\":\"$(printf '%0128d' 0)\",\"line\":\"x\"}"
answer "$T/good" GET /api/nosuch 404 $J "$ERR"
answer "$T/good" GET /api/nosuch 401 $J '{"error":{"code":"Unauthorized","message":"invalid, expired or revoked token"}}'
answer "$T/good" DELETE /api/projects 405 $J '{"error":{"code":"MethodNotAllowed","message":"method DELETE not allowed here (allowed: GET, POST)"}}' "Allow: GET, POST"
answer "$T/good" GET /api/projects 429 $J '{"error":{"code":"Unauthorized","message":"too many"}}' "Retry-After: 2"
answer "$T/good" GET "/api/runs/r0000000000000/output" 200 "text/plain; charset=utf-8" "bytes" "Accept-Ranges: bytes" "X-Airlock-Run-State: ended"
verdict good
is "$rc" 0 "answers as the document declares them pass (a literal route before a wildcard one, unrouted 401/404/405, bytes)"
like "$out" "^9 answers checked$" "…all nine checked"

answer "$T/renamed" GET /api/projects 200 $J "[${PROJECT/\"commits\"/\"commit_count\"}]"
verdict renamed
is "$rc" 1 "a field renamed in a handler fails"
like "$out" "GET /api/projects -> 200: /0: undeclared field 'commit_count'" "…as an undeclared field"
like "$out" "/0: missing field 'commits'" "…and the declared one missing"
answer "$T/type" GET /api/projects/p 200 $J "${PROJECT/\"created\":1/\"created\":\"yesterday\"}"
verdict type
is "$rc" 1 "a field of the wrong type fails"
like "$out" "/created: must be integer" "…named"
answer "$T/status" GET /api/health 404 $J "$ERR"
verdict status
is "$rc" 1 "a status the route does not declare fails"
like "$out" "status 404 is not declared for GET /api/health" "…named"
answer "$T/ctype" GET /api/health 200 text/plain '{"status":"ok","version":"0.1.0"}'
verdict ctype
is "$rc" 1 "a content type the document does not declare fails"
like "$out" "Content-Type 'text/plain' is not declared" "…named"
answer "$T/route" GET /api/nosuch 200 $J '{}'
verdict route
is "$rc" 1 "a route the document does not declare, answering, fails"
like "$out" "no route of the document is GET /api/nosuch" "…named"
answer "$T/header" GET /api/projects 429 $J '{"error":{"code":"Unauthorized","message":"too many"}}'
verdict header
is "$rc" 1 "a required header missing fails"
like "$out" "header Retry-After is missing" "…named"
answer "$T/code" GET /api/projects 401 $J "$ERR"
verdict code
is "$rc" 1 "an error code that is not its status's fails (401 is Unauthorized)"
answer "$T/oneof" GET /api/runs/r0000000000000 200 $J '{"id":"r0000000000000","state":"running","project":"p","principal":"ag","started":1,"cancel_requsted":false}'
verdict oneof
is "$rc" 1 "a running run with a misspelt field fails"
like "$out" "undeclared field 'cancel_requsted' \\(as RunRunning" "…told against the alternative it is closest to"
answer "$T/notjson" GET /api/health 200 $J 'ok'
verdict notjson
is "$rc" 1 "a JSON answer that is not JSON fails"
answer "$T/esc" $'\e[2J' /api/health 200 $J '{}'
verdict esc
like "$out" '\\x1b\[2J' "a client's bytes in a message are escaped, never sent to the terminal raw"

# ---- the recorder (lib.sh's curl) against the daemon ----------------------------------
"$AL" init >/dev/null
"$AL" admin principal create au --role author >/dev/null
AU=$("$AL" admin token create au 2>/dev/null)
serve_start
api GET /health ""
is "$status:$out" '200:{"status":"ok","version":"0.1.0"}' "api() still sets status and out"
is "$(tail -1 "$API_LOG/index" | cut -f2,3,4)" "GET	$URL/api/health	0" "…and the answer is recorded: method, URL, curl's exit status"
code=$(curl -s -D "$T/hdr" -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer $AU" "$URL/api/projects")
is "$code:$(cat "$T/body")" "200:[]" "curl -o -D -w: stdout, the -o file as curl makes them"
is "$(head -1 "$T/hdr" | tr -d '\r')$(grep -ci '^content-type: application/json' "$T/hdr")" "HTTP/1.1 200 OK1" "…and the -D file"
is "$(curl -s "$URL/api/health" -w ' %{http_code}')" '{"status":"ok","version":"0.1.0"}
 200' "without -o: the body, then -w's output, on stdout"
curl -s -o /dev/null "http://127.0.0.1:1/api/health"
is "$?" 7 "curl's exit status is kept (7: no connection)"
cp -r "$API_LOG" "$T/real"
verdict real
is "$rc" 0 "the daemon's recorded answers pass"
like "$out" "^3 answers checked; 1 requests got no answer$" "…every one of them checked"
# the same answers, one of them changed as a handler renaming a field would
f=$(grep -l '"version"' "$T/real"/*.b | head -1)
sed -i 's/"version"/"release"/' "$f"
verdict real
is "$rc" 1 "…and fail once a recorded answer has a renamed field"
like "$out" "GET /api/health -> 200: \\(the body\\): undeclared field 'release'" "…named"
serve_stop
done_testing
