#!/bin/bash
# The CLI for people, the rest of issue 16: whoami says when the token
# expires; review PATH... keeps only those paths (with a run id too); a run's
# summary names only what the caller's role may use; the config file
# ($XDG_CONFIG_HOME/airlock/config: home, server, color, pager, token_file;
# a token only from a file of the user that no one else can read).
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S/dir/sub" "$S/other"
echo one > "$S/a"; echo x > "$S/dir/x"; echo y > "$S/dir/sub/y"; echo o > "$S/other/o"
"$AL" project create p --from "$S" >/dev/null

# --- review PATH...
echo ONE > "$S/a"; echo X > "$S/dir/x"; echo Y > "$S/dir/sub/y"; echo O > "$S/other/o"
D=$("$AL" draft create p --from "$S")
run "$AL" review "$D" ./dir/
is "$rc" 0 "review DRAFT ./dir/"
like "$out" "M dir/x" "  dir/x is shown"
like "$out" "M dir/sub/y" "  and what is under dir"
ok "  a is not" -- sh -c '! printf %s "$1" | grep -q " a (file"' sh "$out"
ok "  nor other/o" -- sh -c '! printf %s "$1" | grep -q "other/o"' sh "$out"
run "$AL" review "$D" dir/sub a --stat
like "$out" "2 files changed, 2 insertions\(\+\), 2 deletions\(-\)" "--stat with paths counts those"
run "$AL" review "$D" di
like "$out" "no changes at or under the paths given" "a path is a whole name: di is not dir"
run "$AL" review "$D" dir --json
like "$out" '"path":"dir/x"' "--json with a path: its files"
ok "  only those" -- sh -c '! printf %s "$1" | grep -q "\"path\":\"a\""' sh "$out"
run "$AL" review "$D" ../a
is "$rc" 2 "review DRAFT ../a: a usage error"
like "$err" "not a path inside the draft" "  saying why"
run "$AL" review "$D" /a
is "$rc" 2 "an absolute path: a usage error"
run "$AL" review "$D"
like "$out" "M other/o" "without paths: every file"

# --- whoami: the token's expiry (over --server)
"$AL" admin principal create au --role author,reviewer >/dev/null
"$AL" admin principal create ag --role agent --project p >/dev/null
AU=$("$AL" admin token create au --ttl 2h 2>/dev/null)
AU0=$("$AL" admin token create au 2>/dev/null)
AG=$("$AL" admin token create ag 2>/dev/null)
serve_start
run env AIRLOCK_TOKEN="$AU" "$AL" --server "$URL" whoami
like "$out" "expires    20[0-9-]{8} [0-9:]{5} UTC" "whoami: when the token expires"
run env AIRLOCK_TOKEN="$AU" "$AL" --server "$URL" whoami --json
exp=$(printf %s "$out" | field token_expires)
now=$(date +%s)
ok "  --json: token_expires, unix seconds, in about 2 h" -- test "$exp" -gt $((now + 7000)) -a "$exp" -le $((now + 7300))
run env AIRLOCK_TOKEN="$AU0" "$AL" --server "$URL" whoami
like "$out" "expires    never" "a token without expiry: never"
api GET /whoami "$AU0"
like "$out" '"token_expires":null' "  GET /api/whoami: token_expires null"

# --- the run summary by role
if have_userns; then
	run env AIRLOCK_TOKEN="$AG" "$AL" --server "$URL" run p -- sh -c 'echo new > a'
	is "$rc" 0 "an agent's run"
	like "$err" "awaits a reviewer; the run: airlock run show " "  its summary: the run, which an agent may read"
	ok "  and not review, which it may not" -- sh -c '! printf %s "$1" | grep -q "airlock review"' sh "$err"
	R=$(printf %s "$err" | sed -n 's/.*airlock run show \([0-9a-z]*\).*/\1/p')
	run env AIRLOCK_TOKEN="$AG" "$AL" --server "$URL" run show "$R"
	is "$rc" 0 "  and that command works for it"
	run env AIRLOCK_TOKEN="$AG" "$AL" --server "$URL" review "$R"
	is "$rc" 11 "  (review is forbidden to an agent: 11)"
	run env AIRLOCK_TOKEN="$AU" "$AL" --server "$URL" run p -- sh -c 'echo new > a'
	like "$err" "review: airlock review " "an author's summary: review"
	run "$AL" run p -- sh -c 'echo new > a; echo z > dir/x'
	like "$err" "review: airlock review " "a local run's summary: review"
	RL=$(printf %s "$err" | sed -n 's/.*airlock review \([0-9a-z]*\).*/\1/p')
	run "$AL" review "$RL" dir
	like "$out" "M dir/x" "review RUN PATH: the run's draft, filtered"
	ok "  a is not shown" -- sh -c '! printf %s "$1" | grep -q " a (file"' sh "$out"
	run "$AL" review "${RL:0:8}" ./a
	like "$out" "M a" "review with a run id's prefix and ./a"
	run "$AL" -q run p -- sh -c 'echo q > a'
	is "$rc" 0 "run -q"
	is "$err" "" "  no summary"
