/* Private to libairlock: what manifest needs of the store. */
#ifndef AL_STORE_PRIVATE_H
#define AL_STORE_PRIVATE_H

#include <openssl/evp.h>

#include "airlock/store.h"

struct al_db;

/* The stat cache database of the tenant through the seam (db.h),
 * borrowed, opened on first use: node-local by design (a cache of this
 * machine's files' stat data, never shared), SQLite on every deployment,
 * import.c's alone. */
int al_store__statcache(struct al_store *s, struct al_db **out, struct al_error *err);
/* The tenant's metadata (snapshots, projects, volumes, commits, runs, the
 * ledger, …) through the metadata seam (db.h), borrowed: meta.db, or the
 * connection given by al_store__use_meta_db. */
int al_store__meta_db(struct al_store *s, struct al_db **out, struct al_error *err);
/* Give the store db (taken: closed with the store) as its tenant's
 * metadata instead of meta.db: how a store's metadata comes from
 * PostgreSQL (a connection for the store's tenant, al_db_open_postgres). */
void al_store__use_meta_db(struct al_store *s, struct al_db *db);
/* The store's mapping of meta.db's group commit queue (group.h). */
struct al_group_map **al_store__group_map(struct al_store *s);
/* The opened meta.db's file, or NULL (PostgreSQL, not opened yet). */
const char *al_store__meta_file(struct al_store *s);

/* A new snapshot row's seq (meta.db migration 6), in the row's INSERT */
#define AL_SNAPSHOT_SEQ "(SELECT COALESCE(MAX(seq), 0) + 1 FROM snapshots)"

/* The home the store is in. */
const char *al_store__home(struct al_store *s);

/* The home's global database (tenants, principals, tokens) through the
 * metadata seam (db.h); the caller closes it. */
int al_store__global_db(const char *home, struct al_db **out, struct al_error *err);
/* The directory's rows of tenant (tenants, principals, grants, tokens,
 * sessions) through the seam, the caller closing it: the home's
 * airlock.db (every tenant's: the SQL names the tenant), or with
 * al_store_metadata a PostgreSQL connection for tenant (NULL: for no
 * tenant, which sees no row and asks the owner's functions, pg.c). */
int al_store__dir_db(const char *home, const char *tenant, struct al_db **out,
		     struct al_error *err);
/* Is the metadata on PostgreSQL (al_store_metadata)? */
bool al_store__on_postgres(void);
/* Each tenant of the deployment, by name. */
int al_store__tenants(const char *home,
		      int (*fn)(void *ctx, const char *name, struct al_error *err), void *ctx,
		      struct al_error *err);

void al_cas__release_memory(struct al_cas *c);
void al_cas__map_reads(bool on);
/* Bytes a handle's compression state holds (its zstd contexts and the
 * compression buffer): what al_store_release_memory gives back when idle. */
size_t al_cas__held(struct al_cas *c);
bool al_cas__idle(struct al_cas *c);
/* objects.db's PRAGMA synchronous (the tests: FULL where there is no WAL) */
int al_cas__synchronous(struct al_cas *c);
/* objects.db's connection (the tests) */
struct sqlite3 *al_cas__sqlite(struct al_cas *c);

#define AL_SECRET_KEY_LEN 32
/* The deployment's key for secrets' HMAC digests (created on first use). */
int al_store__secret_key(struct al_store *s, uint8_t key[AL_SECRET_KEY_LEN], struct al_error *err);

/* The deployment's ledger signing key (borrowed; loaded or created once). */
int al_store__ledger_key(struct al_store *s, EVP_PKEY **out, struct al_error *err);
/* Loads the ledger key ahead of its first use, if it exists (it is never
 * made here); a failure is al_store__ledger_key's to report. */
void al_store__ledger_key_ready(struct al_store *s);

#endif
