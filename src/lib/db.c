/* db: the metadata seam's front (db.h): transactions, the statements of a
 * connection, bind failures kept for the next step; the drivers
 * (src/lib/backend/sqlite/db.c, src/lib/backend/postgres/db.c) do the rest. */
#include <stdlib.h>
#include <string.h>

#include "db_driver.h"
#include "util.h"

int al_db__placeholders(const char *sql, char *out, int *nparams, struct al_error *err)
{
	int max = 0;
	size_t len = strlen(sql);
	if (out)
		memcpy(out, sql, len + 1);
	for (size_t i = 0; i < len; i++) {
		char c = sql[i];
		if (c == '\'' || c == '"') {
			/* '' inside a literal reads as two literals back to back */
			const char *e = strchr(sql + i + 1, c);
			if (!e)
				return al_fail(err, AL_EUSAGE, 0,
					       "database: unterminated %c in SQL", c);
			i = (size_t)(e - sql);
		} else if (c == '-' && sql[i + 1] == '-') {
			i += strcspn(sql + i, "\n");
		} else if (c == '/' && sql[i + 1] == '*') {
			const char *e = strstr(sql + i + 2, "*/");
			if (!e)
				return al_fail(err, AL_EUSAGE, 0, "database: unterminated comment");
			i = (size_t)(e - sql) + 1;
		} else if (c == '?') {
			if (sql[i + 1] < '1' || sql[i + 1] > '9')
				return al_fail(err, AL_EUSAGE, 0,
					       "database: placeholders are numbered (?1, ?2, …)");
			char *end;
			long n = strtol(sql + i + 1, &end, 10);
			if (n > AL_DB_MAX_PARAMS)
				return al_fail(err, AL_EUSAGE, 0,
					       "database: more than %d placeholders",
					       AL_DB_MAX_PARAMS);
			if (out)
				out[i] = '$';
			if (n > max)
				max = (int)n;
			i = (size_t)(end - sql) - 1;
		}
	}
	*nparams = max;
	return 0;
}

void al_db_close(struct al_db *db)
{
	if (!db)
		return;
	if (db->in_txn)
		db->ops->rollback(db);
	db->in_txn = false;
	db->closing = true;
	if (db->ops->drop_cache)
		db->ops->drop_cache(db);
	if (!db->stmts)
		db->ops->close(db);
}

enum al_db_engine al_db_engine(const struct al_db *db)
{
	return db->engine;
}

bool al_db_in_txn(const struct al_db *db)
{
	return db->in_txn;
}

int al_db_exec(struct al_db *db, const char *sql, struct al_error *err)
{
	return db->ops->exec(db, sql, err);
}

int64_t al_db_changes(const struct al_db *db)
{
	return db->ops->changes(db);
}

int al_db_begin(struct al_db *db, enum al_db_mode mode, struct al_db_txn *txn, struct al_error *err)
{
	txn->db = db;
	txn->open = false;
	if (db->in_txn)
		return al_fail(err, AL_EUSAGE, 0, "database: a transaction is already open");
	int r = db->ops->begin(db, mode, err);
	if (r < 0)
		return r;
	db->in_txn = txn->open = true;
	if (mode == AL_DB_WRITE && db->on_write &&
	    (r = db->on_write(db->on_write_ctx, db, err)) < 0)
		al_db_rollback(txn);
	return r;
}

void al_db__on_write(struct al_db *db, int (*fn)(void *ctx, struct al_db *db, struct al_error *err),
		     void *ctx)
{
	db->on_write = fn;
	db->on_write_ctx = ctx;
}

int al_db_commit(struct al_db_txn *txn, struct al_error *err)
{
	if (!txn->open)
		return al_fail(err, AL_EUSAGE, 0, "database: no transaction to commit");
	struct al_db *db = txn->db;
	txn->open = db->in_txn = false;
	int r = db->ops->commit(db, err);
	if (r < 0)
		db->ops->rollback(db);
	return r;
}

