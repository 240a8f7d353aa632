/* pg: the metadata schema on PostgreSQL and its migrations (pg.h).
 *
 * The tables mirror the embedded home's (meta.db per tenant, airlock.db for
 * the deployment: store.c), with the tenant added to each and first in its
 * primary key.  A released migration is never edited; a change is a new
 * one, as for SQLite (sqlite_util.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/pg.h"
#include "pq.h"
#include "util.h"

#define pq al_pq

/* The tenant tables: each has the tenant first in its primary key, the
 * policy of migration 1 and the service role's grants. */
#define TENANT_TABLES                                                                       \
	"tenants, principals, grants, tokens, sessions, policy, settings, snapshots, "      \
	"projects, volumes, draft_paths, commits, conflicts, ledger, ledger_tree, images, " \
	"runs, checkpoints, project_contracts"
/* and those migration 3 added (TENANT_TABLES is in released migrations'
 * text: it never changes) */
#define TENANT_TABLES_3 "integrations, integration_grants"

static const char *const migrations[] = {
	/* 1: the embedded home's schema (airlock.db 2, meta.db 3), per tenant */
	"CREATE TABLE tenants("
	"  tenant TEXT PRIMARY KEY CHECK (tenant ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),"
	"  created BIGINT NOT NULL);"
	"CREATE TABLE principals("
	"  tenant TEXT NOT NULL, name TEXT NOT NULL, roles INTEGER NOT NULL,"
	"  created BIGINT NOT NULL, PRIMARY KEY(tenant, name));"
	"CREATE TABLE grants("
	"  tenant TEXT NOT NULL, principal TEXT NOT NULL, project TEXT NOT NULL,"
	"  PRIMARY KEY(tenant, principal, project));"
	"CREATE TABLE tokens("
	"  tenant TEXT NOT NULL, id TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,"
	"  principal TEXT NOT NULL, created BIGINT NOT NULL, expires BIGINT NOT NULL,"
	"  revoked BOOLEAN NOT NULL DEFAULT false, PRIMARY KEY(tenant, id));"
	"CREATE INDEX tokens_principal ON tokens(tenant, principal);"
	"CREATE TABLE sessions("
	"  tenant TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, token TEXT NOT NULL,"
	"  created BIGINT NOT NULL, expires BIGINT NOT NULL, PRIMARY KEY(tenant, hash));"
	"CREATE INDEX sessions_expires ON sessions(expires);"
	"CREATE TABLE policy(tenant TEXT PRIMARY KEY, doc TEXT NOT NULL);"
	"CREATE TABLE settings("
	"  tenant TEXT NOT NULL, name TEXT NOT NULL, value BIGINT NOT NULL,"
	"  PRIMARY KEY(tenant, name));"
	"CREATE TABLE snapshots("
	"  tenant TEXT NOT NULL, id BYTEA NOT NULL, created BIGINT NOT NULL,"
	"  files BIGINT NOT NULL, bytes BIGINT NOT NULL, source TEXT, PRIMARY KEY(tenant, id));"
	"CREATE TABLE projects("
	"  tenant TEXT NOT NULL, id BIGINT NOT NULL, name TEXT NOT NULL, volume BIGINT NOT NULL,"
	"  created BIGINT NOT NULL, PRIMARY KEY(tenant, id), UNIQUE(tenant, name));"
	"CREATE TABLE volumes("
	"  tenant TEXT NOT NULL, id BIGINT NOT NULL, project BIGINT NOT NULL,"
	"  kind TEXT NOT NULL, head BYTEA NOT NULL, base BYTEA, public_id TEXT,"
	"  state TEXT NOT NULL DEFAULT 'open', seq BIGINT NOT NULL DEFAULT 0,"
	"  created BIGINT NOT NULL, grp TEXT, PRIMARY KEY(tenant, id),"
	"  UNIQUE(tenant, public_id));"
	"CREATE INDEX volumes_project ON volumes(tenant, project, kind);"
	"CREATE TABLE draft_paths("
	"  tenant TEXT NOT NULL, volume BIGINT NOT NULL, path TEXT NOT NULL, op TEXT NOT NULL,"
	"  outcome TEXT NOT NULL, hunks TEXT, PRIMARY KEY(tenant, volume, path));"
	"CREATE TABLE commits("
	"  tenant TEXT NOT NULL, id BIGINT NOT NULL, volume BIGINT NOT NULL, seq BIGINT NOT NULL,"
	"  parent BYTEA NOT NULL, base BYTEA NOT NULL, result BYTEA NOT NULL,"
	"  author TEXT, message TEXT, strategy TEXT NOT NULL, kind TEXT NOT NULL,"
	"  draft TEXT, time BIGINT NOT NULL, PRIMARY KEY(tenant, id),"
	"  UNIQUE(tenant, volume, seq));"
	"CREATE TABLE conflicts("
	"  tenant TEXT NOT NULL, commit_id BIGINT NOT NULL, path TEXT NOT NULL, copy_path TEXT,"
	"  base_type INTEGER, base_mode INTEGER, base_size BIGINT, base_digest BYTEA,"
	"  theirs_type INTEGER, theirs_mode INTEGER, theirs_size BIGINT, theirs_digest BYTEA,"
	"  ours_type INTEGER, ours_mode INTEGER, ours_size BIGINT, ours_digest BYTEA,"
	"  PRIMARY KEY(tenant, commit_id, path));"
	"CREATE TABLE ledger("
	"  tenant TEXT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL, grp TEXT NOT NULL,"
	"  project TEXT, time BIGINT NOT NULL, entry BYTEA NOT NULL, leaf BYTEA NOT NULL,"
	"  PRIMARY KEY(tenant, seq));"
	"CREATE INDEX ledger_grp ON ledger(tenant, grp);"
	"CREATE TABLE ledger_tree("
	"  tenant TEXT NOT NULL, level INTEGER NOT NULL, idx BIGINT NOT NULL,"
	"  hash BYTEA NOT NULL, PRIMARY KEY(tenant, level, idx));"
	"CREATE TABLE images("
	"  tenant TEXT NOT NULL, name TEXT NOT NULL, snapshot BYTEA NOT NULL,"
	"  created BIGINT NOT NULL, source TEXT, PRIMARY KEY(tenant, name));"
	"CREATE TABLE runs("
	"  tenant TEXT NOT NULL, id TEXT NOT NULL, project TEXT NOT NULL, grp TEXT NOT NULL,"
	"  draft TEXT, created BIGINT NOT NULL, record TEXT NOT NULL, PRIMARY KEY(tenant, id));"
	"CREATE INDEX runs_project ON runs(tenant, project, created);"
	"CREATE TABLE checkpoints("
	"  tenant TEXT NOT NULL, size BIGINT NOT NULL, root BYTEA NOT NULL, time BIGINT NOT NULL,"
	"  origin TEXT NOT NULL, signature BYTEA NOT NULL, PRIMARY KEY(tenant, size));"
	"CREATE TABLE project_contracts("
	"  tenant TEXT NOT NULL, project TEXT NOT NULL, doc TEXT NOT NULL, set_by TEXT,"
	"  time BIGINT NOT NULL, PRIMARY KEY(tenant, project));"
	/* one policy per table: the transaction's tenant, for reading and
	 * writing; '' (an expired SET LOCAL) and NULL (never set) match no
	 * tenant, which is never empty.  FORCE: the owner too. */
	"DO $$ DECLARE t TEXT; BEGIN"
	"  FOREACH t IN ARRAY string_to_array('" TENANT_TABLES "', ', ') LOOP"
	"    EXECUTE format('ALTER TABLE %I ADD CHECK (tenant <> '''')', t);"
	"    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);"
	"    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);"
	"    EXECUTE format('CREATE POLICY tenant_isolation ON %I"
	"      USING (tenant = current_setting(''airlock.tenant'', true))"
	"      WITH CHECK (tenant = current_setting(''airlock.tenant'', true))', t);"
	"  END LOOP; END $$;"
	/* what a request asks before it knows its tenant: the tenant of a
	 * live token or session, by the sha256 of its text, and nothing else,
	 * through functions that run as the owner, who may read those two
	 * tables across tenants (FORCE applies to the owner too; an owner can
	 * disable the policies anyway, so this grants the owner nothing new) */
	"DO $$ BEGIN"
	"  EXECUTE format('CREATE POLICY owner_lookup ON tokens FOR SELECT"
	"    USING (current_user = %L)', current_user);"
	"  EXECUTE format('CREATE POLICY owner_lookup ON sessions FOR SELECT"
	"    USING (current_user = %L)', current_user);"
	"END $$;"
	"CREATE FUNCTION airlock_token_tenant(token_hash TEXT, now BIGINT) RETURNS TEXT"
	"  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS"
	"  $$ SELECT tenant FROM public.tokens WHERE hash = token_hash AND NOT revoked"
	"     AND expires > now $$;"
	"CREATE FUNCTION airlock_session_tenant(session_hash TEXT, now BIGINT) RETURNS TEXT"
	"  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS"
	"  $$ SELECT tenant FROM public.sessions WHERE hash = session_hash AND expires > now $$;"
	"REVOKE ALL ON FUNCTION airlock_token_tenant(TEXT, BIGINT) FROM PUBLIC;"
	"REVOKE ALL ON FUNCTION airlock_session_tenant(TEXT, BIGINT) FROM PUBLIC;",
	/* 2: the tenant of a row is the transaction's unless the row says it
	 * (the policy still checks it): the modules' SQL, written once for
	 * both engines through the metadata seam (src/lib/db.h), names no
	 * tenant, as on SQLite, where the file is the tenant's */
	"DO $$ DECLARE t TEXT; BEGIN"
	"  FOREACH t IN ARRAY string_to_array('" TENANT_TABLES "', ', ') LOOP"
	"    EXECUTE format('ALTER TABLE %I ALTER COLUMN tenant"
	"      SET DEFAULT current_setting(''airlock.tenant'', true)', t);"
	"  END LOOP; END $$;"
	/* the tenant's policy row as meta.db's: policy.c reads WHERE id = 1 */
	"ALTER TABLE policy ADD COLUMN id INTEGER NOT NULL DEFAULT 1 CHECK (id = 1);",
	/* 3: what the modules on the seam write, as meta.db 5 has it: new
	 * projects', volumes' and commits' ids from the database (INSERT …
	 * RETURNING id); unnamed images (keyed by an id of their own), and images and runs in the
	 * order they were recorded (seq, one past the tenant's greatest: row-level security shows a
	 * transaction its tenant's rows only); tokens.revoked 0 or 1 as auth.c writes it; the
	 * integrations' catalogue and grants */
	"ALTER TABLE projects ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY;"
	"ALTER TABLE volumes ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY;"
	"ALTER TABLE commits ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY;"
	/* past every id already there (the owner sees every tenant's rows
	 * without FORCE, lifted in this transaction only) */
	"DO $$ DECLARE t TEXT; m BIGINT; BEGIN"
	"  FOREACH t IN ARRAY ARRAY['projects', 'volumes', 'commits'] LOOP"
	"    EXECUTE format('ALTER TABLE %I NO FORCE ROW LEVEL SECURITY', t);"
	"    EXECUTE format('SELECT coalesce(max(id), 0) FROM %I', t) INTO m;"
	"    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);"
	"    PERFORM setval(pg_get_serial_sequence(t, 'id'), m + 1, false);"
	"  END LOOP; END $$;"
	"ALTER TABLE images DROP CONSTRAINT images_pkey, ALTER COLUMN name DROP NOT NULL,"
	"  ADD COLUMN id BIGINT GENERATED BY DEFAULT AS IDENTITY,"
	"  ADD COLUMN seq BIGINT NOT NULL DEFAULT 0,"
	"  ADD CONSTRAINT images_name UNIQUE(tenant, name);"
	"ALTER TABLE images ADD PRIMARY KEY(tenant, id);"
	"CREATE INDEX images_seq ON images(tenant, seq);"
	"ALTER TABLE runs ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;"
	"CREATE INDEX runs_seq ON runs(tenant, seq);"
	"ALTER TABLE tokens ALTER COLUMN revoked DROP DEFAULT;"
	"ALTER TABLE tokens ALTER COLUMN revoked TYPE INTEGER"
	"  USING CASE WHEN revoked THEN 1 ELSE 0 END;"
	"ALTER TABLE tokens ALTER COLUMN revoked SET DEFAULT 0;"
	"CREATE OR REPLACE FUNCTION airlock_token_tenant(token_hash TEXT, now BIGINT) RETURNS TEXT"
	"  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS"
	"  $$ SELECT tenant FROM public.tokens WHERE hash = token_hash AND revoked = 0"
	"     AND expires > now $$;"
	"CREATE TABLE integrations("
	"  tenant TEXT NOT NULL, name TEXT NOT NULL, base_url TEXT NOT NULL, header TEXT NOT NULL,"
	"  secret BYTEA NOT NULL, ca TEXT, keep_bodies INTEGER NOT NULL,"
	"  insecure INTEGER NOT NULL, created BIGINT NOT NULL, created_by TEXT,"
	"  PRIMARY KEY(tenant, name));"
	"CREATE TABLE integration_grants("
	"  tenant TEXT NOT NULL, integration TEXT NOT NULL, kind TEXT NOT NULL,"
	"  who TEXT NOT NULL, PRIMARY KEY(tenant, integration, kind, who));"
	"DO $$ DECLARE t TEXT; BEGIN"
	"  FOREACH t IN ARRAY string_to_array('" TENANT_TABLES_3 "', ', ') LOOP"
	"    EXECUTE format('ALTER TABLE %I ADD CHECK (tenant <> '''')', t);"
	"    EXECUTE format('ALTER TABLE %I ALTER COLUMN tenant"
	"      SET DEFAULT current_setting(''airlock.tenant'', true)', t);"
	"    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);"
	"    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);"
	"    EXECUTE format('CREATE POLICY tenant_isolation ON %I"
	"      USING (tenant = current_setting(''airlock.tenant'', true))"
	"      WITH CHECK (tenant = current_setting(''airlock.tenant'', true))', t);"
	"  END LOOP; END $$;",
	/* 4: as meta.db 6: snapshots in the order they were recorded (gc's
	 * second mark), a commit's conflicts in the order they were found */
	"ALTER TABLE snapshots ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;"
	"CREATE INDEX snapshots_seq ON snapshots(tenant, seq);"
	"ALTER TABLE conflicts ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;",
	/* 5: the deployment's directory across tenants.  The service role
	 * sees the transaction's tenant only; what it must ask across them
	 * goes through functions that run as the owner and answer one narrow
	 * question each: the tenants' names (a tenant list, gc's round), the
	 * schema's version (a node checks it at start), and, as in 1, a live
	 * token's or session's tenant, now with a token that never expires
	 * (expires 0).  Creating a tenant needs none: the row is the
	 * transaction's own tenant's.  The deployment's policy (airlock.db's
	 * policy row on the embedded home) is a table of no tenant: the
	 * operator's ceilings, which every tenant's requests read. */
	"DO $$ BEGIN"
	"  EXECUTE format('CREATE POLICY owner_lookup ON tenants FOR SELECT"
	"    USING (current_user = %L)', current_user);"
	"END $$;"
	"CREATE FUNCTION airlock_tenants() RETURNS SETOF TEXT"
	"  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS"
	"  $$ SELECT tenant FROM public.tenants ORDER BY tenant $$;"
	"CREATE FUNCTION airlock_schema_version() RETURNS INTEGER"
	"  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS"
	"  $$ SELECT max(version) FROM public.airlock_schema $$;"
	"CREATE OR REPLACE FUNCTION airlock_token_tenant(token_hash TEXT, now BIGINT) RETURNS TEXT"
	"  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS"
	"  $$ SELECT tenant FROM public.tokens WHERE hash = token_hash AND revoked = 0"
	"     AND (expires = 0 OR expires > now) $$;"
	"REVOKE ALL ON FUNCTION airlock_tenants() FROM PUBLIC;"
	"REVOKE ALL ON FUNCTION airlock_schema_version() FROM PUBLIC;"
	"CREATE TABLE deployment_policy(id INTEGER PRIMARY KEY CHECK (id = 1), doc TEXT NOT NULL);",
	/* 6: liveness across nodes (architecture.md "Several nodes").  Each
	 * process that runs attempts is a node (a random id per process) and
	 * beats here every few seconds, on the database's clock; a running
	 * attempt's record names its node.  Another node's attempt is
	 * interrupted once its node's heartbeat is older than the lease.  The
	 * service role reaches the table only through these functions: a
	 * node's beat, whether a node is alive, and which tenants hold running
	 * attempts of dead nodes (the runs' owner_lookup policy lets the owner
	 * read them; the partial index keeps that a look at running rows). */
	"CREATE TABLE nodes(id TEXT PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16}$'),"
	"  started BIGINT NOT NULL, heartbeat BIGINT NOT NULL);"
	"REVOKE ALL ON nodes FROM PUBLIC;"
	"CREATE INDEX runs_running ON runs(tenant)"
	"  WHERE draft IS NULL AND record LIKE '%\"outcome\":\"running\"%';"
	"DO $$ BEGIN"
	"  EXECUTE format('CREATE POLICY owner_lookup ON runs FOR SELECT"
	"    USING (current_user = %L)', current_user);"
	"END $$;"
	"CREATE FUNCTION airlock_node_beat(node TEXT) RETURNS BIGINT"
	"  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS"
	"  $$ DELETE FROM public.nodes"
	"       WHERE heartbeat < CAST(extract(epoch FROM clock_timestamp()) AS BIGINT) - 86400;"
	"     INSERT INTO public.nodes(id, started, heartbeat)"
	"       VALUES (node, CAST(extract(epoch FROM clock_timestamp()) AS BIGINT),"
	"               CAST(extract(epoch FROM clock_timestamp()) AS BIGINT))"
	"       ON CONFLICT (id) DO UPDATE SET heartbeat = EXCLUDED.heartbeat"
	"       RETURNING heartbeat $$;"
	"CREATE FUNCTION airlock_node_alive(node TEXT, lease BIGINT) RETURNS BOOLEAN"
	"  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS"
	"  $$ SELECT EXISTS (SELECT 1 FROM public.nodes WHERE id = node AND heartbeat >="
	"       CAST(extract(epoch FROM clock_timestamp()) AS BIGINT) - lease) $$;"
	"CREATE FUNCTION airlock_orphan_tenants(lease BIGINT) RETURNS SETOF TEXT"
	"  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS"
	"  $$ SELECT DISTINCT r.tenant FROM public.runs r"
	"     WHERE r.draft IS NULL AND r.record LIKE '%\"outcome\":\"running\"%'"
	"       AND NOT EXISTS (SELECT 1 FROM public.nodes n"
	"         WHERE n.id = substring(r.record FROM '\"node\":\"([0-9a-f]{16})\"')"
	"         AND n.heartbeat >="
	"           CAST(extract(epoch FROM clock_timestamp()) AS BIGINT) - lease)"
	"     ORDER BY 1 $$;"
	"REVOKE ALL ON FUNCTION airlock_node_beat(TEXT) FROM PUBLIC;"
	"REVOKE ALL ON FUNCTION airlock_node_alive(TEXT, BIGINT) FROM PUBLIC;"
	"REVOKE ALL ON FUNCTION airlock_orphan_tenants(BIGINT) FROM PUBLIC;"
	/* a cancel asked of a run in flight on another node: a tenant row the
	 * node that runs it finds among its own running attempts */
	"CREATE TABLE run_cancels("
	"  tenant TEXT NOT NULL DEFAULT current_setting('airlock.tenant', true)"
	"    CHECK (tenant <> ''),"
	"  id TEXT NOT NULL, requested BIGINT NOT NULL, PRIMARY KEY(tenant, id));"
	"ALTER TABLE run_cancels ENABLE ROW LEVEL SECURITY;"
	"ALTER TABLE run_cancels FORCE ROW LEVEL SECURITY;"
	"CREATE POLICY tenant_isolation ON run_cancels"
	"  USING (tenant = current_setting('airlock.tenant', true))"
	"  WITH CHECK (tenant = current_setting('airlock.tenant', true));"
	"DO $$ BEGIN"
	"  EXECUTE format('CREATE POLICY owner_lookup ON run_cancels FOR SELECT"
	"    USING (current_user = %L)', current_user);"
	"END $$;"
	"CREATE FUNCTION airlock_node_cancels(node TEXT) RETURNS TABLE(tenant TEXT, id TEXT)"
	"  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS"
	"  $$ SELECT c.tenant, c.id FROM public.run_cancels c"
	"     JOIN public.runs r ON r.tenant = c.tenant AND r.id = c.id"
	"     WHERE r.draft IS NULL AND r.record LIKE '%\"outcome\":\"running\"%'"
	"       AND substring(r.record FROM '\"node\":\"([0-9a-f]{16})\"') = node $$;"
	"REVOKE ALL ON FUNCTION airlock_node_cancels(TEXT) FROM PUBLIC;",
	/* 7: as meta.db 7: what each pass deleted from the bucket, by sweep
	 * generation (gc_sweeps.c; the generation is settings' blobs_gen) */
	"CREATE TABLE blobs_swept("
	"  tenant TEXT NOT NULL DEFAULT current_setting('airlock.tenant', true)"
	"    CHECK (tenant <> ''),"
	"  gen BIGINT NOT NULL, id BYTEA NOT NULL, time BIGINT NOT NULL,"
	"  PRIMARY KEY(tenant, gen, id));"
	"ALTER TABLE blobs_swept ENABLE ROW LEVEL SECURITY;"
	"ALTER TABLE blobs_swept FORCE ROW LEVEL SECURITY;"
	"CREATE POLICY tenant_isolation ON blobs_swept"
	"  USING (tenant = current_setting('airlock.tenant', true))"
	"  WITH CHECK (tenant = current_setting('airlock.tenant', true));",
	/* 8: as meta.db 8: a draft's run by its draft (every volume read
	 * asks).  And the owner's lookup policies apply to the owner alone:
	 * as policies of every role, they were ORed into the service role's
	 * queries too ("tenant = … OR current_user = owner"), so no index on
	 * (tenant, …) could serve them: a volume's run, a run by id, a
	 * project's runs each read every tenant's rows (55-160 ms at 400k
	 * runs).  The owner's functions run as the owner: still theirs. */
	"CREATE INDEX runs_draft ON runs(tenant, draft) WHERE draft IS NOT NULL;"
	"DO $$ DECLARE t TEXT; BEGIN"
	"  FOREACH t IN ARRAY ARRAY['tokens', 'sessions', 'tenants', 'runs', 'run_cancels'] LOOP"
	"    EXECUTE format('ALTER POLICY owner_lookup ON %I TO %I', t, current_user);"
	"  END LOOP; END $$;",
	/* 9: small objects of a node with --blobs, kept here rather than in
	 * the bucket (backend/postgres/odb.c; no meta.db counterpart: a home
	 * keeps its objects in its own store).  stored: the database's clock
	 * at the last write, the sweep's LastModified. */
	"CREATE TABLE blobs_inline("
	"  tenant TEXT NOT NULL DEFAULT current_setting('airlock.tenant', true)"
	"    CHECK (tenant <> ''),"
	"  id BYTEA NOT NULL CHECK (octet_length(id) = 32), bytes BYTEA NOT NULL,"
	"  stored BIGINT NOT NULL, PRIMARY KEY(tenant, id));"
	"ALTER TABLE blobs_inline ENABLE ROW LEVEL SECURITY;"
	"ALTER TABLE blobs_inline FORCE ROW LEVEL SECURITY;"
	"CREATE POLICY tenant_isolation ON blobs_inline"
	"  USING (tenant = current_setting('airlock.tenant', true))"
	"  WITH CHECK (tenant = current_setting('airlock.tenant', true));",
};

