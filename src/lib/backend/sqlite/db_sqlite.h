/* Private: the SQLite driver of the metadata seam (src/lib/db.h), for the
 * code that opens the embedded home's databases (store.c) and, until every
 * module is on the seam, for the modules not yet converted to reach the
 * same connection (docs/architecture.md, "The metadata seam"). */
#ifndef AL_DB_SQLITE_H
#define AL_DB_SQLITE_H

#include <sqlite3.h>

#include "db.h"

/* A connection of the seam over c, which stays the caller's (closing the
 * al_db finalizes its statements and leaves c open). */
int al_db__sqlite_wrap(sqlite3 *c, struct al_db **out, struct al_error *err);

/* The SQLite handle under db (an AL_DB_SQLITE connection), borrowed. */
sqlite3 *al_db__sqlite(struct al_db *db);

/* The seam's error for c's last failure (db.h: the mapping). */
int al_db__sqlite_fail(sqlite3 *c, struct al_error *err, const char *what);

/* The most finalized statements a connection keeps for reuse (the driver.s
 * statement cache), and how many db keeps now (0 for another engine). */
#define AL_DB_SQLITE_CACHE 64
unsigned al_db__sqlite_cached(struct al_db *db);

#endif