void al_db_rollback(struct al_db_txn *txn)
{
	if (!txn->open)
		return;
	txn->open = txn->db->in_txn = false;
	txn->db->ops->rollback(txn->db);
}

int al_db_prepare(struct al_db *db, const char *sql, struct al_db_stmt **out, struct al_error *err)
{
	struct al_db_stmt *st = NULL;
	int n, r = al_db__placeholders(sql, NULL, &n, err);
	if (r < 0)
		return r;
	r = db->ops->prepare(db, sql, &st, err);
	if (r < 0)
		return r;
	st->db = db;
	st->bind_rc = 0;
	st->prev = NULL;
	st->next = db->stmts;
	if (db->stmts)
		db->stmts->prev = st;
	db->stmts = st;
	*out = st;
	return 0;
}

void al_db_finalize(struct al_db_stmt *st)
{
	if (!st)
		return;
	struct al_db *db = st->db;
	if (st->prev)
		st->prev->next = st->next;
	else
		db->stmts = st->next;
	if (st->next)
		st->next->prev = st->prev;
	db->ops->finalize(st);
	if (db->closing && !db->stmts)
		db->ops->close(db);
}

static void bind(struct al_db_stmt *st, int i, enum al_db_type type, int64_t v, const void *p,
		 size_t n)
{
	int r = st->db->ops->bind(st, i, type, v, p, n);
	if (r < 0 && st->bind_rc == 0) {
		st->bind_rc = r;
		st->bind_index = i;
	}
}

void al_db_bind_int64(struct al_db_stmt *st, int i, int64_t v)
{
	bind(st, i, AL_DB_INT, v, NULL, 0);
}

void al_db_bind_text(struct al_db_stmt *st, int i, const char *s, ptrdiff_t len)
{
	if (!s) {
		bind(st, i, AL_DB_NULL, 0, NULL, 0);
		return;
	}
	size_t n = len < 0 ? strlen(s) : (size_t)len;
	/* the same text on every engine: PostgreSQL's holds no NUL and only UTF-8 */
	if (memchr(s, 0, n) || !al_utf8_valid((const uint8_t *)s, n)) {
		if (st->bind_rc == 0) {
			st->bind_rc = AL_EINVAL;
			st->bind_index = i;
		}
		return;
	}
	bind(st, i, AL_DB_TEXT, 0, s, n);
}

void al_db_bind_blob(struct al_db_stmt *st, int i, const void *p, size_t n)
{
	bind(st, i, AL_DB_BLOB, 0, p ? p : "", n);
}

void al_db_bind_null(struct al_db_stmt *st, int i)
{
	bind(st, i, AL_DB_NULL, 0, NULL, 0);
}

int al_db_step(struct al_db_stmt *st, struct al_error *err)
{
	if (st->bind_rc < 0) {
		int r = st->bind_rc;
		st->bind_rc = 0;
		return al_fail(err, r, 0, "database: parameter %d: %s", st->bind_index,
			       r == AL_ENOMEM   ? "out of memory"
			       : r == AL_EUSAGE ? "no such parameter"
			       : r == AL_EINVAL ? "text that is not UTF-8 or holds a NUL"
						: "too large");
	}
	return st->db->ops->step(st, err);
}

void al_db_reset(struct al_db_stmt *st)
{
	st->db->ops->reset(st);
}

int al_db_column_count(struct al_db_stmt *st)
{
	return st->db->ops->column_count(st);
}

enum al_db_type al_db_column_type(struct al_db_stmt *st, int i)
{
	return st->db->ops->column_type(st, i);
}

int64_t al_db_column_int64(struct al_db_stmt *st, int i)
{
	return st->db->ops->column_int64(st, i);
}

const char *al_db_column_text(struct al_db_stmt *st, int i)
{
	return st->db->ops->column_text(st, i);
}

const void *al_db_column_blob(struct al_db_stmt *st, int i)
{
	return st->db->ops->column_blob(st, i);
}

size_t al_db_column_bytes(struct al_db_stmt *st, int i)
{
	return st->db->ops->column_bytes(st, i);
}
