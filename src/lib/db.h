/* Private to libairlock: the metadata seam.  Modules reach their database
 * through statements and transactions of this interface, never through a
 * driver's own handle, so the same module code runs on the embedded SQLite
 * home (src/lib/backend/sqlite/db.c) and on PostgreSQL with row-level
 * security (src/lib/backend/postgres/db.c).
 *
 * A domain-level interface (one function per query: hundreds of them) would
 * repeat every module's logic once per engine; this one is statement-level,
 * with the SQL written once in the subset both engines run:
 *
 *   - placeholders are numbered, ?1 ?2 … (PostgreSQL gets $1 $2 …; a ? in a
 *     string literal, a quoted identifier or a comment is left alone);
 *   - no engine-only syntax: INSERT … ON CONFLICT DO NOTHING rather than
 *     INSERT OR IGNORE; a row replaced by DELETE + INSERT (or an UPDATE,
 *     then an INSERT when it changed nothing) in one write transaction
 *     rather than INSERT OR REPLACE or an upsert, whose conflict target
 *     would differ once PostgreSQL's keys begin with the tenant;
 *     … RETURNING id rather than
 *     last_insert_rowid(), CAST(… AS BIGINT) on aggregates that PostgreSQL
 *     widens to numeric (sum), no PRAGMA in module SQL;
 *   - a column is read as the type it has (an integer as int64, text as
 *     text, a blob as blob); NULL reads as 0, NULL or an empty blob, and
 *     al_db_column_type tells it apart.
 *
 * Transactions: a write transaction is exclusive per database (per tenant):
 * BEGIN IMMEDIATE on SQLite, whose meta.db is the tenant's; on PostgreSQL
 * BEGIN, SET LOCAL airlock.tenant (set_config(…, true)) and a transaction-
 * scoped advisory lock on the tenant, so the ledger's appends and a
 * volume's head move serialise exactly as they do on SQLite.  A read
 * transaction is one snapshot (SQLite's deferred BEGIN in WAL; PostgreSQL's
 * REPEATABLE READ READ ONLY).  A statement outside a transaction runs in a
 * transaction of its own (SQLite's autocommit; on PostgreSQL the driver
 * wraps it, tenant set), so no statement ever runs without the tenant.
 * A ledger entry is written in the transaction of its effect, as before.
 *
 * Errors map to struct al_error as the modules' codes were before the seam:
 * a unique or primary-key violation is AL_EEXIST; another constraint
 * (CHECK, NOT NULL, a trigger's abort) AL_EIO, like any failure of the
 * database; a full disk AL_ELIMIT; a corrupt file AL_ECORRUPT; out of
 * memory AL_ENOMEM; a lock not had in time or an unreachable server
 * AL_EUNAVAIL; a row another tenant's (row-level security) AL_EDENIED; a
 * value PostgreSQL's type refuses AL_EINVAL.  The message names the
 * engine's own words. */
#ifndef AL_DB_H
#define AL_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/error.h"

struct al_db;      /* a connection: one SQLite file, or PostgreSQL for one tenant */
struct al_db_stmt; /* a prepared statement of one connection */

enum al_db_engine { AL_DB_SQLITE, AL_DB_POSTGRES };
enum al_db_type { AL_DB_NULL, AL_DB_INT, AL_DB_TEXT, AL_DB_BLOB };
enum al_db_mode { AL_DB_READ, AL_DB_WRITE };

/* al_db_step's answers besides an error */
#define AL_DB_DONE 0
#define AL_DB_ROW 1

/* The most placeholders a statement may have (?1 … ?AL_DB_MAX_PARAMS). */
#define AL_DB_MAX_PARAMS 32

enum al_sync { AL_SYNC_FULL, AL_SYNC_NORMAL };

/* A database's schema as ordered migrations: migrations[i] takes it from
 * PRAGMA user_version i to i + 1, in one transaction with the version's
 * update.  Version 0 is a new database, or one made before versions
 * existed: migration 1 is CREATE ... IF NOT EXISTS, which completes both.
 * A migration is never edited once released; a change is a new one.
 * (The SQLite driver's; the PostgreSQL schema is pg.c's.) */
struct al_sqlite_schema {
	const char *const *migrations;
	unsigned count;     /* the version this airlock knows */
	unsigned page_size; /* for a new database; 0: AL_SQLITE_PAGE (sqlite_util.h) */
};
#define AL_SQLITE_SCHEMA(m)                        \
	{                                          \
		(m), sizeof(m) / sizeof((m)[0]), 0 \
	}
#define AL_SQLITE_SCHEMA_PAGES(m, page)                 \
	{                                               \
		(m), sizeof(m) / sizeof((m)[0]), (page) \
	}

/* Open (creating) the SQLite file at path exactly as al_sqlite_open_sync
 * does: WAL, the pragmas, the busy handler, schema's migrations. */
