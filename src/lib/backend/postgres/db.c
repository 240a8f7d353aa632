/* The metadata seam's PostgreSQL driver (src/lib/db.h), over libpq loaded
 * on first use (pq.h).
 *
 * A connection serves one tenant: every transaction begins with
 * set_config('airlock.tenant', TENANT, true), the SET LOCAL that row-level
 * security's policies read (pg.c) and that ends with the transaction, so
 * a pooled server connection never carries it to another; a statement
 * outside a transaction gets one of its own.  A write transaction also
 * takes a transaction-scoped advisory lock on the tenant: writers of one
 * tenant serialise as they do on the tenant's SQLite file (BEGIN
 * IMMEDIATE), which the ledger's appends rely on; readers never wait.
 *
 * Statements: ?N placeholders become $N outside literals, identifiers and
 * comments; values go as text (integers in decimal) and blobs in binary;
 * results come in binary and are read by their column's type.  A
 * statement's SQL is prepared on the server once per connection, at its
 * first step, under a name the connection keeps for that SQL (up to
 * MAX_NAMED statements; beyond, each step is parsed anew). */
#include <endian.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_driver.h"
#include "pq.h"
#include "util.h"

#define MAX_NAMED 512

/* pg_type's OIDs of the types a column may have (server/catalog/pg_type_d.h) */
enum {
	OID_BOOL = 16,
	OID_BYTEA = 17,
	OID_NAME = 19,
	OID_INT8 = 20,
	OID_INT2 = 21,
	OID_INT4 = 23,
	OID_TEXT = 25,
	OID_OID = 26,
	OID_BPCHAR = 1042,
	OID_VARCHAR = 1043,
	OID_VOID = 2278,
};

struct named {
	char *sql; /* translated */
	char name[16];
	bool prepared;
};

struct pg_db {
	struct al_db base;
	PGconn *c;
	char *url;       /* what it was opened with: the pool's key */
	char tenant[64]; /* "" for none */
	int64_t changes;
	struct named *named;
	size_t nnamed;
};

struct pg_stmt {
	struct al_db_stmt base;
	char *sql; /* translated */
	struct named *named;
	int nparams;
	Oid types[AL_DB_MAX_PARAMS];
	char *vals[AL_DB_MAX_PARAMS];
	int lens[AL_DB_MAX_PARAMS];
	int fmts[AL_DB_MAX_PARAMS];
	PGresult *res;
	int row, nrows;
	bool done;
	char scratch[24];
};

#define DB(d) ((struct pg_db *)(d))
#define ST(s) ((struct pg_stmt *)(s))

static void no_notices(void *arg, const char *message)
{
	(void)arg;
	(void)message; /* the library never prints (STYLE.md) */
}

static bool sqlstate_is(const char *s, const char *prefix)
{
	return s && !strncmp(s, prefix, strlen(prefix));
}

static int pg_fail(struct pg_db *db, PGresult *res, struct al_error *err, const char *what)
{
	const char *state = res ? al_pq.result_error_field(res, PG_DIAG_SQLSTATE) : NULL;
	const char *m = res ? al_pq.result_error_field(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	if (!m || !*m)
		m = al_pq.error_message(db->c);
	if (!m)
		m = "?";
	int code = AL_EIO;
	if (sqlstate_is(state, "23505"))
		code = AL_EEXIST;
	else if (sqlstate_is(state, "22"))
		code = AL_EINVAL; /* a value the type refuses (SQLite has no such check) */
	else if (sqlstate_is(state, "42501"))
		code = AL_EDENIED; /* a privilege, or a row another tenant's */
	else if (sqlstate_is(state, "40001") || sqlstate_is(state, "40P01") ||
		 sqlstate_is(state, "55P03") || sqlstate_is(state, "57") ||
		 sqlstate_is(state, "08") || al_pq.status(db->c) != CONNECTION_OK)
		code = AL_EUNAVAIL;
	else if (sqlstate_is(state, "53100"))
		code = AL_ELIMIT;
	else if (sqlstate_is(state, "53200"))
		code = AL_ENOMEM;
	else if (sqlstate_is(state, "XX001") || sqlstate_is(state, "XX002"))
		code = AL_ECORRUPT;
	else if (sqlstate_is(state, "25006"))
		code = AL_EUSAGE; /* a write in a read transaction */
	char q[200];
	al_quote(m, strcspn(m, "\n"), q, sizeof(q));
	return al_fail(err, code, 0, "postgres: %s: %s", what, q);
}

/* Run sql (no parameters); its last result must be a command's or rows'. */
static int simple(struct pg_db *db, const char *sql, PGresult **out, struct al_error *err,
		  const char *what)
{
	PGresult *res = al_pq.exec(db->c, sql);
	ExecStatusType s = res ? al_pq.result_status(res) : PGRES_FATAL_ERROR;
	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
		int r = pg_fail(db, res, err, what);
		al_pq.clear(res);
		return r;
	}
	if (out)
		*out = res;
	else
		al_pq.clear(res);
	return 0;
}

