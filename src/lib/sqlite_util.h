/* Private SQLite helpers shared by the modules that keep state in SQLite. */
#ifndef AL_SQLITE_UTIL_H
#define AL_SQLITE_UTIL_H

#include <stdbool.h>

#include <sqlite3.h>

#include "airlock/error.h"
#include "db.h" /* enum al_sync, struct al_sqlite_schema */

/* A new database's page size, unless its schema says otherwise: a commit
 * writes each page it changes whole into the WAL, so small pages keep a
 * commit's WAL bytes (and what the next open reads back) small. */
#define AL_SQLITE_PAGE 4096
/* The WAL's bound in bytes: SQLite checkpoints it into the database once it
 * holds this much.  The first connection of a process reads the WAL's live
 * frames back (recovery, as after a crash, since the last close keeps it:
 * see al_sqlite_open), so this and a commit, at most AL_SQLITE_WAL_KEEP,
 * bound what every command reads at start. */
#define AL_SQLITE_WAL_BOUND (1u << 20)
/* What a WAL file keeps between checkpoints (journal_size_limit): a WAL
 * restarted at the bound is written over in place, its blocks kept. */
#define AL_SQLITE_WAL_KEEP (2 * AL_SQLITE_WAL_BOUND)

/* Open path in WAL mode with a busy timeout and bring it to schema's version
 * (NULL: no schema).  A database of a newer version than schema knows is
 * refused ("upgrade airlock"), untouched. */
int al_sqlite_open(const char *path, const struct al_sqlite_schema *schema, sqlite3 **out,
		   struct al_error *err);
/* AL_SYNC_NORMAL: commits do not sync, and the caller syncs after each
 * (al_sqlite_sync_wal); migrations and a database SQLite cannot keep in a
 * WAL still commit synced (FULL). */
int al_sqlite_open_sync(const char *path, const struct al_sqlite_schema *schema, enum al_sync sync,
			sqlite3 **out, struct al_error *err);
/* Hold db's checkpoints (the WAL bound's, after a commit) until released;
 * the release runs one that came due meanwhile.  For a commit made while
 * another database's write lock is held (a rebase's nodes in objects.db
 * inside meta.db's transaction), so that lock is not held through the
 * copy and its syncs.  A checkpoint makes nothing durable (a commit syncs
 * the WAL itself, or al_sqlite_sync_wal just after). */
void al_sqlite_hold_checkpoints(sqlite3 *db, bool hold);
/* Make db's write-ahead log durable as it stands: every commit written to
 * it so far, by any connection.  For a database opened AL_SYNC_NORMAL,
 * whose commits do not sync: the commit releases the write lock, and the
 * sync after it is outside, so other writers' commits proceed meanwhile.
 * A commit shown before its sync is what a failed sync cannot take back:
 * then the WAL is copied into the database and synced there, and until
 * that has been done (by this call in any process: the failure is marked
 * in the database's wake page) every call fails, its own sync or not.
 * 0 at once where commits sync themselves (AL_SYNC_FULL, or no WAL);
 * AL_EIO when the WAL cannot be reached, or on such a failure. */
int al_sqlite_sync_wal(sqlite3 *db, struct al_error *err);
/* Whether every commit db can see is durable already, by any connection's
 * sync (counters in the database's wake page): a connection that found
 * rows another wrote, and will name them elsewhere, need not sync the WAL
 * for them.  True where commits sync themselves; false while a failed
 * sync is unmended, or without the wake page. */
bool al_sqlite_wal_synced(sqlite3 *db);
/* No statement of db's is stepping (one left mid-step holds a read
 * snapshot, which a handle kept for reuse would pass on). */
bool al_sqlite_quiet(sqlite3 *db);
int al_sqlite_exec(sqlite3 *db, const char *sql, struct al_error *err);
int al_sqlite_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **out, struct al_error *err);
int al_sqlite_fail(sqlite3 *db, struct al_error *err, const char *what);

static inline void al__sqlite_stmt_freep(sqlite3_stmt **st)
{
	sqlite3_finalize(*st);
}
#define _cleanup_sqlite_stmt_ __attribute__((cleanup(al__sqlite_stmt_freep)))

#endif
