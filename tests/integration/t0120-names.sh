#!/bin/bash
# Names for people: unique prefixes of run, draft and snapshot ids (at least
# 4 characters), an ambiguous one refused with its candidates (exit 2),
# PROJECT, PROJECT~N and @ where an id is asked; airlock whoami; --tenant
# with --server refused.
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
export AIRLOCK_AUTHOR=alice
P="$T/p"; mkdir -p "$P"; echo one > "$P/f"
"$AL" project create p --from "$P" >/dev/null
H1=$("$AL" project head p)
echo two > "$P/f"
"$AL" commit p "$P" --base "${H1:7:8}" -m second >/dev/null
H2=$("$AL" project head p)
like "$H2" '^sha256:[0-9a-f]{64}$' "--base takes a unique prefix of the snapshot id (bare hex)"
isnt_h1=$([ "$H1" != "$H2" ] && echo yes); is "$isnt_h1" yes "  and the commit moved the head"

echo three > "$P/f"
run "$AL" commit p "$P" --base p -m third
is "$rc" 0 "--base PROJECT: on the project's head"
H3=$("$AL" project head p)
run "$AL" snapshot show "p~1" --json
like "$out" "\"id\":\"$H2\"" "  so p~1 is the head before it"
run "$AL" snapshot show "p~2" --json
like "$out" "\"id\":\"$H1\"" "PROJECT~1 names the snapshot one commit back"
run "$AL" snapshot diff "p~2" p~1
like "$out" 'M f' "PROJECT~N in diff: p~2 to p~1 shows the second commit's change"
run "$AL" snapshot diff "p~1" p
like "$out" 'M f' "snapshot diff p~1 p: the last commit's change"
run "$AL" snapshot show "p~3"
is "$rc" 2 "PROJECT~N before the first commit: exit 2"
like "$err" 'p has 3 commits; p~3 is before its first' "  saying how many commits there are"
run "$AL" snapshot show "p~x"
is "$rc" 2 "PROJECT~junk: exit 2"
run "$AL" snapshot show "sha256:${H3:7:6}" --json
like "$out" "\"id\":\"$H3\"" "sha256:PREFIX is accepted too"

"$AL" run p -- sh -c 'echo four > f' >/dev/null 2>&1
R=$("$AL" runs p --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
D=$("$AL" runs p --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["draft"])')
run "$AL" run show "${R:0:6}" --json
like "$out" "\"id\":\"$R\"" "run show takes a run id prefix; --json keeps the full id"
run "$AL" review "${D:0:5}" --stat
like "$out" 'M f \| \+1 -1' "review takes a draft id prefix"
run "$AL" review @ --stat
like "$out" 'M f \| \+1 -1' "@ is the current user's last run"
run env AIRLOCK_AUTHOR=bob "$AL" review @
is "$rc" 3 "@ for a user with no run: not found (3)"
like "$err" '@ \(the last run of bob\)' "  saying whose last run was looked for"
run "$AL" review "${D:0:3}"
is "$rc" 6 "a prefix under 4 characters is not looked up (not an id, 6)"

# an ambiguous prefix: drafts until two share their first 4 characters
for i in $(seq 400); do
	"$AL" draft create p >/dev/null
	dup=$("$AL" draft list p | cut -c1-4 | sort | uniq -d | head -1)
	[ -n "$dup" ] && break
done
like "$dup" '^d[0-9a-f]{3}$' "two drafts share a 4-character prefix"
run "$AL" review "$dup"
is "$rc" 2 "an ambiguous prefix: exit 2"
like "$err" "'$dup' is ambiguous; it begins 2 ids:" "  saying so"
like "$err" "  $dup[0-9a-f]{10} \(draft of p, open\)" "  listing the candidates"
run "$AL" apply "$dup" --reject-all
is "$rc" 2 "apply: the same for an ambiguous prefix"

run "$AL" apply "${D:0:6}" --accept-all --json
is "$rc" 0 "apply takes a draft prefix"
like "$out" '"head":"sha256:[0-9a-f]{64}"' "  --json keeps full ids"

# a project whose name is hex: a prefix no snapshot has names the project
"$AL" project create beef --from "$P" >/dev/null
run "$AL" snapshot show beef --json
like "$out" "\"id\":\"$("$AL" project head beef)\"" "a hex project name that is no snapshot's prefix: its head"

# whoami, locally
run "$AL" whoami
like "$out" "user    alice" "whoami: the user runs and commits are recorded as"
like "$out" "home    $AIRLOCK_HOME" "  and the home"
run "$AL" whoami --json
is "$out" "{\"user\":\"alice\",\"uid\":$(id -u),\"home\":\"$AIRLOCK_HOME\",\"tenant\":\"default\"}" "whoami --json"
run "$AL" whoami extra
is "$rc" 2 "whoami takes no argument"

run "$AL" --server http://127.0.0.1:1 --tenant other whoami
is "$rc" 2 "--tenant with --server: a usage error"
like "$err" "the token decides the tenant" "  saying why"
done_testing