static void note_changes(struct pg_db *db, PGresult *res)
{
	const char *s = al_pq.cmd_status(res);
	if (!strncmp(s, "INSERT", 6) || !strncmp(s, "UPDATE", 6) || !strncmp(s, "DELETE", 6) ||
	    !strncmp(s, "MERGE", 5))
		db->changes = strtoll(al_pq.cmd_tuples(res), NULL, 10);
}

/* A connection the server or the network dropped, made again with the same
 * parameters (PQreset): its prepared statements are gone with the old
 * session.  Only ever between transactions, so nothing half-done is
 * replayed. */
static int reconnect(struct pg_db *db, struct al_error *err)
{
	al_pq.reset(db->c);
	if (al_pq.status(db->c) != CONNECTION_OK)
		return pg_fail(db, NULL, err, "reconnect");
	for (size_t i = 0; i < db->nnamed; i++)
		db->named[i].prepared = false;
	return simple(db, "SET client_encoding = 'UTF8'", NULL, err, "reconnect");
}

static int begin_once(struct pg_db *db, const char *sql, struct al_error *err)
{
	int r = simple(db, sql, NULL, err, "begin");
	if (r < 0 && al_pq.status(db->c) == CONNECTION_OK)
		al_pq.clear(al_pq.exec(db->c, "ROLLBACK"));
	return r;
}

/* BEGIN with the tenant set for the transaction (and, to write, its lock),
 * in one round trip: the tenant is a checked name, safe as a literal.  A
 * connection found dropped (before, or by this BEGIN: a server restart, a
 * failover) is made again once and the BEGIN sent again. */
static int begin_txn(struct pg_db *db, enum al_db_mode mode, bool lock, struct al_error *err)
{
	char sql[320];
	const char *t = db->tenant;
	int n = snprintf(sql, sizeof(sql), "%s",
			 mode == AL_DB_WRITE ? "BEGIN"
					     : "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");
	if (*t)
		n += snprintf(sql + n, sizeof(sql) - n,
			      "; SELECT set_config('airlock.tenant', '%s', true)", t);
	if (lock)
		snprintf(sql + n, sizeof(sql) - n,
			 "; SELECT pg_advisory_xact_lock(hashtext('airlock.tenant:%s'))", t);
	int r = 0;
	if (al_pq.status(db->c) != CONNECTION_OK && (r = reconnect(db, err)) < 0)
		return r;
	r = begin_once(db, sql, err);
	if (r < 0 && al_pq.status(db->c) != CONNECTION_OK && reconnect(db, err) == 0)
		r = begin_once(db, sql, err);
	return r;
}

static int end_txn(struct pg_db *db, struct al_error *err)
{
	PGresult *res = NULL;
	int r = simple(db, "COMMIT", &res, err, "commit");
	if (r < 0)
		return r;
	/* COMMIT of a transaction that failed earlier answers ROLLBACK */
	if (strcmp(al_pq.cmd_status(res), "COMMIT"))
		r = al_fail(err, AL_EIO, 0,
			    "postgres: commit: a statement of the transaction failed; it was "
			    "rolled back");
	al_pq.clear(res);
	return r;
}

static void p_rollback(struct al_db *db)
{
	al_pq.clear(al_pq.exec(DB(db)->c, "ROLLBACK"));
}

/* A statement outside a transaction runs in one of its own, with the
 * tenant set (without it, row-level security would show it nothing). */
static bool implicit_txn(struct pg_db *db)
{
	return !db->base.in_txn && *db->tenant;
}

