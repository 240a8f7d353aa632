/* Private SQLite helpers shared by the modules that keep state in SQLite. */
#ifndef AL_SQLITE_UTIL_H
#define AL_SQLITE_UTIL_H

#include <sqlite3.h>

#include "airlock/error.h"

enum al_sync { AL_SYNC_FULL, AL_SYNC_NORMAL };

/* A database's schema as ordered migrations: migrations[i] takes it from
 * PRAGMA user_version i to i + 1, in one transaction with the version's
 * update.  Version 0 is a new database, or one made before versions
 * existed: migration 1 is CREATE ... IF NOT EXISTS, which completes both.
 * A migration is never edited once released; a change is a new one. */
struct al_sqlite_schema {
	const char *const *migrations;
	unsigned count;     /* the version this airlock knows */
	unsigned page_size; /* for a new database; 0: AL_SQLITE_PAGE */
};
#define AL_SQLITE_SCHEMA(m)                        \
	{                                          \
		(m), sizeof(m) / sizeof((m)[0]), 0 \
	}
#define AL_SQLITE_SCHEMA_PAGES(m, page)                 \
	{                                               \
		(m), sizeof(m) / sizeof((m)[0]), (page) \
	}

/* A new database's page size, unless its schema says otherwise: a commit
 * writes each page it changes whole into the WAL, so small pages keep a
 * commit's WAL bytes (and what the next open reads back) small. */
#define AL_SQLITE_PAGE 4096
/* The WAL's bound in bytes: SQLite checkpoints it into the database once it
 * holds this much.  The first connection of a process reads the whole WAL
 * back (recovery, as after a crash, since the last close keeps it: see
 * al_sqlite_open), so this bounds what every command reads at start. */
#define AL_SQLITE_WAL_BOUND (1u << 20)

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