fi

# --- the config file
mkdir -p "$XDG_CONFIG_HOME/airlock"
CF="$XDG_CONFIG_HOME/airlock/config"
H2="$T/home2"
printf '# mine\nhome = %s\n' "$H2" > "$CF"
run env -u AIRLOCK_HOME "$AL" init
is "$rc" 0 "config home: init"
ok "  made the home the config names" -- test -d "$H2/tenants"
run "$AL" project list
like "$out" "^p " "AIRLOCK_HOME still wins over the config"
printf 'server = %s\ntoken_file = %s\n' "$URL" "$T/tok" > "$CF"
printf '%s\n' "$AU" > "$T/tok"; chmod 600 "$T/tok"
run "$AL" whoami
like "$out" "principal  au" "config server and token_file: whoami asks the server"
chmod 644 "$T/tok"
run "$AL" whoami
is "$rc" 2 "a token file others can read: refused (2)"
like "$err" "token_file $T/tok is readable or writable by others \(mode 0644\).*chmod 600" "  saying why and the fix"
ok "  and the token is not printed" -- sh -c '! printf %s "$1" | grep -q "$2"' sh "$err" "$AU"
chmod 600 "$T/tok"; ln -s "$T/tok" "$T/toklink"
printf 'server = %s\ntoken_file = %s\n' "$URL" "$T/toklink" > "$CF"
run "$AL" whoami
is "$rc" 2 "a token file that is a symlink: refused"
chown nobody "$T/tok" 2>/dev/null && {
	printf 'server = %s\ntoken_file = %s\n' "$URL" "$T/tok" > "$CF"
	run "$AL" whoami
	like "$err" "not owned by you" "a token file of another user: refused"
	chown "$(id -u)" "$T/tok"
}
printf 'server = %s\ntoken_file = %s\n' "$URL" "$T/tok" > "$CF"
run env AIRLOCK_TOKEN="$AG" "$AL" whoami
like "$out" "principal  ag" "AIRLOCK_TOKEN wins over token_file"
run "$AL" --server= whoami
like "$out" "^user " "--server= : the local home, whatever the config says"
printf 'token = %s\n' "$AU" > "$CF"
run "$AL" project list
is "$rc" 2 "a token in the config file itself: refused"
like "$err" "config:1: a token is not kept in the config file" "  naming the line and the way"
printf 'colour = always\n' > "$CF"
run "$AL" project list
is "$rc" 2 "an unknown key: refused"
like "$err" "config:1: unknown key .* 'colour'" "  naming it"
printf 'home\n' > "$CF"
run "$AL" project list
like "$err" "config:1: expected key = value" "a line without =: refused"
printf 'color = always\n' > "$CF"
run "$AL" review "$D"
like "$out" "$(printf '\033')\[32m\+ONE" "config color = always: colour in a pipe"
run env AIRLOCK_COLOR=never "$AL" review "$D"
ok "  AIRLOCK_COLOR=never wins" -- sh -c '! printf %s "$1" | grep -q "$2"' sh "$out" "$(printf '\033')"
chmod 666 "$CF"
run "$AL" project list
is "$rc" 2 "a config file others may write: not read (2)"
like "$err" "config is writable by others \(mode 0666\): not read; chmod go-w" "  saying why and the fix"
chmod 644 "$CF"
chown nobody "$CF" 2>/dev/null && {
	run "$AL" project list
	like "$err" "owned by another user" "a config file of another user: not read"
	chown "$(id -u)" "$CF"
}
chmod 000 "$CF"
NB=$(mktemp -d /tmp/airlock-nobody.XXXXXX); chmod 755 "$NB" # a copy nobody can run, wherever the checkout is
NAL=$(nobody_airlock "$NB")
run sh -c "cd / && setpriv --reuid=nobody --regid=nogroup --clear-groups env XDG_CONFIG_HOME='$XDG_CONFIG_HOME' '$NAL' --version"
rm -rf "$NB"
is "$rc" 0 "a config file out of the user's reach: taken as none (as git does)"
chmod 644 "$CF"
rm "$CF"; mkdir "$CF"
run "$AL" project list
like "$err" "not a regular file" "a config that is a directory: refused"
rmdir "$CF"
printf 'color = sometimes\n' > "$CF"
run "$AL" project list
is "$rc" 2 "config color = junk: a usage error"
rm "$CF"
serve_stop
done_testing