static int p_exec(struct al_db *d, const char *sql, struct al_error *err)
{
	struct pg_db *db = DB(d);
	bool own = implicit_txn(db);
	int r = own ? begin_txn(db, AL_DB_WRITE, false, err) : 0;
	PGresult *res = NULL;
	if (r == 0 && (r = simple(db, sql, &res, err, "exec")) == 0) {
		note_changes(db, res);
		al_pq.clear(res);
	}
	if (own && r == 0)
		r = end_txn(db, err);
	if (own && r < 0)
		p_rollback(d);
	return r;
}

static int p_begin(struct al_db *db, enum al_db_mode mode, struct al_error *err)
{
	return begin_txn(DB(db), mode, mode == AL_DB_WRITE, err);
}

static int p_commit(struct al_db *db, struct al_error *err)
{
	return end_txn(DB(db), err);
}

static int64_t p_changes(const struct al_db *db)
{
	return ((const struct pg_db *)db)->changes;
}

static struct named *name_for(struct pg_db *db, const char *sql)
{
	for (size_t i = 0; i < db->nnamed; i++)
		if (!strcmp(db->named[i].sql, sql))
			return &db->named[i];
	if (db->nnamed == MAX_NAMED)
		return NULL;
	if (!db->named && !(db->named = calloc(MAX_NAMED, sizeof(*db->named))))
		return NULL;
	struct named *n = &db->named[db->nnamed];
	if (!(n->sql = strdup(sql)))
		return NULL;
	snprintf(n->name, sizeof(n->name), "al%zu", db->nnamed);
	db->nnamed++;
	return n;
}

static int p_prepare(struct al_db *d, const char *sql, struct al_db_stmt **out,
		     struct al_error *err)
{
	struct pg_stmt *st = calloc(1, sizeof(*st));
	if (!st || !(st->sql = strdup(sql))) {
		free(st);
		return al_fail(err, AL_ENOMEM, 0, "database: out of memory");
	}
	int r = al_db__placeholders(sql, st->sql, &st->nparams, err);
	if (r < 0) {
		free(st->sql);
		free(st);
		return r;
	}
	st->named = name_for(DB(d), st->sql);
	*out = &st->base;
	return 0;
}

static void clear_result(struct pg_stmt *st)
{
	al_pq.clear(st->res);
	st->res = NULL;
	st->done = false;
}

static void p_finalize(struct al_db_stmt *s)
{
	struct pg_stmt *st = ST(s);
	clear_result(st);
	for (int i = 0; i < AL_DB_MAX_PARAMS; i++)
		free(st->vals[i]);
	free(st->sql);
	free(st);
}

static int p_bind(struct al_db_stmt *s, int i, enum al_db_type type, int64_t v, const void *p,
		  size_t n)
{
	struct pg_stmt *st = ST(s);
	if (i < 1 || i > st->nparams)
		return AL_EUSAGE;
	if (n > INT32_MAX - 1)
		return AL_ELIMIT;
	char *val = NULL;
	if (type == AL_DB_INT) {
		if (!(val = malloc(24)))
			return AL_ENOMEM;
		n = (size_t)snprintf(val, 24, "%" PRId64, v);
	} else if (type != AL_DB_NULL) {
		if (!(val = malloc(n + 1)))
			return AL_ENOMEM;
		memcpy(val, p, n);
		val[n] = 0;
	}
	free(st->vals[i - 1]);
	st->vals[i - 1] = val;
	st->lens[i - 1] = (int)n;
	st->fmts[i - 1] = type == AL_DB_BLOB;
	/* the type is said where the server could not infer it well (SELECT ?1,
	 * ?1 + 1): an integer is int8, a blob bytea; text and NULL: inferred */
	st->types[i - 1] = type == AL_DB_INT ? OID_INT8 : type == AL_DB_BLOB ? OID_BYTEA : 0;
	return 0;
}

static bool type_ok(Oid t)
{
	switch (t) {
	case OID_BOOL:
	case OID_BYTEA:
	case OID_NAME:
	case OID_INT8:
	case OID_INT2:
	case OID_INT4:
	case OID_TEXT:
	case OID_OID:
	case OID_BPCHAR:
	case OID_VARCHAR:
	case OID_VOID: return true;
	}
	return false;
}

/* The next result of a pipeline, expected of a command (the NULL that ends
 * a command's results read too); its status in *s. */
static PGresult *pipe_result(PGconn *c, ExecStatusType *s)
{
	PGresult *res = al_pq.get_result(c);
	*s = res ? al_pq.result_status(res) : PGRES_FATAL_ERROR;
	if (res && *s != PGRES_PIPELINE_SYNC)
		al_pq.clear(al_pq.get_result(c));
	return res;
}

