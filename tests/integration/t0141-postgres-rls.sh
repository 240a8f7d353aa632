#!/bin/bash
# The metadata schema on a real PostgreSQL (Debian's, a throwaway cluster
# started once for this file): versioned migrations by `airlock admin
# metadata migrate`, and row-level security as the only thing between
# tenants: a session without the tenant setting sees no rows, a cross-tenant
# INSERT or UPDATE fails, SET LOCAL ends with its transaction, the service
# role cannot alter, disable or bypass the policies, and migrate refuses a
# service role that could.
. "$(dirname "$0")/../lib.sh"
pg_server
# as ROLE: psql as that role on the airlock database (trust auth in the test cluster)
as() { local role=$1; shift; psql -h "$H" -p "$P" -U "$role" -d airlock -v ON_ERROR_STOP=1 -qtAX "$@"; }
su_sql -c "CREATE ROLE airlock_owner LOGIN" -c "CREATE ROLE airlock LOGIN NOSUPERUSER NOBYPASSRLS" \
	-c "CREATE DATABASE airlock OWNER airlock_owner" -c "REVOKE ALL ON DATABASE airlock FROM PUBLIC" \
	-c "GRANT CONNECT ON DATABASE airlock TO airlock"
URL="postgresql://airlock_owner@/airlock?host=$H&port=$P"

# ---- migrations
run "$AL" --metadata "$URL" admin metadata migrate --service-role airlock
is "$rc:$out" "0:schema 0 -> 9" "migrate creates the schema (version 0 -> 9)"
run "$AL" --metadata "$URL" admin metadata migrate --service-role airlock --json
is "$out" '{"from":9,"to":9}' "migrating again changes nothing"
is "$(as airlock_owner -c "SELECT string_agg(version::text, ',') FROM airlock_schema")" 1,2,3,4,5,6,7,8,9 \
	"each applied version is recorded"
is "$(as airlock_owner -c "SELECT string_agg(table_name, ',' ORDER BY table_name) FROM information_schema.columns WHERE column_name = 'seq' AND table_name IN ('snapshots', 'conflicts')")" \
	"conflicts,snapshots" "schema 4: snapshots and conflicts have seq"
is "$(as airlock_owner -c "SELECT indexdef FROM pg_indexes WHERE tablename = 'runs' AND indexname = 'runs_draft'")" \
	"CREATE INDEX runs_draft ON public.runs USING btree (tenant, draft) WHERE (draft IS NOT NULL)" \
	"schema 8: runs are indexed by draft (every read of a volume asks for its run)"
is "$(as airlock_owner -c "SELECT string_agg(tablename || ':' || array_to_string(roles, ','), ' ' ORDER BY tablename) FROM pg_policies WHERE policyname = 'owner_lookup'")" \
	"run_cancels:airlock_owner runs:airlock_owner sessions:airlock_owner tenants:airlock_owner tokens:airlock_owner" \
	"schema 8: the owner's lookup policies are the owner's alone"
is "$(as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'a';
	INSERT INTO blobs_inline(id, bytes, stored) VALUES (sha256('x'), 'x', 1) RETURNING tenant; ROLLBACK;")" a \
	"schema 9: the small objects' rows take the transaction's tenant"
