#!/bin/bash
# Every SQLite database carries its schema version (PRAGMA user_version):
# set when it is made, brought forward by ordered migrations, and a database
# newer than this airlock is refused with a clear error, untouched.
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S"; echo one > "$S/a.txt"
"$AL" project create p --from "$S" >/dev/null
D="$AIRLOCK_HOME/tenants/default"
uv() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute("PRAGMA user_version").fetchone()[0]) if len(sys.argv) < 3 else (c.execute("PRAGMA user_version=%d" % int(sys.argv[2])), c.commit())' "$@"; }
# the version each database is at now (meta.db 2: project_contracts, 3:
# draft_paths.hunks, 4: integrations, 5: runs.seq, 6: snapshots.seq and conflicts.seq, 7: blobs_swept, 8: runs_draft, 9: grouped;
# airlock.db 2: the web UI's sessions; objects.db 2: its writers count
# their commits in objects.db-wake)
want() { case $1 in *meta.db) echo 9 ;; *airlock.db | *objects.db) echo 2 ;; *) echo 1 ;; esac; }
for db in "$AIRLOCK_HOME/airlock.db" "$D/meta.db" "$D/objects.db" "$D/statcache.db"; do
	is "$(uv "$db")" "$(want "$db")" "${db#"$AIRLOCK_HOME"/} is made at schema version $(want "$db")"
done

for db in airlock.db tenants/default/meta.db tenants/default/objects.db tenants/default/statcache.db; do
	uv "$AIRLOCK_HOME/$db" 99
	sum0=$(sha256sum "$AIRLOCK_HOME/$db")
	case $db in
	airlock.db) run "$AL" admin principal list ;;
	*/statcache.db) run "$AL" snapshot import "$S" ;;
	*) run "$AL" project head p ;;
	esac
	is "$rc" 1 "$db at schema version 99: refused (exit 1)"
	like "$err" "database $AIRLOCK_HOME/$db has schema version 99, this airlock knows up to $(want "$db"): upgrade airlock" "…saying so"
	is "$(uv "$AIRLOCK_HOME/$db"):$(sha256sum "$AIRLOCK_HOME/$db")" "99:$sum0" "…and leaving it untouched"
	uv "$AIRLOCK_HOME/$db" "$(want "$db")"
done

# an airlock.db of version 1 (before sessions) is migrated: its principals
# and tokens kept, the sessions table added
"$AL" admin principal create rita --role reviewer >/dev/null
sqlite3 "$AIRLOCK_HOME/airlock.db" "DROP TABLE sessions; DROP INDEX IF EXISTS sessions_expires"
uv "$AIRLOCK_HOME/airlock.db" 1
like "$("$AL" admin principal list)" "rita" "a version-1 airlock.db opens, its principals intact"
is "$(uv "$AIRLOCK_HOME/airlock.db")" 2 "…and is at version 2 after"
is "$(sqlite3 "$AIRLOCK_HOME/airlock.db" "SELECT count(*) FROM sessions")" 0 "…with an empty sessions table"

# meta.db as version 1 made it (no draft_paths.hunks), with a decided draft:
# migrations 2 and 3 add the table and the column; the outcomes stay, and hunks can be taken
W="$T/w"; cp -r "$S" "$W"; echo two > "$W/a.txt"; echo new > "$W/b.txt"
DR=$("$AL" draft create p --from "$W")
"$AL" apply "$DR" --accept b.txt >/dev/null 2>&1
v1() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("DROP TABLE IF EXISTS grouped"); c.execute("DROP INDEX IF EXISTS runs_draft"); c.execute("DROP INDEX IF EXISTS runs_running"); c.execute("ALTER TABLE draft_paths DROP COLUMN hunks"); c.execute("DROP TABLE IF EXISTS project_contracts"); c.execute("DROP INDEX runs_seq"); c.execute("ALTER TABLE runs DROP COLUMN seq"); c.execute("DROP INDEX images_seq"); c.execute("ALTER TABLE images DROP COLUMN seq"); c.execute("DROP INDEX snapshots_seq"); c.execute("ALTER TABLE snapshots DROP COLUMN seq"); c.execute("ALTER TABLE conflicts DROP COLUMN seq"); c.execute("PRAGMA user_version=%d" % int(sys.argv[2])); c.commit()' "$D/meta.db" "$1"; }
cols() { python3 -c 'import sqlite3,sys; print(",".join(r[1] for r in sqlite3.connect(sys.argv[1]).execute("PRAGMA table_info(draft_paths)")))' "$D/meta.db"; }
v1 1
is "$(cols)" "volume,path,op,outcome" "a version-1 meta.db: draft_paths without hunks"
run "$AL" draft list p
like "$out" "    applied   b.txt" "…it opens: the outcomes decided before are intact"
is "$(uv "$D/meta.db"):$(cols)" "9:volume,path,op,outcome,hunks" "…brought to version 9: draft_paths.hunks (and 4: integrations, 5: runs.seq)"
printf 'one\n1\n2\n3\n4\n5\n6\n7\n8\n9\nlast\n' > "$W/c.txt"; cp "$W/c.txt" "$S/c.txt"
"$AL" commit p "$S" --base "$("$AL" project head p)" >/dev/null 2>&1
"$AL" snapshot export "$("$AL" project head p)" "$T/w2" >/dev/null
sed -i 's/^one$/ONE/; s/^last$/LAST/' "$T/w2/c.txt"
DR2=$("$AL" draft create p --from "$T/w2")
run "$AL" apply "$DR2" --hunks c.txt=2
is "$rc" 0 "…and takes a hunk-level apply"
like "$("$AL" draft list p)" "partially_applied c.txt \[hunks 2\]" "…recording its hunks"

