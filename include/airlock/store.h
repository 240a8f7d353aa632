/* airlock — a home directory and the storage of one tenant in it.
 *
 * Layout (docs/architecture.md):
 *   $AIRLOCK_HOME/airlock.db              global: tenants (later principals)
 *   $AIRLOCK_HOME/tenants/<tenant>/       one tenant, nothing shared
 *       objects.db  objects/  tmp/        the content-addressed store (cas.h)
 *       meta.db                           snapshots (later volumes, ledger)
 *       statcache.db                      import stat cache (safe to delete)
 */
#ifndef AIRLOCK_STORE_H
#define AIRLOCK_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "airlock/error.h"
#include "airlock/oid.h"

struct al_store;
struct al_cas;

#define AL_DEFAULT_TENANT "default"

/* Create a home (idempotent) with the default tenant. */
int al_home_init(const char *home, struct al_error *err);
/* Create a tenant in an existing home (AL_EEXIST if it exists). */
/* Its ledger's first entry records it (tenant_create, with actor). */
int al_home_tenant_create(const char *home, const char *tenant, const char *actor,
			  struct al_error *err);
/* Is name a valid tenant name: [a-z0-9][a-z0-9_-]{0,62}. */
int al_tenant_name_check(const char *name, struct al_error *err);

/* Objects beyond this machine, for every store the process opens from now
 * on: url is "s3://BUCKET[/PREFIX][?endpoint=…&region=…&credentials=…]"
 * (al_s3_config_parse, odb_backend.h); NULL or "" for none (the default:
 * the local store only).  Each tenant's objects are then also in the
 * bucket under PREFIX/TENANT/, written before a batch commits, and read
 * from there (verified, then kept locally) when the local store lacks
 * them.  Call it once, before any thread opens a store. AL_EINVAL on a
 * malformed url or missing credentials. */
int al_store_blobs(const char *url, struct al_error *err);

/* Keep every tenant's metadata (projects, volumes, commits, drafts, runs,
 * the ledger, the directory of tenants, principals and tokens, policy)
 * in the PostgreSQL database at url (postgres://… or postgresql://…,
 * libpq's URI, as the service role) instead of the home's SQLite files;
 * NULL or "" for the home (the default).  The home still holds the keys,
 * the objects and the node-local caches.  Call it once, before any thread
 * opens a store; nothing is connected until then.  AL_EINVAL on a URL of
 * another scheme. */
int al_store_metadata(const char *url, struct al_error *err);

/* Is home an airlock home (for the metadata in use: its directory on the
 * home, or the PostgreSQL database reachable at the schema this build
 * writes)?  AL_ENOTFOUND naming what to run when not; AL_EUNAVAIL when
 * the database cannot be reached; AL_ESTATE when its schema is not this
 * build's. */
int al_home_check(const char *home, struct al_error *err);

/* Open the storage of one tenant; AL_ENOTFOUND if the home or the tenant
 * does not exist. */
int al_store_open(const char *home, const char *tenant, struct al_store **out,
		  struct al_error *err);
void al_store_close(struct al_store *s);

/* Read the tenants' object index (objects.db) through a memory map, set
 * before any store is opened (default: on).  A lookup then touches the
 * 4 KiB pages it needs instead of copying a whole database page: a short
 * command such as `snapshot diff` at 1M entries reads 4 MB less.  A handle
 * stops mapping when it begins an object batch after another connection
 * has committed: SQLite drops the whole map whenever another connection
 * has committed, which costs concurrent writers more than the copies.  Mapped pages count in the
 * process's RSS, so the long-lived daemon turns it off; writes go through the WAL either way. */
void al_store_map_reads(bool on);

/* Give back the page caches of the tenant's databases and, when idle, the
 * object store's I/O buffer pages and its compression workspaces past
 * 1 MiB; the handle stays usable (a run does this before its sandbox,
 * which may last hours; the daemon after each request on a handle it
 * keeps). */
void al_store_release_memory(struct al_store *s);
/* No transaction or object batch is open on the handle (it may be kept). */
bool al_store_idle(struct al_store *s);

struct al_cas *al_store_cas(struct al_store *s); /* borrowed */
const char *al_store_dir(struct al_store *s);    /* the tenant directory */
const char *al_store_tenant(struct al_store *s); /* its name */

/* Snapshots known to this tenant (roots that fsck walks). */
struct al_snapshot_info {
	struct al_oid id;
	int64_t created;
	uint64_t files, bytes;
	const char *source;
};
int al_store_snapshot_add(struct al_store *s, const struct al_snapshot_info *info,
			  struct al_error *err);
typedef int (*al_snapshot_fn)(void *ctx, const struct al_snapshot_info *info, struct al_error *err);
int al_store_snapshot_foreach(struct al_store *s, al_snapshot_fn fn, void *ctx,
			      struct al_error *err);

#endif
