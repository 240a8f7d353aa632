#!/bin/bash
# Run contracts (issue 20): what a run may touch and what it must produce,
# checked after the run, recorded (record, ledger, run show, review) and
# enforced as policy says: record, drop or block_apply.
. "$(dirname "$0")/../lib.sh"
need_userns
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S/data"; printf 'b,2\na,1\n' > "$S/data/in.csv"; echo keep > "$S/config.yml"
"$AL" project create p --from "$S" >/dev/null
rid() { sed -n 's/^run \(r[0-9a-f]*\): .*/\1/p' "$1" | head -1; }
verdict() { "$AL" run show "$1" --json | python3 -c 'import json,sys
c=json.load(sys.stdin).get("contract")
print("none" if c is None else c["verdict"] + " " + c["on_violation"] + " " + " ".join(
  sorted(v["kind"] + ":" + (v.get("path") or v.get("pattern") or v.get("stream") or "") + ":" + v["source"] for v in c["violations"])))'; }
SCHEMA='{"type":"object","required":["rows"],"properties":{"rows":{"type":"integer"}}}'
C="$T/c.json"
cat > "$C" <<EOF
{"writable": ["out/**"], "must_change": ["out/report.json"], "must_not_change": ["config.yml"],
 "outputs": [{"path": "out/report.json", "json_schema": $SCHEMA},
             {"stream": "stdout", "regex": "^sorted [0-9]+ rows\$"}],
 "on_violation": "block_apply"}
EOF

# ---- a run that keeps its contract -------------------------------------------------
"$AL" run p --contract "$C" -- sh -c 'mkdir -p out; sort data/in.csv > out/sorted.csv; echo "{\"rows\": 2}" > out/report.json; echo "sorted 2 rows"' >/dev/null 2>"$T/e1"
R1=$(rid "$T/e1")
like "$(cat "$T/e1")" "contract satisfied" "a run that keeps its contract: the summary says so"
is "$(verdict "$R1")" "satisfied block_apply " "  its record: satisfied, with the action it would have taken"
run "$AL" apply "$R1" --accept-all
is "$rc" 0 "  and it applies"

# ---- an agent that writes outside writable: each path named, apply blocked ------------
BEFORE_HEAD=$("$AL" project head p)
"$AL" run p --contract "$C" -- sh -c 'mkdir -p out sub; echo "{\"rows\": 3}" > out/report.json; echo x > evil.txt; echo y > config.yml; echo z > sub/deep.txt; echo "sorted 3 rows"' >/dev/null 2>"$T/e2"
R2=$(rid "$T/e2")
like "$(cat "$T/e2")" "contract violated \(4\), block_apply" "writing outside writable: the summary counts the violations"
is "$(verdict "$R2")" "violated block_apply must_not_change:config.yml:request outside_writable:config.yml:request outside_writable:evil.txt:request outside_writable:sub/deep.txt:request" \
	"  the record names each path outside writable, and the one it must not change"
run "$AL" apply "$R2" --accept-all
is "$rc" 9 "  with block_apply the draft cannot be applied (exit 9)"
like "$err" "is blocked: run $R2 broke its contract \(4 violations: outside_writable config.yml; " "  the refusal names the violations"
run "$AL" apply "$R2" --accept out/report.json
is "$rc" 9 "  not even in part"
is "$("$AL" project head p)" "$BEFORE_HEAD" "  and the head did not move"
like "$("$AL" draft list p)" "blocked" "  the draft is listed blocked"
run "$AL" review "$R2"
like "$out" "blocked" "  review says it is blocked"
run "$AL" apply "$R2" --reject-all
is "$rc" 0 "  it can still be rejected"

# ---- outputs: malformed JSON, a schema failure, a missing file, stdout, exit ------------
"$AL" run p --contract "$C" -- sh -c 'mkdir -p out; echo "{\"rows\": " > out/report.json; echo "sorted rows"' >/dev/null 2>"$T/e3"
R3=$(rid "$T/e3")
is "$(verdict "$R3")" "violated block_apply output_not_json:out/report.json:request output_regex:stdout:request" \
	"malformed JSON output and stdout not matching: both named"
"$AL" run p --contract "$C" -- sh -c 'mkdir -p out; echo "{\"rows\": \"two\"}" > out/report.json; echo "sorted 2 rows"' >/dev/null 2>"$T/e4"
R4=$(rid "$T/e4")
"$AL" run show "$R4" --json > "$T/r4.json"
is "$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["contract"]["violations"][0]; print(v["kind"], v["path"], v["errors"][0]["at"])' "$T/r4.json")" \
	"output_schema out/report.json /rows" "a schema failure names the file and where in it"
run "$AL" run show "$R4"
like "$out" "contract +violated" "run show prints the verdict"
like "$out" "output_schema out/report.json" "  and each violation"
printf '{"outputs": [{"path": "out/missing.json", "json_schema": {}}], "exit": 3}' > "$T/c2.json"
"$AL" run p --contract "$T/c2.json" -- true >/dev/null 2>"$T/e5"
R5=$(rid "$T/e5")
is "$(verdict "$R5")" "violated record exit::request output_missing:out/missing.json:request" \
	"a missing output and the wrong exit status (on_violation record by default)"
"$AL" run show "$R5" --json | python3 -c 'import json,sys; v=[x for x in json.load(sys.stdin)["contract"]["violations"] if x["kind"]=="exit"][0]; sys.exit(0 if (v["expected"], v["actual"]) == (3, 0) else 1)'
is "$?" 0 "  the exit violation says expected 3, actual 0"

# ---- a bad contract is refused before anything runs ---------------------------------
BEFORE=$(store_state); NRUNS=$("$AL" runs p --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
for bad in '{"writable": ["a/../b"]}' '{"writable": ["[x"]}' '{"outputs": [{"path": "a", "json_schema": {"type": 7}}]}' \
	'{"outputs": [{"path": "a", "regex": "("}]}' '{"writeable": ["a"]}' '{"writable": ' '{"exit": -1}'; do
	printf '%s' "$bad" > "$T/bad.json"
	run "$AL" run p --contract "$T/bad.json" -- sh -c 'echo ran > ran.txt'
	is "$rc" 6 "refused before the run: $bad"
done
like "$err" "^airlock run: --contract: contract: exit" "  the error names the field"
run "$AL" run p --contract "$T/none.json" -- true
is "$rc" 3 "a missing contract file: not found"
is "$(store_state)" "$BEFORE" "  nothing was stored by the refused runs"
is "$("$AL" runs p --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" "$NRUNS" "  and no run was recorded"

# ---- drop: the changes outside writable are not kept, and that is recorded ------------
printf '{"writable": ["out/**"], "on_violation": "drop"}' > "$T/drop.json"
"$AL" run p --contract "$T/drop.json" -- sh -c 'mkdir -p out; echo kept > out/a.txt; echo gone > evil.txt; rm config.yml' >/dev/null 2>"$T/e6"
R6=$(rid "$T/e6")
"$AL" run show "$R6" --json > "$T/r6.json"
is "$(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["contract"]["dropped"]))' "$T/r6.json")" "config.yml evil.txt" \
	"drop: the record lists what was not kept"
run "$AL" review "$R6" --stat
like "$out" "out/a.txt" "  the draft keeps the writable change"
is "$(echo "$out" | grep ' | ' | cut -d'|' -f1 | tr -s ' ' | tr '\n' ';')" "A out/a.txt ;" "  and nothing else"
like "$out" "not kept: config.yml, evil.txt" "  review warns what was not kept"
run "$AL" apply "$R6" --accept-all
is "$rc" 0 "  and applies"
ok "  the head has out/a.txt, still config.yml, no evil.txt" -- sh -c "'$AL' snapshot show \$('$AL' project head p) | grep -q ' out/a.txt\$' && '$AL' snapshot show \$('$AL' project head p) | grep -q ' config.yml\$' && ! '$AL' snapshot show \$('$AL' project head p) | grep -q evil"

# ---- policy: the least a violation does -------------------------------------------------
run "$AL" admin policy set --deployment --contract-on-violation drop
is "$rc" 0 "the operator sets the deployment's least action"
run "$AL" admin policy set --contract-on-violation record
is "$rc" 8 "a tenant cannot weaken it (exit 8)"
like "$err" "weaker than the deployment's \(drop\)" "  saying why"
run "$AL" admin policy set --contract-on-violation block_apply
is "$rc" 0 "  but may make it stricter"
printf '{"writable": ["out/**"]}' > "$T/rec.json"
"$AL" run p --contract "$T/rec.json" -- sh -c 'echo x > evil2.txt' >/dev/null 2>"$T/e7"
R7=$(rid "$T/e7")
is "$(verdict "$R7")" "violated block_apply outside_writable:evil2.txt:request" "a contract asking for record gets the policy's block_apply"
run "$AL" apply "$R7" --accept-all
is "$rc" 9 "  and its draft is blocked"
"$AL" admin policy set --contract-on-violation record 2>/dev/null
"$AL" admin policy set --deployment --contract-on-violation record >/dev/null
"$AL" admin policy set --contract-on-violation record >/dev/null

# ---- the project's own contract: every run gets it, a request cannot widen it ----------
printf '{"writable": ["out/**", "data/**"]}' > "$T/proj.json"
run "$AL" project contract p --set "$T/proj.json"
is "$rc" 0 "an author sets the project's contract"
run "$AL" project contract p --json
like "$out" '"writable":\["out/\*\*","data/\*\*"\]' "  and reads it back"
"$AL" run p -- sh -c 'echo x > evil3.txt; echo y > data/new.csv' >/dev/null 2>"$T/e8"
R8=$(rid "$T/e8")
is "$(verdict "$R8")" "violated record outside_writable:evil3.txt:project" "a run without --contract is checked against the project's"
printf '{"writable": ["**"]}' > "$T/all.json"
"$AL" run p --contract "$T/all.json" -- sh -c 'echo x > evil4.txt' >/dev/null 2>"$T/e9"
R9=$(rid "$T/e9")
is "$(verdict "$R9")" "violated record outside_writable:evil4.txt:project" "  a request's contract cannot widen it"
# replay re-checks the contracts; its verdict includes them
run "$AL" replay "$R8" --json
is "$rc:$(echo "$out" | field verdict.result)" "0:identical" "a replay under the same contracts: identical, contract included"
"$AL" project contract p --unset >/dev/null
run "$AL" replay "$R8" --json
is "$rc" 20 "a replay after the project's contract changed: divergent (exit 20)"
is "$(echo "$out" | python3 -c 'import json,sys; d=[x for x in json.load(sys.stdin)["verdict"]["differences"] if x["what"] == "contract"][0]; print(d["original"], "|", d["replay"])')" \
	"violated: outside_writable evil3.txt(project) | no contract" "  naming the contracts' verdicts"
"$AL" project contract p --set "$T/proj.json" >/dev/null
run "$AL" project contract p --set "$T/bad.json"
is "$rc" 6 "a bad project contract is refused"
run "$AL" project contract p --json
like "$out" '"writable":\["out/\*\*","data/\*\*"\]' "  and the old one stays"
run "$AL" audit --kind project_contract
like "$out" "project_contract .*\"after\":\{\"writable\"" "the change is in the ledger, with before and after"

# ---- the verdict in the ledger survives an export and an offline verify ------------------
"$AL" audit pubkey > "$T/pub.pem"
"$AL" audit export "$T/x.ledger" >/dev/null
run "$AL" audit verify "$T/x.ledger" --key "$T/pub.pem"
is "$rc" 0 "the ledger exports and verifies offline"
ok "  the export holds the run entries' verdicts" -- grep -q "\"outside_writable\"" "$T/x.ledger"
python3 - "$T/x.ledger" "$R2" <<'EOF'
import json, sys
found = False
for line in open(sys.argv[1], 'rb'):
    if not line.startswith(b"E "):
        continue
    e = json.loads(line[2:])
    d = e.get("data") or {}
    if e.get("kind") == "run" and d.get("id") == sys.argv[2]:
        found = d["contract"]["verdict"] == "violated" and len(d["contract"]["violations"]) == 4
sys.exit(0 if found else 1)
EOF
is "$?" 0 "  run $R2's entry carries its verdict and its four violations"

# ---- over the API ---------------------------------------------------------------------
"$AL" admin principal create ag --role agent --project p >/dev/null
"$AL" admin principal create au --role author >/dev/null
"$AL" admin principal create rv --role reviewer >/dev/null
AG=$("$AL" admin token create ag 2>/dev/null); AU=$("$AL" admin token create au 2>/dev/null); RV=$("$AL" admin token create rv 2>/dev/null)
serve_start
api GET /projects/p/contract "$AG"
is "$status" 200 "an agent reads the project's contract"
api PUT /projects/p/contract "$AG" '{"writable": ["**"]}'
is "$status" 403 "  but cannot change it"
api PUT /projects/p/contract "$AU" '{"writable": ["[x"]}'
is "$status" 422 "a bad contract over the API: 422"
api DELETE /projects/p/contract "$AU"
is "$status:$(echo "$out" | field contract)" "200:None" "an author removes it"
api POST /projects/p/runs "$AG" '{"argv": ["sh", "-c", "echo x > evil5.txt"], "contract": {"writable": ["out/**"], "on_violation": "bogus"}, "wait": true}'
is "$status" 422 "a run request with a bad contract: 422, nothing runs"
api POST /projects/p/runs "$AG" '{"argv": ["sh", "-c", "echo x > evil5.txt"], "contract": {"writable": ["out/**"], "on_violation": "block_apply"}, "wait": true}'
is "$status" 200 "a run request with a contract"
R10=$(echo "$out" | field id)
is "$(echo "$out" | field contract.verdict)" "violated" "  its answer carries the verdict"
api POST "/drafts/$R10/apply" "$RV" '{"mode": "accept_all"}'
is "$status" 409 "  applying its blocked draft: 409"
like "$out" "outside_writable evil5.txt" "  naming the violation"
serve_stop
done_testing