# an objects.db of version 1 (an airlock whose writers do not count their
# commits) is brought to 2, which that airlock then refuses
uv "$D/objects.db" 1
run "$AL" project head p
is "$rc:$(uv "$D/objects.db")" "0:2" "objects.db at version 1 opens and is brought to 2"

# a database made before versions (user_version 0) is brought to the latest
HEAD=$("$AL" project head p)
v1 0
is "$("$AL" project head p)" "$HEAD" "a version-0 meta.db opens, its data intact"
is "$(uv "$D/meta.db"):$(cols)" "9:volume,path,op,outcome,hunks" "…and is at version 9 after, with every migration applied"
plan() { python3 -c 'import sqlite3,sys; print(" ".join(r[3] for r in sqlite3.connect(sys.argv[1]).execute("EXPLAIN QUERY PLAN SELECT v.id, (SELECT r.id FROM runs r WHERE r.draft = v.public_id LIMIT 1) FROM volumes v WHERE v.id = 1")))' "$D/meta.db"; }
like "$(plan)" "USING INDEX runs_draft" "…where a volume's run is looked up by the index runs_draft (8), not a scan of every run"
plan2() { python3 - "$D/meta.db" <<'PY'
import sqlite3, sys
q = "EXPLAIN QUERY PLAN SELECT id, record FROM runs WHERE draft IS NULL AND record LIKE '%\"outcome\":\"running\"%'"
print(" ".join(r[3] for r in sqlite3.connect(sys.argv[1]).execute(q)))
PY
}
like "$(plan2)" "USING INDEX runs_running" "…and the running attempts by runs_running (8), not a read of every failed one"
# a version-1 meta.db (before project contracts and hunks) gains both, its data intact
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("DROP INDEX IF EXISTS runs_draft"); c.execute("DROP INDEX IF EXISTS runs_running"); c.execute("DROP TABLE project_contracts"); c.execute("ALTER TABLE draft_paths DROP COLUMN hunks"); c.execute("DROP INDEX runs_seq"); c.execute("ALTER TABLE runs DROP COLUMN seq"); c.execute("DROP INDEX images_seq"); c.execute("ALTER TABLE images DROP COLUMN seq"); c.execute("DROP INDEX snapshots_seq"); c.execute("ALTER TABLE snapshots DROP COLUMN seq"); c.execute("ALTER TABLE conflicts DROP COLUMN seq"); c.execute("PRAGMA user_version=1"); c.commit()' "$D/meta.db"
printf '{"writable": ["**"]}' > "$T/c.json"
run "$AL" project contract p --set "$T/c.json"
is "$rc:$(uv "$D/meta.db"):$(cols)" "0:9:volume,path,op,outcome,hunks" "a version-1 meta.db is migrated to 9 (project contracts, hunks, integrations, runs.seq, blobs_swept, runs_draft, grouped) on open"
is "$(sqlite3 "$D/meta.db" "SELECT count(*) FROM sqlite_master WHERE name = 'grouped'")" 1 "…its table of group commits' outcomes made (9)"
is "$("$AL" project head p)" "$HEAD" "…its data intact"
ok "fsck is clean" -- "$AL" fsck