run as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'a'; INSERT INTO blobs_inline(id, bytes, stored) VALUES ('\\x0102', 'x', 1); COMMIT;"
like "$err" "blobs_inline_id_check" "  and an id that is not 32 bytes is refused"
# …so that the service role's queries use the (tenant, …) indexes: no
# policy of another role ORed into its condition
plan=$(as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'a'; SET LOCAL enable_seqscan = off;
	EXPLAIN SELECT id FROM runs WHERE draft = 'd0'; COMMIT;" | tr '\n' ' ')
like "$plan" "Index Cond: \(\(tenant = .*\) AND \(draft = 'd0'::text\)\)" \
	"the service role finds a draft's run by the index on (tenant, draft)"
is "$(as airlock_owner -c "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tableowner <> 'airlock_owner'")" 0 \
	"the migrating role owns every table"

TABLES=$(as airlock_owner -c "SELECT string_agg(c.relname, ' ' ORDER BY c.relname) FROM pg_class c
	JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant'
	WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'")
ok "there are tenant tables (projects, volumes, commits, ledger, runs among them)" -- \
	bash -c "for t in projects volumes commits ledger runs tokens; do [[ ' $TABLES ' == *\" \$t \"* ]] || exit 1; done"
is "$(as airlock_owner -c "SELECT count(*) FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace
	AND c.relkind = 'r' AND c.relname NOT IN ('airlock_schema', 'deployment_policy', 'nodes')
	AND NOT (c.relrowsecurity AND c.relforcerowsecurity)")" 0 \
	"every table but the schema's version, the deployment's policy and the nodes has ENABLE and FORCE ROW LEVEL SECURITY"
is "$(as airlock_owner -c "SELECT has_table_privilege('airlock', 'nodes', 'SELECT')::text ||
	has_table_privilege('airlock', 'nodes', 'UPDATE')::text")" "falsefalse" \
	"  (nodes, of no tenant, is reached by the service role through schema 6's functions only)"
is "$(as airlock_owner -c "SELECT count(*) FROM pg_attribute WHERE attrelid = 'deployment_policy'::regclass AND attnum > 0 AND NOT attisdropped")" 2 \
	"  (the deployment's policy has no tenant: id and doc, the operator's ceilings)"
is "$(as airlock_owner -c "SELECT count(*) FROM pg_class c
	JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
	JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
	WHERE c.relnamespace = 'public'::regnamespace AND a.attname = 'tenant'")" "$(echo $TABLES | wc -w)" \
	"every tenant table's primary key begins with the tenant"

# ---- the service role: rows of its transaction's tenant only
ok "tenant a writes its rows under SET LOCAL" -- as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'a';
	INSERT INTO tenants VALUES ('a', 1);
	INSERT INTO projects VALUES ('a', 1, 'p', 1, 1);
	INSERT INTO volumes(tenant, id, project, kind, head, created) VALUES ('a', 1, 1, 'live', '\\x00', 1);
	INSERT INTO ledger VALUES ('a', 1, 'k', 'g', 'p', 1, '\\x00', '\\x00'); COMMIT;"
ok "tenant b writes its rows" -- as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'b';
	INSERT INTO tenants VALUES ('b', 1); INSERT INTO projects VALUES ('b', 1, 'p', 1, 1); COMMIT;"
is "$(as airlock_owner -c "SET airlock.tenant = 'a'; SELECT count(*) FROM projects")" 1 "(the rows are there: the owner as tenant a sees a's)"
is "$(as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'b';
	INSERT INTO project_contracts(project, doc, time) VALUES ('p', '{}', 1) RETURNING tenant; COMMIT;")" b \
	"a row that names no tenant gets its transaction's (schema 2: the seam's SQL names none)"
is "$(as airlock -c "INSERT INTO project_contracts(project, doc, time) VALUES ('q', '{}', 1)" 2>&1 | grep -c 'row-level security')" 1 \
	"  and without a tenant set, such a row is refused"
# schema 3: what the modules on the seam write (meta.db 5's columns)
is "$(as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'c';
	INSERT INTO projects(name, volume, created) VALUES ('auto', 1, 1) RETURNING id > 0;
	INSERT INTO volumes(project, kind, head, created) VALUES (1, 'live', '\\x00', 1) RETURNING id > 0;
	INSERT INTO commits(volume, seq, parent, base, result, strategy, kind, time)
	  VALUES (1, 1, '\\x00', '\\x00', '\\x00', 'strict', 'commit', 1) RETURNING id > 0; COMMIT;" | tr '\n' ,)" "t,t,t," \
	"new projects, volumes and commits get their id from the database (INSERT … RETURNING id)"
is "$(as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'c';
	INSERT INTO images(snapshot, created) VALUES ('\\x01', 1), ('\\x02', 1);
	INSERT INTO images(name, snapshot, created, seq) VALUES ('base', '\\x03', 1, 3);
	INSERT INTO runs(id, project, grp, created, record, seq) VALUES ('r1', 'p', 'g', 1, '{}', 1);
	SELECT count(*) FROM images; COMMIT;")" 3 "unnamed images, any number of them; images and runs have seq"
run as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'c'; INSERT INTO images(name, snapshot, created) VALUES ('base', '\\x04', 1); COMMIT;"
like "$rc:$err" '^[1-9].*duplicate key value violates unique constraint "images_name"' "  a name once per tenant"
is "$(as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'c';
	INSERT INTO integrations(name, base_url, header, secret, keep_bodies, insecure, created)
	  VALUES ('gh', 'https://x', 'A: @secret', '\\x00', 0, 0, 1) RETURNING tenant;
	INSERT INTO integration_grants(integration, kind, who) VALUES ('gh', 'project', 'p') RETURNING tenant; COMMIT;" | tr '\n' ,)" "c,c," \
	"the integrations' tables take the transaction's tenant"
is "$(as airlock -c "INSERT INTO integrations(name, base_url, header, secret, keep_bodies, insecure, created)
	  VALUES ('gh2', 'https://x', 'A: @secret', '\\x00', 0, 0, 1)" 2>&1 | grep -c 'row-level security')" 1 \
	"  and refuse a row without one"
for t in $TABLES; do
	n=$(as airlock -c "SELECT count(*) FROM $t")
	[ "$n" = 0 ] || break
done
is "$n" 0 "a session without the tenant setting sees 0 rows in every tenant table"
is "$(as airlock -c "SET airlock.tenant = ''; SELECT count(*) FROM projects")" 0 "an empty tenant matches nothing"
is "$(as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'b'; SELECT string_agg(tenant || '/' || name, ',') FROM projects; COMMIT;")" "b/p" \
	"tenant b sees its own project only"
run as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'b'; INSERT INTO projects VALUES ('a', 2, 'q', 1, 1); COMMIT;"
ok "a cross-tenant INSERT fails" -- test "$rc" -ne 0
like "$err" "new row violates row-level security policy" "  by the policy"
run as airlock -c "INSERT INTO projects VALUES ('a', 3, 'r', 1, 1)"
like "$err" "row-level security" "an INSERT without the setting fails"
is "$(as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'b'; UPDATE projects SET name = 'stolen' WHERE tenant = 'a'; DELETE FROM ledger; COMMIT;" ; \
	as airlock_owner -c "SET airlock.tenant = 'a'; SELECT name || ',' || (SELECT count(*) FROM ledger) FROM projects")" "p,1" \
	"an UPDATE or DELETE of another tenant's rows touches nothing"