/* A statement in a transaction of its own, with the tenant set: the BEGIN
 * as begin_txn sends it (with its reconnect: nothing has run yet), then
 * the statement (prepared first if need be) and the COMMIT as one
 * pipeline: two round trips in all instead of three or four.  *out: the
 * statement's result.  Any failure leaves nothing: the transaction is
 * rolled back. */
static int run_own(struct pg_stmt *st, PGresult **out, struct al_error *err)
{
	struct pg_db *db = DB(st->base.db);
	int r = begin_txn(db, AL_DB_WRITE, false, err);
	if (r < 0)
		return r;
	PGconn *c = db->c;
	if (!al_pq.enter_pipeline_mode(c)) {
		r = pg_fail(db, NULL, err, "pipeline");
		p_rollback(&db->base);
		return r;
	}
	bool prep = st->named && !st->named->prepared;
	const char *const *vals = (const char *const *)st->vals;
	bool sent = (!prep ||
		     al_pq.send_prepare(c, st->named->name, st->sql, st->nparams, st->types)) &&
		    (st->named ? al_pq.send_query_prepared(c, st->named->name, st->nparams, vals,
							   st->lens, st->fmts, 1)
			       : al_pq.send_query_params(c, st->sql, st->nparams, st->types, vals,
							 st->lens, st->fmts, 1)) &&
		    al_pq.send_query_params(c, "COMMIT", 0, NULL, NULL, NULL, NULL, 1) &&
		    al_pq.pipeline_sync(c);
	/* the results in order: [the prepare], the statement, the COMMIT; the
	 * first failure is the one reported (those after it are "aborted") */
	PGresult *mine = NULL;
	int n = 2 + prep;
	for (int i = 0; sent && i < n; i++) {
		ExecStatusType s;
		PGresult *res = pipe_result(c, &s);
		bool stmt = i == n - 2, ok = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
		if (ok && prep && i == 0)
			st->named->prepared = true;
		if (!ok && r == 0)
			r = pg_fail(db, res, err,
				    stmt         ? "statement"
				    : i == n - 1 ? "commit"
						 : "prepare");
		/* COMMIT of a transaction that failed answers ROLLBACK */
		if (ok && i == n - 1 && strcmp(al_pq.cmd_status(res), "COMMIT") && r == 0)
			r = al_fail(err, AL_EIO, 0, "postgres: commit: rolled back");
		if (stmt && ok)
			mine = res;
		else
			al_pq.clear(res);
	}
	if (!sent)
		r = pg_fail(db, NULL, err, "pipeline");
	else { /* the sync's own result */
		ExecStatusType s;
		al_pq.clear(pipe_result(c, &s));
	}
	al_pq.exit_pipeline_mode(c);
	if (al_pq.status(c) == CONNECTION_OK && al_pq.transaction_status(c) != PQTRANS_IDLE)
		al_pq.clear(al_pq.exec(c, "ROLLBACK"));
	if (r < 0) {
		al_pq.clear(mine);
		return r;
	}
	*out = mine;
	return 0;
}

static int run(struct pg_stmt *st, struct al_error *err)
{
	struct pg_db *db = DB(st->base.db);
	bool own = implicit_txn(db);
	PGresult *res = NULL;
	int r = 0;
	if (own) {
		if ((r = run_own(st, &res, err)) < 0)
			return r;
		own = false;
		goto done;
	}
	if (st->named && !st->named->prepared) {
		res = al_pq.prepare(db->c, st->named->name, st->sql, st->nparams, st->types);
		if (!res || al_pq.result_status(res) != PGRES_COMMAND_OK) {
			r = pg_fail(db, res, err, "prepare");
			goto out;
		}
		st->named->prepared = true;
		al_pq.clear(res);
	}
	const char *const *vals = (const char *const *)st->vals;
	res = st->named ? al_pq.exec_prepared(db->c, st->named->name, st->nparams, vals, st->lens,
					      st->fmts, 1)
			: al_pq.exec_params(db->c, st->sql, st->nparams, st->types, vals, st->lens,
					    st->fmts, 1);
	ExecStatusType s = res ? al_pq.result_status(res) : PGRES_FATAL_ERROR;
	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
		r = pg_fail(db, res, err, "statement");
		goto out;
	}
