/* The metadata seam's SQLite driver (src/lib/db.h): a thin layer over the
 * sqlite3 API, with the embedded home's connection set-up unchanged
 * (sqlite_util.c: WAL, pragmas, busy handler, user_version migrations).
 * SQLite runs the seam's SQL as written (?NNN placeholders are its own).
 *
 * Statement cache: a finalized statement is reset, its bindings cleared,
 * and kept on its connection's idle list (most recently returned first, at
 * most AL_DB_SQLITE_CACHE, the oldest finalized beyond that); a prepare of
 * the same SQL text takes it back instead of compiling again.  Only idle
 * statements are on the list, so a statement in use is never handed out a
 * second time: the same text prepared while it is live compiles another.
 * A reset statement holds no lock and no read snapshot.  Closing the
 * connection finalizes the list (before a borrowed sqlite3 is closed by its
 * owner). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db_driver.h"
#include "sqlite_util.h"
#include "db_sqlite.h"

struct sqlite_stmt {
	struct al_db_stmt base;
	sqlite3_stmt *s;
	struct sqlite_stmt *inext, *iprev; /* on the idle list */
	uint64_t hash;                     /* of sql */
	char sql[];
};

struct sqlite_db {
	struct al_db base;
	sqlite3 *c;
	bool owned;
	struct sqlite_stmt *idle, *idle_last; /* most recently returned first */
	unsigned nidle;
};

#define DB(d) ((struct sqlite_db *)(d))
#define ST(st) (((struct sqlite_stmt *)(st))->s)

int al_db__sqlite_fail(sqlite3 *c, struct al_error *err, const char *what)
{
	int rc = sqlite3_extended_errcode(c);
	int code = AL_EIO;
	switch (rc & 0xff) {
	case SQLITE_CONSTRAINT:
		code = rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY ||
				       rc == SQLITE_CONSTRAINT_ROWID
			       ? AL_EEXIST
			       : AL_EIO; /* as before the seam: a CHECK, NOT NULL, a trigger */
		break;
	case SQLITE_FULL: code = AL_ELIMIT; break;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB: code = AL_ECORRUPT; break;
	case SQLITE_NOMEM: code = AL_ENOMEM; break;
	case SQLITE_BUSY:
	case SQLITE_LOCKED: code = AL_EUNAVAIL; break;
	case SQLITE_RANGE:
	case SQLITE_MISUSE: code = AL_EUSAGE; break;
	}
	return al_fail(err, code, 0, "%s: %s", what, sqlite3_errmsg(c));
}

static void idle_unlink(struct sqlite_db *d, struct sqlite_stmt *e)
{
	if (e->iprev)
		e->iprev->inext = e->inext;
	else
		d->idle = e->inext;
	if (e->inext)
		e->inext->iprev = e->iprev;
	else
		d->idle_last = e->iprev;
	e->inext = e->iprev = NULL;
	d->nidle--;
}

static void stmt_free(struct sqlite_stmt *e)
{
	sqlite3_finalize(e->s);
	free(e);
}

static void s_drop_cache(struct al_db *db)
{
	struct sqlite_db *d = DB(db);
	while (d->idle) {
		struct sqlite_stmt *e = d->idle;
		idle_unlink(d, e);
		stmt_free(e);
	}
}

unsigned al_db__sqlite_cached(struct al_db *db)
{
	return db->engine == AL_DB_SQLITE ? DB(db)->nidle : 0;
}

static void s_close(struct al_db *db)
{
	s_drop_cache(db);
	if (DB(db)->owned)
		sqlite3_close_v2(DB(db)->c);
	free(db);
}

static int s_exec(struct al_db *db, const char *sql, struct al_error *err)
{
	if (sqlite3_exec(DB(db)->c, sql, NULL, NULL, NULL) != SQLITE_OK)
		return al_db__sqlite_fail(DB(db)->c, err, "database");
	return 0;
}

static int s_begin(struct al_db *db, enum al_db_mode mode, struct al_error *err)
{
	return s_exec(db, mode == AL_DB_WRITE ? "BEGIN IMMEDIATE" : "BEGIN", err);
}

static int s_commit(struct al_db *db, struct al_error *err)
{
	/* SQLite refuses to commit while a writing statement is in progress
	 * (an INSERT … RETURNING read once); a reading one may stay (an outer
	 * loop over rows whose body commits) */
	for (struct al_db_stmt *st = db->stmts; st; st = st->next)
		if (sqlite3_stmt_busy(ST(st)) && !sqlite3_stmt_readonly(ST(st)))
			sqlite3_reset(ST(st));
	return s_exec(db, "COMMIT", err);
}

static void s_rollback(struct al_db *db)
{
	if (!sqlite3_get_autocommit(DB(db)->c))
		sqlite3_exec(DB(db)->c, "ROLLBACK", NULL, NULL, NULL);
}

static int64_t s_changes(const struct al_db *db)
{
	return sqlite3_changes64(DB(db)->c);
}

static uint64_t sql_hash(const char *sql, size_t *len)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	const char *p = sql;
	for (; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ULL;
	*len = (size_t)(p - sql);
	return h;
}

static int s_prepare(struct al_db *db, const char *sql, struct al_db_stmt **out,
		     struct al_error *err)
{
	struct sqlite_db *d = DB(db);
	size_t len;
	uint64_t h = sql_hash(sql, &len);
	for (struct sqlite_stmt *e = d->idle; e; e = e->inext)
		if (e->hash == h && strcmp(e->sql, sql) == 0) {
			idle_unlink(d, e);
			*out = &e->base;
			return 0;
		}
	struct sqlite_stmt *st = calloc(1, sizeof(*st) + len + 1);
	if (!st)
		return al_fail(err, AL_ENOMEM, 0, "database: out of memory");
	if (sqlite3_prepare_v2(d->c, sql, -1, &st->s, NULL) != SQLITE_OK) {
		free(st);
		return al_db__sqlite_fail(d->c, err, "database");
	}
	st->hash = h;
	memcpy(st->sql, sql, len + 1);
	*out = &st->base;
	return 0;
}