run as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'a'; UPDATE projects SET tenant = 'b'; COMMIT;"
like "$err" "new row violates row-level security policy" "a row cannot be moved to another tenant"
is "$(as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'a'; COMMIT; SELECT count(*) FROM projects;")" 0 \
	"SET LOCAL ends with its transaction: the next one on the connection sees nothing"
is "$(as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'a'; ROLLBACK; SELECT coalesce(current_setting('airlock.tenant', true), '') || '|' || count(*) FROM projects;")" "|0" \
	"  and with a rollback"

# ---- the service role cannot take the policies away
for sql in "ALTER TABLE projects DISABLE ROW LEVEL SECURITY" "ALTER TABLE projects NO FORCE ROW LEVEL SECURITY" \
	"DROP POLICY tenant_isolation ON projects" "CREATE POLICY open ON projects USING (true)" \
	"ALTER TABLE projects OWNER TO airlock" "TRUNCATE projects" "SET ROLE airlock_owner" \
	"ALTER ROLE airlock BYPASSRLS" "CREATE TABLE mine(x int)"; do
	run as airlock -c "$sql"
	ok "the service role cannot: $sql" -- test "$rc" -ne 0
done
run as airlock -c "SET row_security = off; SELECT count(*) FROM projects"
like "$err" "query would be affected by row-level security policy" "row_security = off does not bypass the policy, it fails"
is "$(as airlock_owner -c "SELECT relrowsecurity::text || relforcerowsecurity::text FROM pg_class WHERE relname = 'projects'")" "truetrue" \
	"  (and the table still has ENABLE and FORCE)"

