/* Private to libairlock: what manifest needs of the store. */
#ifndef AL_STORE_PRIVATE_H
#define AL_STORE_PRIVATE_H

#include <openssl/evp.h>
#include <sqlite3.h>

#include "airlock/store.h"

struct al_db;

/* The stat cache database of the tenant, opened on first use. */
int al_store__statcache(struct al_store *s, sqlite3 **out, struct al_error *err);
/* The tenant's metadata database (snapshots, projects, volumes, commits). */
int al_store__meta(struct al_store *s, sqlite3 **out, struct al_error *err);
/* The same database through the metadata seam (db.h), borrowed: the
 * modules converted to the seam use this one, the others al_store__meta,
 * one connection under both until every module is converted. */
int al_store__meta_db(struct al_store *s, struct al_db **out, struct al_error *err);
/* Give the store db (taken: closed with the store) as its tenant's
 * metadata instead of meta.db, for the modules on the seam: how a store's
 * metadata comes from PostgreSQL (a connection for the store's tenant,
 * al_db_open_postgres).  The modules still on al_store__meta keep
 * meta.db. */
void al_store__use_meta_db(struct al_store *s, struct al_db *db);

/* The home the store is in. */
const char *al_store__home(struct al_store *s);

/* Open the home's global database (tenants, principals, tokens). */
int al_store__global(const char *home, sqlite3 **out, struct al_error *err);
/* The same through the metadata seam (db.h); the caller closes it. */
int al_store__global_db(const char *home, struct al_db **out, struct al_error *err);

void al_cas__release_memory(struct al_cas *c);
void al_cas__map_reads(bool on);
/* Bytes a handle's compression state holds (its zstd contexts and the
 * compression buffer): what al_store_release_memory gives back when idle. */
size_t al_cas__held(struct al_cas *c);
bool al_cas__idle(struct al_cas *c);

#define AL_SECRET_KEY_LEN 32
/* The deployment's key for secrets' HMAC digests (created on first use). */
int al_store__secret_key(struct al_store *s, uint8_t key[AL_SECRET_KEY_LEN], struct al_error *err);

/* The deployment's ledger signing key (borrowed; loaded or created once). */
int al_store__ledger_key(struct al_store *s, EVP_PKEY **out, struct al_error *err);

#endif