done:
	for (int i = 0; i < al_pq.nfields(res); i++)
		if (!type_ok(al_pq.ftype(res, i))) {
			r = al_fail(err, AL_EUSAGE, 0,
				    "database: column %d has a type (oid %u) the seam does not "
				    "read: CAST it to BIGINT, TEXT or BYTEA",
				    i, (unsigned)al_pq.ftype(res, i));
			goto out;
		}
	note_changes(db, res);
	if (own && (r = end_txn(db, err)) < 0)
		goto out;
	own = false;
	st->res = res;
	st->nrows = al_pq.ntuples(res);
	st->row = -1;
	return 0;
out:
	al_pq.clear(res);
	if (own)
		p_rollback(&db->base);
	return r;
}

static int p_step(struct al_db_stmt *s, struct al_error *err)
{
	struct pg_stmt *st = ST(s);
	if (st->done) /* stepped past its end: again from the start, as SQLite does */
		clear_result(st);
	if (!st->res) {
		int r = run(st, err);
		if (r < 0)
			return r;
	}
	if (++st->row < st->nrows)
		return AL_DB_ROW;
	st->done = true;
	return AL_DB_DONE;
}

static void p_reset(struct al_db_stmt *s)
{
	clear_result(ST(s));
}

static int p_column_count(struct al_db_stmt *s)
{
	return ST(s)->res ? al_pq.nfields(ST(s)->res) : 0;
}

static bool cell(struct pg_stmt *st, int i)
{
	return st->res && st->row >= 0 && st->row < st->nrows && i >= 0 &&
	       i < al_pq.nfields(st->res) && !al_pq.getisnull(st->res, st->row, i);
}

static enum al_db_type p_column_type(struct al_db_stmt *s, int i)
{
	struct pg_stmt *st = ST(s);
	if (!cell(st, i))
		return AL_DB_NULL;
	switch (al_pq.ftype(st->res, i)) {
	case OID_BYTEA: return AL_DB_BLOB;
	case OID_TEXT:
	case OID_NAME:
	case OID_BPCHAR:
	case OID_VARCHAR: return AL_DB_TEXT;
	case OID_VOID: return AL_DB_NULL;
	default: return AL_DB_INT;
	}
}

static int64_t p_column_int64(struct al_db_stmt *s, int i)
{
	struct pg_stmt *st = ST(s);
	enum al_db_type t = p_column_type(s, i);
	if (t == AL_DB_TEXT)
		return strtoll(al_pq.getvalue(st->res, st->row, i), NULL, 10);
	if (t != AL_DB_INT)
		return 0;
	const unsigned char *v = (const unsigned char *)al_pq.getvalue(st->res, st->row, i);
	switch (al_pq.getlength(st->res, st->row, i)) {
	case 8: {
		uint64_t x;
		memcpy(&x, v, 8);
		return (int64_t)be64toh(x);
	}
	case 4: {
		uint32_t x;
		memcpy(&x, v, 4);
		return al_pq.ftype(st->res, i) == OID_OID ? (int64_t)be32toh(x)
							  : (int64_t)(int32_t)be32toh(x);
	}
	case 2: {
		uint16_t x;
		memcpy(&x, v, 2);
		return (int16_t)be16toh(x);
	}
	case 1: return v[0];
	}
	return 0;
}

static const char *p_column_text(struct al_db_stmt *s, int i)
{
	struct pg_stmt *st = ST(s);
	switch (p_column_type(s, i)) {
	case AL_DB_NULL: return NULL;
	case AL_DB_INT:
		snprintf(st->scratch, sizeof(st->scratch), "%" PRId64, p_column_int64(s, i));
		return st->scratch;
	default: /* libpq ends a binary value with a NUL too */
		return al_pq.getvalue(st->res, st->row, i);
	}
}

static const void *p_column_blob(struct al_db_stmt *s, int i)
{
	const char *v = p_column_text(s, i);
	return v ? v : "";
}

static size_t p_column_bytes(struct al_db_stmt *s, int i)
{
	struct pg_stmt *st = ST(s);
	switch (p_column_type(s, i)) {
	case AL_DB_NULL: return 0;
	case AL_DB_INT: return strlen(p_column_text(s, i));
	default: return (size_t)al_pq.getlength(st->res, st->row, i);
	}
}