# ---- before the tenant is known: a token's tenant, and nothing else
as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'a'; INSERT INTO tokens VALUES ('a', 't1', 'hash-a', 'alice', 1, 2000, 0);
	INSERT INTO tokens VALUES ('a', 't2', 'hash-r', 'alice', 1, 2000, 1); COMMIT;"
is "$(as airlock -c "SELECT coalesce(airlock_token_tenant('hash-a', 1000), '-') || ',' || coalesce(airlock_token_tenant('hash-a', 3000), '-') || ',' || coalesce(airlock_token_tenant('nope', 1000), '-')")" "a,-,-" \
	"airlock_token_tenant gives a live token's tenant (expired or unknown: none)"
is "$(as airlock -c "SELECT coalesce(airlock_token_tenant('hash-r', 1000), '-')")" "-" \
	"  and none for a revoked one (schema 3: revoked 0 or 1, as auth.c writes it)"
is "$(as airlock -c "SELECT count(*) FROM tokens")" 0 "  while the tokens themselves stay invisible without the tenant"
as airlock -c "BEGIN; SET LOCAL airlock.tenant = 'b'; INSERT INTO tokens VALUES ('b', 't3', 'hash-b', 'bob', 1, 0, 0); COMMIT;"
is "$(as airlock -c "SELECT coalesce(airlock_token_tenant('hash-b', 99999), '-')")" "b" \
	"  schema 5: a token that never expires (expires 0) has its tenant"
is "$(as airlock -c "SELECT string_agg(t, ',') FROM airlock_tenants() AS t")" "a,b" \
	"  airlock_tenants() gives every tenant's name, and only that, to the service role"
is "$(as airlock -c "SELECT count(*) FROM tenants")" 0 "  while the tenants' rows stay invisible without the tenant"
is "$(as airlock -c "SELECT airlock_schema_version()")" 9 "  airlock_schema_version() gives the schema's version"
run as airlock -c "SELECT count(*) FROM airlock_schema"
like "$err" "permission denied" "  which the service role cannot read itself"

# ---- migrate refuses a service role that could see across tenants, and a newer schema
su_sql -c "CREATE ROLE sneaky LOGIN BYPASSRLS" -c "CREATE ROLE boss LOGIN SUPERUSER" -c "CREATE ROLE owner2 LOGIN" \
	-c "GRANT airlock_owner TO owner2"
for r in sneaky:BYPASSRLS boss:superuser owner2:owner nobody_here:"no role"; do
	run "$AL" --metadata "$URL" admin metadata migrate --service-role "${r%%:*}"
	is "$rc" 6 "migrate refuses service role ${r%%:*} (exit 6)"
	like "$err" "${r#*:}" "  saying why (${r#*:})"
done
DB=airlock su_sql -c "CREATE TABLE public.planted(x int)" -c "ALTER TABLE public.planted OWNER TO airlock"
run "$AL" --metadata "$URL" admin metadata migrate --service-role airlock
like "$rc:$err" "^6:.*owns objects" "migrate refuses a service role that owns a table"
DB=airlock su_sql -c "DROP TABLE public.planted"
is "$(as airlock_owner -c "SELECT count(*) FROM information_schema.role_table_grants WHERE grantee = 'sneaky'")" 0 \
	"  and granted the refused roles nothing"
run "$AL" --metadata "$URL" admin metadata migrate --service-role 'x; DROP TABLE ledger'
is "$rc" 6 "a role name that is not a plain identifier is refused"
as airlock_owner -c "INSERT INTO airlock_schema(version) VALUES (99)"
run "$AL" --metadata "$URL" admin metadata migrate --service-role airlock
is "$rc" 9 "a database at a newer schema than this airlock is refused (exit 9)"
like "$err" "schema 99, newer than this airlock's 9" "  naming both versions"
run "$AL" --metadata "mysql://x" admin metadata migrate --service-role airlock
is "$rc" 6 "a URL that is not postgres:// is refused"
run "$AL" admin metadata migrate --service-role airlock
is "$rc" 2 "without --metadata: a usage error"
run "$AL" --metadata "postgresql://airlock_owner@/airlock?host=$T/nowhere&port=$P" admin metadata migrate --service-role airlock
is "$rc" 12 "an unreachable database: unavailable (exit 12)"
done_testing
