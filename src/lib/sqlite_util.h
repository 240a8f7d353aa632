/* Private SQLite helpers shared by the modules that keep state in SQLite. */
#ifndef AL_SQLITE_UTIL_H
#define AL_SQLITE_UTIL_H

#include <sqlite3.h>

#include "airlock/error.h"
#include "db.h" /* enum al_sync, struct al_sqlite_schema */

/* Open path in WAL mode with a busy timeout and bring it to schema's version
 * (NULL: no schema).  A database of a newer version than schema knows is
 * refused ("upgrade airlock"), untouched. */
int al_sqlite_open(const char *path, const struct al_sqlite_schema *schema, sqlite3 **out,
		   struct al_error *err);
int al_sqlite_open_sync(const char *path, const struct al_sqlite_schema *schema, enum al_sync sync,
			sqlite3 **out, struct al_error *err);
int al_sqlite_exec(sqlite3 *db, const char *sql, struct al_error *err);
int al_sqlite_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **out, struct al_error *err);
int al_sqlite_fail(sqlite3 *db, struct al_error *err, const char *what);

static inline void al__sqlite_stmt_freep(sqlite3_stmt **st)
{
	sqlite3_finalize(*st);
}
#define _cleanup_sqlite_stmt_ __attribute__((cleanup(al__sqlite_stmt_freep)))

#endif