_Static_assert(ARRAY_SIZE(migrations) == AL_PG_SCHEMA, "AL_PG_SCHEMA (pg.h) is the last migration");

struct pgconn {
	PGconn *c;
	struct al_error *err;
};

static int pg_fail(PGconn *c, PGresult *res, struct al_error *err, const char *what)
{
	const char *m = res ? pq.result_error_field(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	if (!m || !*m)
		m = pq.error_message(c);
	char q[200];
	al_quote(m ? m : "?", strcspn(m ? m : "?", "\n"), q, sizeof(q));
	return al_fail(err, AL_EIO, 0, "postgres: %s: %s", what, q);
}

/* One statement (or several, no parameters); rows go to *out if wanted. */
static int exec(PGconn *c, const char *sql, PGresult **out, struct al_error *err, const char *what)
{
	PGresult *res = pq.exec(c, sql);
	ExecStatusType st = res ? pq.result_status(res) : PGRES_FATAL_ERROR;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		int r = pg_fail(c, res, err, what);
		pq.clear(res);
		return r;
	}
	if (out)
		*out = res;
	else
		pq.clear(res);
	return 0;
}

static int query1(PGconn *c, const char *sql, const char *param, PGresult **out,
		  struct al_error *err, const char *what)
{
	const char *const vals[1] = { param };
	PGresult *res = pq.exec_params(c, sql, param ? 1 : 0, NULL, vals, NULL, NULL, 0);
	if (!res || pq.result_status(res) != PGRES_TUPLES_OK) {
		int r = pg_fail(c, res, err, what);
		pq.clear(res);
		return r;
	}
	*out = res;
	return 0;
}