/* Idle connections, kept for the next open of the same URL, for any
 * tenant: a tenant is set for one transaction only (set_config(…, true),
 * as SET LOCAL) and a transaction's lock is the transaction's, so nothing
 * of one tenant's outlives its transaction on the connection; what it
 * keeps is the session (its encoding, its prepared statements, which hold
 * SQL text only).  But a session that once set the tenant reads it back
 * as '' (not NULL) after its transactions, which the policies would take
 * for a tenant named '': connections opened without a tenant (the owner's
 * functions) are pooled apart, and never get one that had a tenant.  A
 * connection is pooled only when closed outside a transaction and still
 * up.  Opening a connection is a server process fork: a run through the
 * daemon opened about three. */
#define POOL_MAX 16
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pg_db *pool[POOL_MAX];
static size_t npool;

static void pg_free(struct pg_db *db)
{
	al_pq.finish(db->c);
	for (size_t i = 0; i < db->nnamed; i++)
		free(db->named[i].sql);
	free(db->named);
	free(db->url);
	free(db);
}

static struct pg_db *pool_take(const char *url, bool tenanted)
{
	struct pg_db *db = NULL;
	pthread_mutex_lock(&pool_mu);
	for (size_t i = npool; i-- > 0;)
		if (!strcmp(pool[i]->url, url) && (pool[i]->tenant[0] != 0) == tenanted) {
			db = pool[i];
			pool[i] = pool[--npool];
			break;
		}
	pthread_mutex_unlock(&pool_mu);
	return db;
}

static void p_close(struct al_db *d)
{
	struct pg_db *db = DB(d);
	bool kept = false;
	if (al_pq.status(db->c) == CONNECTION_OK &&
	    al_pq.transaction_status(db->c) == PQTRANS_IDLE) {
		pthread_mutex_lock(&pool_mu);
		if ((kept = npool < POOL_MAX))
			pool[npool++] = db;
		pthread_mutex_unlock(&pool_mu);
	}
	if (!kept)
		pg_free(db);
}

static const struct al_db_ops pg_ops = {
	.close = p_close,
	.exec = p_exec,
	.begin = p_begin,
	.commit = p_commit,
	.rollback = p_rollback,
	.changes = p_changes,
	.prepare = p_prepare,
	.finalize = p_finalize,
	.bind = p_bind,
	.step = p_step,
	.reset = p_reset,
	.column_count = p_column_count,
	.column_type = p_column_type,
	.column_int64 = p_column_int64,
	.column_text = p_column_text,
	.column_blob = p_column_blob,
	.column_bytes = p_column_bytes,
};

static bool tenant_ok(const char *t)
{
	size_t n = strlen(t);
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = t[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '_' && c != '-')))
			return false;
	}
	return true;
}

int al_db_open_postgres(const char *url, const char *tenant, struct al_db **out,
			struct al_error *err)
{
	if (strncmp(url, "postgres://", 11) && strncmp(url, "postgresql://", 13))
		return al_fail(err, AL_EINVAL, 0,
			       "--metadata: expected postgres://USER@HOST/DB (libpq's URI)");
	if (tenant && !tenant_ok(tenant))
		return al_fail(err, AL_EINVAL, 0, "postgres: invalid tenant name");
	int r = al_pq__load(err);
	if (r < 0)
		return r;
	struct pg_db *db = pool_take(url, tenant != NULL);
	bool pooled = db != NULL;
	if (!pooled && (!(db = calloc(1, sizeof(*db))) || !(db->url = strdup(url)))) {
		free(db);
		return al_fail(err, AL_ENOMEM, 0, "database: out of memory");
	}
	db->base = (struct al_db){ .ops = &pg_ops, .engine = AL_DB_POSTGRES };
	db->changes = 0;
	snprintf(db->tenant, sizeof(db->tenant), "%s", tenant ? tenant : "");
	if (pooled) {
		*out = &db->base;
		return 0;
	}
	if (!(db->c = al_pq.connectdb(url))) {
		free(db->url);
		free(db);
		return al_fail(err, AL_ENOMEM, 0, "postgres: connect: out of memory");
	}
	al_pq.set_notice_processor(db->c, no_notices, NULL);
	if (al_pq.status(db->c) != CONNECTION_OK)
		r = pg_fail(db, NULL, err, "connect");
	else
		r = simple(db, "SET client_encoding = 'UTF8'", NULL, err, "connect");
	if (r < 0) {
		pg_free(db);
		return r;
	}
	*out = &db->base;
	return 0;
}
