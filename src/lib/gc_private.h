/* Private to libairlock: how a run marks the lower layers it uses (gc.c). */
#ifndef AL_GC_PRIVATE_H
#define AL_GC_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/error.h"

/* Hold the layer lowers/<name> in use: its lock file <name>.lock, held
 * shared (until the returned fd is closed) and stamped with the time (the
 * layer's last use).  Take it before looking for the layer: a collector
 * that removed it meanwhile has also removed the lock file, which this
 * notices and retries on a fresh one.  Returns the fd or a negative code. */
int al_gc__layer_use(int lowers, const char *name, struct al_error *err);

/* Is lowers/<name> (a ".tmp-" directory being materialised) abandoned: its
 * <name>.lock is missing or held by no process?  The materialiser creates
 * and locks it before the directory exists and removes it last. */
bool al_gc__staging_dead(int lowers, const char *name);

/* The bucket's sweeps across nodes (gc_sweeps.c; docs/architecture.md,
 * "Garbage collection in the bucket").  A pass records the n ids its bucket
 * sweep deletes under the tenant's next sweep generation, in its write
 * transaction on db (now: the real clock), and forgets the ids of passes
 * older than AL_GC_SWEPT_KEEP. */
#define AL_GC_SWEPT_KEEP (30 * 86400)
struct al_db;
struct al_oid;
int al_gc__swept_record(struct al_db *db, const struct al_oid *ids, size_t n, int64_t now,
			struct al_error *err);
/* The on-write hook (al_db__on_write) of a store with a bucket (ctx: the
 * struct al_store): bring this node's store up to the last pass, uploading
 * again what the passes since swept and it holds. */
int al_gc__catch_up(void *ctx, struct al_db *db, struct al_error *err);

#endif