static bool role_name_ok(const char *r)
{
	size_t n = strlen(r);
	if (n == 0 || n > 63 || !((r[0] >= 'a' && r[0] <= 'z') || r[0] == '_'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((r[i] >= 'a' && r[i] <= 'z') || (r[i] >= '0' && r[i] <= '9') || r[i] == '_'))
			return false;
	return true;
}

/* The service role: exists, no superuser, no BYPASSRLS, owns nothing here,
 * and cannot become the owner. */
static int check_service_role(PGconn *c, const char *role, struct al_error *err)
{
	PGresult *res = NULL;
	int r = query1(c,
		       "SELECT r.rolsuper, r.rolbypassrls,"
		       "  (SELECT count(*) FROM pg_class k WHERE k.relowner = r.oid"
		       "     AND k.relnamespace = 'public'::regnamespace)"
		       "  + (SELECT count(*) FROM pg_proc p WHERE p.proowner = r.oid"
		       "     AND p.pronamespace = 'public'::regnamespace),"
		       "  r.oid = (SELECT oid FROM pg_roles WHERE rolname = current_user)"
		       "  OR pg_has_role(r.oid, current_user, 'MEMBER')"
		       " FROM pg_roles r WHERE r.rolname = $1",
		       role, &res, err, "check the service role");
	if (r < 0)
		return r;
	if (pq.ntuples(res) != 1)
		r = al_fail(err, AL_EINVAL, 0,
			    "postgres: no role %s (create it first: docs/operations.md)", role);
	else if (!strcmp(pq.getvalue(res, 0, 0), "t"))
		r = al_fail(
			err, AL_EINVAL, 0,
			"postgres: the service role %s is a superuser, which bypasses row-level "
			"security",
			role);
	else if (!strcmp(pq.getvalue(res, 0, 1), "t"))
		r = al_fail(err, AL_EINVAL, 0, "postgres: the service role %s has BYPASSRLS", role);
	else if (strcmp(pq.getvalue(res, 0, 2), "0"))
		r = al_fail(err, AL_EINVAL, 0,
			    "postgres: the service role %s owns objects in the schema (an owner "
			    "can disable row-level security)",
			    role);
	else if (!strcmp(pq.getvalue(res, 0, 3), "t"))
		r = al_fail(err, AL_EINVAL, 0,
			    "postgres: the service role %s is (or can become) the schema's owner",
			    role);
	pq.clear(res);
	return r;
}

int al_pg_migrate(const char *url, const char *service_role, int *from, int *to,
		  struct al_error *err)
{
	if (strncmp(url, "postgres://", 11) && strncmp(url, "postgresql://", 13))
		return al_fail(err, AL_EINVAL, 0,
			       "--metadata: expected postgres://USER@HOST/DB (libpq's URI)");
	if (!role_name_ok(service_role))
		return al_fail(err, AL_EINVAL, 0,
			       "postgres: invalid service role name (lower-case [a-z_][a-z0-9_]*)");
	int lr = al_pq__load(err);
	if (lr < 0)
		return lr;
	PGconn *c = pq.connectdb(url);
	if (!c)
		return al_fail(err, AL_ENOMEM, 0, "postgres: connect");
	int r = 0;
	PGresult *res = NULL;
	if (pq.status(c) != CONNECTION_OK) {
		pg_fail(c, NULL, err, "connect");
		r = AL_EUNAVAIL;
		if (err)
			err->code = r;
		goto out;
	}
	/* one migrator at a time; the others wait, then find the work done */
	if ((r = exec(c,
		      "SET client_min_messages = warning;"
		      "SELECT pg_advisory_lock(hashtext('airlock_schema'));"
		      "CREATE TABLE IF NOT EXISTS airlock_schema("
		      "  version INTEGER PRIMARY KEY, applied TIMESTAMPTZ NOT NULL DEFAULT now());"
		      "REVOKE ALL ON airlock_schema FROM PUBLIC;",
		      NULL, err, "prepare")) < 0)
		goto out;
	if ((r = check_service_role(c, service_role, err)) < 0)
		goto out;
	if ((r = query1(c, "SELECT coalesce(max(version), 0) FROM airlock_schema", NULL, &res, err,
			"read the schema version")) < 0)
		goto out;
	int have = atoi(pq.getvalue(res, 0, 0));
	pq.clear(res);
	res = NULL;
	*from = have;
	if (have > (int)ARRAY_SIZE(migrations)) {
		r = al_fail(err, AL_ESTATE, 0,
			    "postgres: the database is at schema %d, newer than this airlock's %d "
			    "(upgrade airlock)",
			    have, (int)ARRAY_SIZE(migrations));
		goto out;
	}
	for (int v = have + 1; v <= (int)ARRAY_SIZE(migrations); v++) {
		char rec[96];
		snprintf(rec, sizeof(rec), "INSERT INTO airlock_schema(version) VALUES (%d);", v);
		if ((r = exec(c, "BEGIN", NULL, err, "begin")) < 0)
			goto out;
		if ((r = exec(c, migrations[v - 1], NULL, err, "migrate")) < 0 ||
		    (r = exec(c, rec, NULL, err, "record the migration")) < 0 ||
		    (r = exec(c, "COMMIT", NULL, err, "commit")) < 0) {
			exec(c, "ROLLBACK", NULL, NULL, "rollback");
			goto out;
		}
	}
	/* the service role's rights, granted again on every run (idempotent):
	 * rows only, no DDL, no TRUNCATE, no ownership */
	char grant[2048];
	snprintf(grant, sizeof(grant),
		 "GRANT USAGE ON SCHEMA public TO %s;"
		 "GRANT SELECT, INSERT, UPDATE, DELETE ON " TENANT_TABLES ", " TENANT_TABLES_3
		 " TO %s;"
		 "GRANT SELECT, INSERT, DELETE ON deployment_policy TO %s;"
		 "GRANT SELECT, INSERT, UPDATE, DELETE ON run_cancels TO %s;"
		 "GRANT SELECT, INSERT, DELETE ON blobs_swept TO %s;"
		 "GRANT SELECT, INSERT, UPDATE, DELETE ON blobs_inline TO %s;"
		 "GRANT EXECUTE ON FUNCTION airlock_token_tenant(TEXT, BIGINT),"
		 "  airlock_session_tenant(TEXT, BIGINT), airlock_tenants(),"
		 "  airlock_schema_version(), airlock_node_beat(TEXT),"
		 "  airlock_node_alive(TEXT, BIGINT), airlock_orphan_tenants(BIGINT),"
		 "  airlock_node_cancels(TEXT) TO %s;",
		 service_role, service_role, service_role, service_role, service_role, service_role,
		 service_role);
	if ((r = exec(c, grant, NULL, err, "grant the service role")) < 0)
		goto out;
	*to = (int)ARRAY_SIZE(migrations);
out:
	pq.clear(res);
	pq.finish(c);
	return r;
}
