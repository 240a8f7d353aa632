/* airlock — garbage collection of one tenant's storage.
 *
 * Two things grow: the lower layers runs materialise (tenants/<t>/lower/)
 * and the object store.  A pass keeps the lower layers within a size budget
 * (least recently used removed first, never one a run is using), and
 * deletes the objects nothing retained reaches.  Retained: what a project's
 * head, an open draft or an image names, always; what a recorded snapshot,
 * a commit, a run record or a ledger entry names when it is younger than
 * the tenant's retention period (default: forever, so by default only
 * objects nothing ever recorded are deleted).  The ledger itself is never
 * shortened.  A pass is crash-safe and runs beside runs and commits
 * (docs/architecture.md, "Garbage collection"); each pass that is not a dry
 * run appends a `gc` ledger entry. */
#ifndef AIRLOCK_GC_H
#define AIRLOCK_GC_H

#include <stdbool.h>
#include <stdint.h>

#include "airlock/error.h"
#include "airlock/oid.h"

struct al_store;

#define AL_GC_FOREVER (-1)
#define AL_GC_RETENTION_MAX_DAYS 36500
#define AL_GC_LOWER_BUDGET_DEFAULT (10ull << 30)

/* The tenant's retention period in days (AL_GC_FOREVER: never expires). */
int al_gc_retention_get(struct al_store *st, int64_t *days, struct al_error *err);
/* Set it (0..AL_GC_RETENTION_MAX_DAYS or AL_GC_FOREVER); a `gc_retention`
 * ledger entry records the change in the same transaction. */
int al_gc_retention_set(struct al_store *st, int64_t days, const char *actor, struct al_error *err);

struct al_gc_opts {
	bool dry_run;          /* report what would go; change nothing */
	uint64_t lower_budget; /* bytes of lower layers to keep (0: AL_GC_LOWER_BUDGET_DEFAULT) */
	int64_t now;           /* unix time of the pass (0: the clock); tests move it */
	unsigned wait_ms;      /* how long to wait for writers to pause (0: 30 s) */
	const char *actor;     /* who asked (the ledger entry's actor) */
	/* --blobs: an object in the bucket nothing retains is deleted once the
	 * bucket has held it this long, by the real clock (never `now`): 0 is
	 * AL_GC_BLOBS_GRACE_DEFAULT (docs/architecture.md, "Garbage collection
	 * in the bucket") */
	int64_t blobs_grace;
};
#define AL_GC_BLOBS_GRACE_DEFAULT 86400

struct al_gc_report {
	int64_t retention_days;              /* AL_GC_FOREVER or days */
	uint64_t objects, bytes;             /* objects deleted (would be, in a dry run) */
	uint64_t snapshots;                  /* recorded snapshots forgotten with them */
	uint64_t orphan_files, orphan_bytes; /* files under objects/ no index row names */
	uint64_t layers, layer_bytes;        /* lower layers removed */
	uint64_t layers_kept, layer_bytes_kept, layers_in_use;
	uint64_t staging;     /* abandoned temporary layers removed */
	uint64_t retained;    /* objects reached from what is retained */
	bool objects_skipped; /* writers never paused: no object was deleted this pass */
	uint64_t seq;         /* the `gc` ledger entry (not in a dry run) */
	/* --blobs: objects deleted from the bucket (would be, in a dry run),
	 * and those nothing retains but too young to go */
	uint64_t blobs_objects, blobs_bytes, blobs_young;
};

/* One pass over the tenant of st. */
int al_gc_run(struct al_store *st, const struct al_gc_opts *o, struct al_gc_report *rep,
	      struct al_error *err);

/* One pass over every tenant of a home, one after the other (the daemon's
 * schedule).  done() hears each tenant's outcome; stop(), asked between
 * tenants, ends the round early when it returns true (may be NULL). */
typedef void (*al_gc_done_fn)(void *ctx, const char *tenant, int r, const struct al_gc_report *rep,
			      const struct al_error *err);
int al_gc_home(const char *home, const struct al_gc_opts *o, al_gc_done_fn done,
	       bool (*stop)(void *ctx), void *ctx, struct al_error *err);

/* Is snapshot id complete in the store (every node and blob)?  0 if so;
 * AL_ENOTFOUND naming the first missing object otherwise. */
int al_gc_snapshot_complete(struct al_store *st, const struct al_oid *id, struct al_error *err);

#endif