static void s_finalize(struct al_db_stmt *st)
{
	struct sqlite_db *d = DB(st->db);
	struct sqlite_stmt *e = (struct sqlite_stmt *)st;
	if (d->base.closing) {
		stmt_free(e);
		return;
	}
	/* back to the start, no row, no value left from its last user */
	sqlite3_reset(e->s);
	sqlite3_clear_bindings(e->s);
	e->iprev = NULL;
	e->inext = d->idle;
	if (d->idle)
		d->idle->iprev = e;
	else
		d->idle_last = e;
	d->idle = e;
	if (++d->nidle > AL_DB_SQLITE_CACHE) {
		struct sqlite_stmt *old = d->idle_last;
		idle_unlink(d, old);
		stmt_free(old);
	}
}

static int s_bind(struct al_db_stmt *st, int i, enum al_db_type type, int64_t v, const void *p,
		  size_t n)
{
	int rc;
	if (n > INT32_MAX)
		return AL_ELIMIT;
	switch (type) {
	case AL_DB_INT: rc = sqlite3_bind_int64(ST(st), i, v); break;
	case AL_DB_TEXT: rc = sqlite3_bind_text(ST(st), i, p, (int)n, SQLITE_TRANSIENT); break;
	case AL_DB_BLOB: /* a NULL pointer would bind NULL: an empty blob is a zeroblob */
		rc = n ? sqlite3_bind_blob(ST(st), i, p, (int)n, SQLITE_TRANSIENT)
		       : sqlite3_bind_zeroblob(ST(st), i, 0);
		break;
	default: rc = sqlite3_bind_null(ST(st), i);
	}
	return rc == SQLITE_OK ? 0 : rc == SQLITE_NOMEM ? AL_ENOMEM : AL_EUSAGE;
}

static int s_step(struct al_db_stmt *st, struct al_error *err)
{
	int rc = sqlite3_step(ST(st));
	if (rc == SQLITE_ROW)
		return AL_DB_ROW;
	if (rc == SQLITE_DONE)
		return AL_DB_DONE;
	/* sqlite3_step's own code: the connection's may be a later call's */
	int r = al_db__sqlite_fail(DB(st->db)->c, err, "database");
	sqlite3_reset(ST(st));
	return r;
}

static void s_reset(struct al_db_stmt *st)
{
	sqlite3_reset(ST(st));
}

static int s_column_count(struct al_db_stmt *st)
{
	return sqlite3_column_count(ST(st));
}

static enum al_db_type s_column_type(struct al_db_stmt *st, int i)
{
	switch (sqlite3_column_type(ST(st), i)) {
	case SQLITE_INTEGER:
	case SQLITE_FLOAT: return AL_DB_INT;
	case SQLITE_TEXT: return AL_DB_TEXT;
	case SQLITE_BLOB: return AL_DB_BLOB;
	default: return AL_DB_NULL;
	}
}

static int64_t s_column_int64(struct al_db_stmt *st, int i)
{
	return sqlite3_column_int64(ST(st), i);
}

static const char *s_column_text(struct al_db_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(ST(st), i);
}

static const void *s_column_blob(struct al_db_stmt *st, int i)
{
	const void *p = sqlite3_column_blob(ST(st), i);
	return p ? p : "";
}

static size_t s_column_bytes(struct al_db_stmt *st, int i)
{
	return (size_t)sqlite3_column_bytes(ST(st), i);
}

static const struct al_db_ops sqlite_ops = {
	.close = s_close,
	.drop_cache = s_drop_cache,
	.exec = s_exec,
	.begin = s_begin,
	.commit = s_commit,
	.rollback = s_rollback,
	.changes = s_changes,
	.prepare = s_prepare,
	.finalize = s_finalize,
	.bind = s_bind,
	.step = s_step,
	.reset = s_reset,
	.column_count = s_column_count,
	.column_type = s_column_type,
	.column_int64 = s_column_int64,
	.column_text = s_column_text,
	.column_blob = s_column_blob,
	.column_bytes = s_column_bytes,
};

static int wrap(sqlite3 *c, bool owned, struct al_db **out, struct al_error *err)
{
	struct sqlite_db *db = calloc(1, sizeof(*db));
	if (!db)
		return al_fail(err, AL_ENOMEM, 0, "database: out of memory");
	db->base.ops = &sqlite_ops;
	db->base.engine = AL_DB_SQLITE;
	db->c = c;
	db->owned = owned;
	*out = &db->base;
	return 0;
}

int al_db__sqlite_wrap(sqlite3 *c, struct al_db **out, struct al_error *err)
{
	return wrap(c, false, out, err);
}

sqlite3 *al_db__sqlite(struct al_db *db)
{
	return db->engine == AL_DB_SQLITE ? DB(db)->c : NULL;
}

int al_db_open_sqlite(const char *path, const struct al_sqlite_schema *schema, enum al_sync sync,
		      struct al_db **out, struct al_error *err)
{
	sqlite3 *c = NULL;
	int r = al_sqlite_open_sync(path, schema, sync, &c, err);
	if (r < 0)
		return r;
	if ((r = wrap(c, true, out, err)) < 0)
		sqlite3_close_v2(c);
	return r;
}
