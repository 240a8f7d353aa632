#!/bin/bash
# Errors and provenance for people: run without -- says where -- goes; an
# unknown --strategy or --kind is a usage error; a refused commit says in
# words what happened and what to do; review's header (run, command, who,
# exit, time, limits hit) and an empty draft's message; --json unchanged
# (golden files, ids and times normalised).
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
export AIRLOCK_AUTHOR=alice NO_COLOR=1
P="$T/p"; mkdir -p "$P"; echo one > "$P/f"
"$AL" project create p --from "$P" >/dev/null
B=$("$AL" project head p)

run "$AL" run p sh -c true
is "$rc" 2 "run without --: a usage error"
like "$err" "put -- before the command" "  saying to put -- before the command"
ok "  not getopt's 'invalid option'" -- sh -c '! printf %s "$1" | grep -q "invalid option"' sh "$err"
run "$AL" run --bogus p -- true
like "$err" "bad option '--bogus'" "a bad option of run itself is named"

run "$AL" commit p "$P" --base "$B" --strategy yolo
is "$rc" 2 "an unknown --strategy: usage error (2)"
run "$AL" apply d0000000000000 --accept-all --strategy yolo
is "$rc" 2 "  for apply too"
run "$AL" commit p "$P" --base not-an-id
is "$rc" 6 "a malformed --base: invalid input (6)"
run "$AL" review not-an-id
is "$rc" 6 "a malformed review id: the same (6)"

run "$AL" audit --kind bogus
is "$rc" 2 "audit --kind with an unknown kind: usage error"
like "$err" "unknown --kind 'bogus'" "  naming it"
run "$AL" audit --kind run --json
is "$rc" 0 "audit --kind run is known"
run "$AL" audit --help
for k in project_create draft_create commit apply reject conflict run gc gc_retention \
	project_contract tenant_create principal_create grant token_create token_revoke \
	image_import policy refused; do
	like "$out" "(^|[ ,])$k(,|$)" "audit --help lists the kind $k"
done

# a refused commit, in words
echo two > "$P/f"; "$AL" commit p "$P" --base "$B" >/dev/null
H=$("$AL" project head p)
echo three > "$P/f"
run "$AL" commit p "$P" --base "$B"
is "$rc" 5 "a conflicting commit: exit 5"
like "$err" "head moved from ${B:7:12} \(the base this change was made from\)
to ${H:7:12}" "  says the head moved from the base to the head"
like "$err" "Both changed 1 path:
  f" "  lists the overlapping paths"
like "$err" "retry with --strategy conflict_copy" "  and what to do next"
run "$AL" commit p "$P" --base "$B" --json
is "$(printf '%s\n' "$err" | wc -l)" 1 "with --json: the one-line message only"
like "$out" '^\{"error":\{"code":"VolumeConflictError"' "  and the JSON error unchanged"

# review: the header, an empty draft
run "$AL" run p -- sh -c 'echo four > f'
R=$("$AL" runs p --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
run "$AL" review "$R"
like "$out" "^draft     d[0-9a-f]{11} of p, open" "review header: the draft, its project and state"
like "$out" "
base      ${H:7:12}" "  its base (short)"
like "$out" "
run       ${R:0:12}: sh -c echo four > f" "  the run and its command"
like "$out" "
by        alice" "  who ran it"
like "$out" "
exit      0 ok, [0-9.]+ m?s, started 20[0-9-]{8} [0-9:]{5} UTC, less than a minute ago" "  exit, duration and a time for people"
run "$AL" run p --timeout 1 -- sh -c 'echo x > g; sleep 5'
R2=$("$AL" runs p --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
run "$AL" review "$R2"
like "$out" "
limits    time hit" "  the limits a run hit"
run "$AL" run p -- true
R3=$("$AL" runs p --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
run "$AL" review "$R3"
like "$out" "no changes: the draft's head is its base \(its run changed nothing the draft keeps\)" "an empty draft says so"

# --json unchanged: golden files (ids, digests and times normalised)
norm() { sed -E 's/sha256:[0-9a-f]{64}/sha256:X/g; s/"[dr][0-9a-f]{13}"/"ID"/g; s/"g[0-9a-f]{15}"/"G"/g; s/"(created|time|started|finished)":[0-9]+/"\1":0/g'; }
G="$(dirname "$0")/golden"
printf 'a\nb\n' > "$T/q1"; mkdir -p "$T/q"; cp "$T/q1" "$T/q/a"
"$AL" project create q --from "$T/q" >/dev/null
printf 'a\nB\n' > "$T/q/a"
DQ=$("$AL" draft create q --from "$T/q")
is "$("$AL" review "$DQ" --json | norm)" "$(cat "$G/review.json")" "review --json: as before (golden)"
is "$("$AL" draft list q --json | norm)" "$(cat "$G/draft-list.json")" "draft list --json: as before (golden)"
is "$("$AL" project log q --json | norm)" "$(cat "$G/project-log.json")" "project log --json: as before (golden)"
done_testing
