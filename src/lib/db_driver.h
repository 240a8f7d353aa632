/* Private to the metadata seam (db.h): what a driver implements.  A
 * driver's connection and statement structs begin with struct al_db and
 * struct al_db_stmt; db.c keeps the statements' list, the transaction
 * state and the first failed bind, and calls the driver for the rest. */
#ifndef AL_DB_DRIVER_H
#define AL_DB_DRIVER_H

#include "db.h"

struct al_db_ops {
	void (*close)(struct al_db *db);
	/* optional: let go of what the connection keeps for reuse (closing) */
	void (*drop_cache)(struct al_db *db);
	int (*exec)(struct al_db *db, const char *sql, struct al_error *err);
	int (*begin)(struct al_db *db, enum al_db_mode mode, struct al_error *err);
	int (*commit)(struct al_db *db, struct al_error *err);
	void (*rollback)(struct al_db *db);
	int64_t (*changes)(const struct al_db *db);
	int (*prepare)(struct al_db *db, const char *sql, struct al_db_stmt **out,
		       struct al_error *err);
	void (*finalize)(struct al_db_stmt *st);
	/* type AL_DB_INT: v; AL_DB_TEXT and AL_DB_BLOB: p, n (copied) */
	int (*bind)(struct al_db_stmt *st, int i, enum al_db_type type, int64_t v, const void *p,
		    size_t n);
	int (*step)(struct al_db_stmt *st, struct al_error *err);
	void (*reset)(struct al_db_stmt *st);
	int (*column_count)(struct al_db_stmt *st);
	enum al_db_type (*column_type)(struct al_db_stmt *st, int i);
	int64_t (*column_int64)(struct al_db_stmt *st, int i);
	const char *(*column_text)(struct al_db_stmt *st, int i);
	const void *(*column_blob)(struct al_db_stmt *st, int i);
	size_t (*column_bytes)(struct al_db_stmt *st, int i);
};

struct al_db {
	const struct al_db_ops *ops;
	enum al_db_engine engine;
	bool in_txn;
	bool closing;             /* closed, with statements still to finalize */
	struct al_db_stmt *stmts; /* prepared on this connection */
	int (*on_write)(void *ctx, struct al_db *db, struct al_error *err);
	void *on_write_ctx;
};

struct al_db_stmt {
	struct al_db *db;
	struct al_db_stmt *prev, *next;
	int bind_rc; /* the first failed bind since the last step */
	int bind_index;
};

/* Check sql's placeholders: numbered (?1 … ?AL_DB_MAX_PARAMS), counted
 * outside '…' literals, "…" identifiers and comments; the highest in
 * *nparams.  out (strlen(sql) + 1 bytes, or NULL) gets sql with each as
 * $N, PostgreSQL's spelling.  AL_EUSAGE for an unnumbered ?, which SQLite
 * would number by position and PostgreSQL refuse. */
int al_db__placeholders(const char *sql, char *out, int *nparams, struct al_error *err);

#endif
