/* Private SQLite helpers shared by the modules that keep state in SQLite. */
#ifndef AL_SQLITE_UTIL_H
#define AL_SQLITE_UTIL_H

#include <sqlite3.h>

#include "airlock/error.h"

enum al_sync { AL_SYNC_FULL, AL_SYNC_NORMAL };

/* Open path in WAL mode with a busy timeout and run schema (idempotent). */
int al_sqlite_open(const char *path, const char *schema, sqlite3 **out, struct al_error *err);
int al_sqlite_open_sync(const char *path, const char *schema, enum al_sync sync, sqlite3 **out,
			struct al_error *err);
int al_sqlite_exec(sqlite3 *db, const char *sql, struct al_error *err);
int al_sqlite_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **out, struct al_error *err);
int al_sqlite_fail(sqlite3 *db, struct al_error *err, const char *what);

static inline void al__sqlite_stmt_freep(sqlite3_stmt **st) { sqlite3_finalize(*st); }
#define _cleanup_sqlite_stmt_ __attribute__((cleanup(al__sqlite_stmt_freep)))

#endif