int al_db_open_sqlite(const char *path, const struct al_sqlite_schema *schema, enum al_sync sync,
		      struct al_db **out, struct al_error *err);

/* Connect to PostgreSQL at url (postgres:// or postgresql://, libpq's URI)
 * for tenant (a tenant name, [a-z0-9][a-z0-9_-]{0,62}; NULL: no tenant,
 * which row-level security lets see no tenant's row).  libpq is loaded on
 * first use.  AL_EUNAVAIL when the server cannot be reached. */
int al_db_open_postgres(const char *url, const char *tenant, struct al_db **out,
			struct al_error *err);

/* Close db (accepts NULL); a transaction still open is rolled back.  As
 * sqlite3_close_v2: statements still prepared on it stay valid to
 * finalize (a _cleanup_db_stmt_ one), and the connection goes with the
 * last of them. */
void al_db_close(struct al_db *db);

enum al_db_engine al_db_engine(const struct al_db *db);

/* Whether a transaction (al_db_begin) is open on db. */
bool al_db_in_txn(const struct al_db *db);

/* Run sql (one or more statements, no placeholders, no rows wanted). */
int al_db_exec(struct al_db *db, const char *sql, struct al_error *err);

/* Rows changed by the last INSERT, UPDATE or DELETE stepped on db. */
int64_t al_db_changes(const struct al_db *db);

/* ---- transactions
 *
 * A transaction lives on the caller's stack; it ends with al_db_commit or
 * al_db_rollback, and _cleanup_db_txn_ rolls back one still open, so an
 * early return never leaves it open.  One at a time per connection. */
struct al_db_txn {
	struct al_db *db;
	bool open;
};
int al_db_begin(struct al_db *db, enum al_db_mode mode, struct al_db_txn *txn,
		struct al_error *err);
/* fn runs at the start of every write transaction on db, once it holds
 * the write lock and before the caller's first statement (a failure rolls
 * the transaction back and is al_db_begin's); NULL removes it.  The
 * store's catch-up with the bucket's sweeps (gc.c). */
void al_db__on_write(struct al_db *db, int (*fn)(void *ctx, struct al_db *db, struct al_error *err),
		     void *ctx);
/* Commit; on failure the transaction is rolled back (nothing of it stays).
 * A writing statement with rows left (an INSERT … RETURNING read once) is
 * reset first, which SQLite's commit needs; a reading one goes on. */
int al_db_commit(struct al_db_txn *txn, struct al_error *err);
/* Roll back (no-op for one already ended). */
void al_db_rollback(struct al_db_txn *txn);
static inline void al__db_txn_end(struct al_db_txn *t)
{
	al_db_rollback(t);
}
#define _cleanup_db_txn_ __attribute__((cleanup(al__db_txn_end)))

/* ---- statements
 *
 * Prepared once, stepped, reset and stepped again with new values (the
 * PostgreSQL driver prepares it on the server at its first step).  Values
 * are bound by 1-based index and copied (the caller's buffer may go at
 * once); a binding stays until rebound.  A bind that fails (index out of
 * range, out of memory) is reported by the next al_db_step. */
int al_db_prepare(struct al_db *db, const char *sql, struct al_db_stmt **out, struct al_error *err);
void al_db_bind_int64(struct al_db_stmt *st, int i, int64_t v);
/* len < 0: up to the NUL.  Text must be UTF-8 without NUL. */
void al_db_bind_text(struct al_db_stmt *st, int i, const char *s, ptrdiff_t len);
/* p may be NULL when n is 0 (an empty blob, not NULL). */
void al_db_bind_blob(struct al_db_stmt *st, int i, const void *p, size_t n);
void al_db_bind_null(struct al_db_stmt *st, int i);
/* AL_DB_ROW (a row to read), AL_DB_DONE, or an error. */
int al_db_step(struct al_db_stmt *st, struct al_error *err);
/* The current row's column i (0-based); valid until the next step, reset
 * or finalize. */
enum al_db_type al_db_column_type(struct al_db_stmt *st, int i);
int64_t al_db_column_int64(struct al_db_stmt *st, int i);
const char *al_db_column_text(struct al_db_stmt *st, int i); /* NULL for NULL */
const void *al_db_column_blob(struct al_db_stmt *st, int i);
size_t al_db_column_bytes(struct al_db_stmt *st, int i);
int al_db_column_count(struct al_db_stmt *st);
/* Ready to step again from the start; bindings stay. */
void al_db_reset(struct al_db_stmt *st);
/* Done with st (accepts NULL).  A driver may keep it to hand back to a
 * later al_db_prepare of the same SQL text (SQLite's statement cache),
 * reset and with no value bound; never while it is still in use. */
void al_db_finalize(struct al_db_stmt *st);
static inline void al__db_stmt_freep(struct al_db_stmt **st)
{
	al_db_finalize(*st);
}
#define _cleanup_db_stmt_ __attribute__((cleanup(al__db_stmt_freep)))

#endif
