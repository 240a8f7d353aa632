#!/bin/bash
# The quick start: import an example project, look at it, change a copy,
# diff the two snapshots, export one back; make it a project, review and
# apply a draft, run a command in a sandbox and apply part of its changes;
# the same through the daemon with scoped tokens; the log, the ledger
# (verified offline), the store.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
AL="${AIRLOCK_BUILD:-$root/build}/airlock"
work=$(mktemp -d "${TMPDIR:-/tmp}/airlock-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
export AIRLOCK_HOME="$work/home"
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

say airlock init
"$AL" init

say airlock snapshot import examples/ledger-project
A=$("$AL" snapshot import "$root/examples/ledger-project")
echo "$A"

say airlock snapshot show "${A:0:19}…"
"$AL" snapshot show "$A"

# an agent's edits, on a copy
cp -a "$root/examples/ledger-project" "$work/edited"
cd "$work/edited"
printf '3000,2026-11,80.00,0.00\n' >> data/journal.csv
printf '# Q4 close\n\nIn progress.\n' > reports/2026/q4.md
rm README.txt
chmod 700 scripts/totals.sh
mkdir -p data/archive
cd - >/dev/null

say airlock snapshot import edited-copy
B=$("$AL" snapshot import "$work/edited")
echo "$B"

say airlock snapshot diff A B
"$AL" snapshot diff "$A" "$B"

say airlock snapshot diff --json A B
"$AL" snapshot diff --json "$A" "$B" | head -c 400; echo " …"

say airlock snapshot export B restored/ '&&' diff -r edited-copy restored/
"$AL" snapshot export "$B" "$work/restored"
diff -r "$work/edited" "$work/restored" && echo "identical"

say airlock project create finance --from examples/ledger-project
"$AL" project create finance --from "$root/examples/ledger-project"

say airlock draft create finance --from edited-copy "  # an agent's work, as a draft"
D=$("$AL" draft create finance --from "$work/edited")
echo "$D"
say airlock project head finance "  # the live head has not moved"
"$AL" project head finance

say airlock review "$D"
"$AL" review "$D"

say airlock apply "$D" --accept data/journal.csv reports/2026/q4.md
"$AL" apply "$D" --accept data/journal.csv reports/2026/q4.md

say airlock apply "$D" --accept-all "  # a draft applies once"
"$AL" apply "$D" --accept-all || echo "(exit $?: refused)"

say airlock run finance -- sh -c '…' "  # an agent's command, in a sandbox: no network, no host paths"
"$AL" run finance -- sh -c 'echo "4000,2026-12,120.00,0.00" >> data/journal.csv
	rm latest-report.md
	printf "# Q4 close\n\nDone by the agent.\n" > reports/2026/q4.md
	echo "agent: $(hostname), in $(pwd) as uid $(id -u); network: $(nc -w 1 1.1.1.1 80 </dev/null 2>&1)"' \
	2>"$work/run.err" || true
cat "$work/run.err"
RUN=$(sed -n 's/^run \(r[0-9a-f]*\):.*/\1/p' "$work/run.err")

say airlock project head finance "  # still not moved"
"$AL" project head finance

say airlock review "$RUN" --stat
"$AL" review "$RUN" --stat

say airlock apply "$RUN" --accept data/journal.csv reports/2026/q4.md "  # keep latest-report.md"
"$AL" apply "$RUN" --accept data/journal.csv reports/2026/q4.md

say airlock runs finance
"$AL" runs finance | cut -c1-110

# the same through the daemon: an agent with a scoped token runs, a reviewer applies
say airlock admin principal create close-bot --role agent --project finance '&&' airlock admin token create close-bot
"$AL" admin principal create close-bot --role agent --project finance
"$AL" admin principal create controller --role reviewer
AGENT=$("$AL" admin token create close-bot --ttl 1h 2>/dev/null)
REVIEWER=$("$AL" admin token create controller --ttl 1h 2>/dev/null)
echo "${AGENT:0:12}… (shown once; only its hash is kept)"
say airlock serve --listen 127.0.0.1:0 '&'
"$AL" serve --listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.log" &
SERVE=$!
trap 'kill -TERM $SERVE 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do URL=$(sed -n 's/^airlock serve: listening on //p' "$work/serve.out"); [ -n "$URL" ] && break; sleep 0.05; done
echo "$URL"
export AIRLOCK_URL=$URL
say AIRLOCK_TOKEN=… airlock run finance --secret-file LEDGER_API_TOKEN=… -- sh -c '…'
AIRLOCK_TOKEN=$AGENT "$AL" run finance --secret-file LEDGER_API_TOKEN=demo-token-123 -- sh -c \
	'test -s /run/airlock/secrets/LEDGER_API_TOKEN && echo "token file present"; echo "# fx rates" > data/fx.csv' \
	2>"$work/run2.err"
cat "$work/run2.err"
RUN2=$(sed -n 's/^run \(r[0-9a-f]*\):.*/\1/p' "$work/run2.err")
say AIRLOCK_TOKEN=… airlock apply "$RUN2" --accept-all "  # as the agent: refused"
AIRLOCK_TOKEN=$AGENT "$AL" apply "$RUN2" --accept-all || true
say AIRLOCK_TOKEN=… airlock apply "$RUN2" --accept-all "  # as the reviewer"
AIRLOCK_TOKEN=$REVIEWER "$AL" apply "$RUN2" --accept-all
unset AIRLOCK_URL
kill -TERM $SERVE; wait $SERVE 2>/dev/null || true
trap 'rm -rf "$work"' EXIT
echo "the daemon's log (no token, no secret):"
grep -v '^airlock serve' "$work/serve.log" | cut -c1-100

say airlock project log finance
"$AL" project log finance

say airlock audit "  # every action, in the tamper-evident ledger"
"$AL" audit | cut -c1-110

say airlock audit export ledger.export '&&' airlock audit verify ledger.export --key pubkey.pem
"$AL" audit pubkey > "$work/pubkey.pem"
"$AL" audit export "$work/ledger.export"
"$AL" audit verify "$work/ledger.export" --key "$work/pubkey.pem"

say airlock fsck
"$AL" fsck