# a version-4 meta.db (runs listed by rowid) with runs recorded in the same
# second, their ids out of order: migration 5 numbers them as their rowid,
# and airlock runs keeps the order they were recorded in
python3 - "$D/meta.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("DROP INDEX runs_seq"); c.execute("ALTER TABLE runs DROP COLUMN seq")
c.execute("DROP INDEX images_seq"); c.execute("ALTER TABLE images DROP COLUMN seq")
c.execute("DROP INDEX snapshots_seq"); c.execute("ALTER TABLE snapshots DROP COLUMN seq"); c.execute("ALTER TABLE conflicts DROP COLUMN seq")
for i, n in (("03", "zeta"), ("01", "alpha"), ("02", "mid")):
    c.execute("INSERT INTO images(name, snapshot, created, source) VALUES (?, ?, 1700000000, 'x')", (n, bytes.fromhex(i * 32)))
for i in ("r00000000000000c", "r00000000000000a", "r00000000000000b"):
    rec = '{"id":"%s","group":"g000000000000000","project":"p","started":1700000000,"draft":null}' % i
    c.execute("INSERT INTO runs(id, project, grp, draft, created, record) VALUES (?, 'p', 'g000000000000000', NULL, 1700000000, ?)", (i, rec))
c.execute("PRAGMA user_version=4"); c.commit()
PY
is "$("$AL" runs p | awk '{print $1}' | tr '\n' ' ')" "r00000000000000c r00000000000000a r00000000000000b " \
	"a version-4 meta.db's runs of one second are listed in the order they were recorded"
is "$(uv "$D/meta.db"):$(sqlite3 "$D/meta.db" "SELECT group_concat(seq = rowid) FROM runs")" "9:1,1,1" \
	"…migration 5 numbered them as their rowid"
is "$("$AL" image list | awk 'NR > 1 || !/NAME/ {print $1}' | tr '\n' ' ')" "zeta alpha mid " \
	"its images of one second too (migration 5: images.seq)"
is "$(sqlite3 "$D/meta.db" "SELECT group_concat(seq = rowid) FROM images")" "1,1,1" "…numbered as their rowid"

# a version-5 meta.db (snapshots and conflicts without seq): migration 6
# numbers them as their rowid, a commit's conflicts are listed in the order
# they were found, and gc, whose second mark takes snapshots by seq, runs
printf 'base\n' > "$S/z.txt"; printf 'base\n' > "$S/y.txt"
"$AL" commit p "$S" --base "$("$AL" project head p)" >/dev/null 2>&1
B=$("$AL" project head p)
"$AL" snapshot export "$B" "$T/w3" >/dev/null
printf 'ours\n' > "$T/w3/z.txt"; printf 'ours\n' > "$T/w3/y.txt"
DR3=$("$AL" draft create p --from "$T/w3")
printf 'theirs\n' > "$S/z.txt"; printf 'theirs\n' > "$S/y.txt"
"$AL" commit p "$S" --base "$B" >/dev/null 2>&1
"$AL" apply "$DR3" --accept-all --strategy conflict_copy >/dev/null 2>&1
LOG0=$("$AL" project log p)
like "$LOG0" "conflict" "a commit with conflicts is logged"
python3 - "$D/meta.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("DROP INDEX snapshots_seq"); c.execute("ALTER TABLE snapshots DROP COLUMN seq"); c.execute("ALTER TABLE conflicts DROP COLUMN seq")
c.execute("PRAGMA user_version=5"); c.commit()
PY
is "$("$AL" project log p)" "$LOG0" "a version-5 meta.db's conflicts are listed as before"
is "$(uv "$D/meta.db"):$(sqlite3 "$D/meta.db" "SELECT min(seq = rowid) FROM snapshots"):$(sqlite3 "$D/meta.db" "SELECT min(seq = rowid) FROM conflicts")" "9:1:1" \
	"…migration 6 numbered snapshots and conflicts as their rowid"
is "$(sqlite3 "$D/meta.db" "SELECT count(*) FROM blobs_swept")" 0 "…and migration 7 made blobs_swept (empty)"
run "$AL" gc
is "$rc" 0 "…and gc runs on it"
is "$("$AL" project log p)" "$LOG0" "…which keeps every commit's snapshots"
done_testing
