/* Private to libairlock: what the collector (gc.c) needs of the object
 * store.  The protocol that makes deleting safe is in docs/architecture.md
 * ("Garbage collection"). */
#ifndef AL_CAS_PRIVATE_H
#define AL_CAS_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/cas.h"

/* In the tenant directory: held shared by a cas handle from its first batch
 * until it is idle, exclusively by the collector's sweep. */
#define AL_CAS_GC_LOCK "gc.lock"

struct al_odb_backend;
/* Put a remote object backend behind the store (odb_backend.h); the store
 * owns it from now on (NULL removes it).  With a remote, al_cas_commit
 * writes every object the batch inserted to the remote before it commits
 * (a failure there aborts the batch), and a read of an object the local
 * store lacks fetches it from the remote, verified, and keeps it. */
void al_cas__set_remote(struct al_cas *c, struct al_odb_backend *remote);
/* al_cas_has without asking the remote: does the local store hold it (what
 * a put's dedup and the collector need; al_cas_has also asks the remote). */
int al_cas__has_local(struct al_cas *c, const struct al_oid *digest, struct al_error *err);

struct al_idset;
struct al_odb_sweep;
/* The remote's sweep (odb_backend.h): delete from the remote what keep
 * lacks and the remote stored before `before` (dry: count only), telling
 * doomed first.  0 with nothing counted when there is no remote. */
int al_cas__remote_sweep(struct al_cas *c, const struct al_idset *keep,
			 int (*doomed)(void *ctx, const struct al_oid *ids, size_t n,
				       struct al_error *err),
			 void *ctx, int64_t before, bool dry, struct al_odb_sweep *out,
			 struct al_error *err);
bool al_cas__has_remote(const struct al_cas *c);
/* Upload again, from the local store, those of ids it holds (the bucket
 * may have lost them to another node's sweep: gc.c's catch-up); *n_out
 * (may be NULL) counts them.  The caller holds the metadata write lock, so
 * no collector sweeps what is read meanwhile. */
int al_cas__reupload(struct al_cas *c, const struct al_oid *ids, size_t n, uint64_t *n_out,
		     struct al_error *err);
/* Upload every local object the remote's listing lacks, without the pin
 * al_cas_remote_sync takes (the caller holds the metadata write lock). */
int al_cas__reupload_missing(struct al_cas *c, struct al_cas_sync_stats *out, struct al_error *err);
/* This node's sweep generation for the remote (tenants/<t>/bucket.gen,
 * gc_sweeps.c): *gen -1 when it has none, and the file's serial, which
 * every catch-up moves on (-1 when the file is missing or damaged).  A
 * fetch from the remote reads the serial before its bytes leave, and when
 * it lands (the commit that makes its row visible), under bucket.lock
 * taken shared, uploads them again if the serial moved: a catch-up began
 * meanwhile and could not see them. */
int al_cas__gen_read(struct al_cas *c, int64_t *gen, int64_t *serial, struct al_error *err);
/* Written whole, renamed into place.  Only a catch-up writes it, under the
 * tenant's metadata write lock. */
int al_cas__gen_write(struct al_cas *c, int64_t gen, int64_t serial, struct al_error *err);
/* A catch-up's first step, before it looks at what the local store holds:
 * the serial moved on (after a lost or damaged file, to a random one),
 * under bucket.lock taken exclusively, held for this step only; *gen the
 * node's generation, *serial the new serial. */
int al_cas__gen_bump(struct al_cas *c, int64_t *gen, int64_t *serial, struct al_error *err);
/* bucket.lock, held until the returned descriptor is closed */
int al_cas__gen_lock(struct al_cas *c, bool exclusive, struct al_error *err);
/* Does the local store hold no object at all? */
int al_cas__empty(struct al_cas *c, struct al_error *err);

/* Take the handle's gc.lock pin now (as its first batch would): what it
 * reads from here on cannot be swept until it is idle again.  For work a
 * commit does before its metadata lock (volume.c precompute). */
int al_cas__pin(struct al_cas *c, struct al_error *err);
/* A tree node's bytes for al_node_load, verified.  A pinned handle keeps
 * the nodes it read from committed rows and answers them again without a
 * lookup (cas.c, "tree nodes read again"): then *p is the handle's, valid
 * until its next al_cas__node call or its pin's release, and *owned NULL;
 * else *owned is *p, the caller's to free. */
int al_cas__node(struct al_cas *c, const struct al_oid *d, const uint8_t **p, size_t *len,
		 uint8_t **owned, struct al_error *err);
/* Reads that follow (a diff's lookups) in one read transaction of
 * objects.db, not one each: what another connection commits meanwhile is
 * not seen, so only for objects already named by what the caller read
 * before.  False (and a no-op) inside a transaction of the handle's own;
 * a write of the handle's ends it early.  al_cas__reads_end(c, began)
 * with what it returned. */
bool al_cas__reads_begin(struct al_cas *c);
void al_cas__reads_end(struct al_cas *c, bool began);
/* The collector holds gc.lock exclusively through this handle's store:
 * the handle's own reads (an object fetched from the bucket for mark 2)
 * take no pin, which would wait on that lock forever. */
void al_cas__sweeping(struct al_cas *c, bool on);

/* A group commit's (volume.c): while on, a batch begun inside the open
 * one joins it, and its commit or abort only leaves it; the outer batch's
 * commit makes them all durable at once.  An aborted inner batch's
 * objects stay in the outer one, named by nothing (swept as any other).
 * AL_EUSAGE when turned on with a batch open. */
int al_cas__group(struct al_cas *c, bool on, struct al_error *err);
/* Does the open batch hold objects.db's write lock (its transaction is
 * open: a row went in, held rows flushed, a large object stored)? */
bool al_cas__locked(struct al_cas *c);

/* Hold objects.db's checkpoints (al_sqlite_hold_checkpoints) while the
 * caller holds meta.db's write lock; released, a checkpoint due runs. */
void al_cas__hold_checkpoints(struct al_cas *c, bool hold);

struct al_cas__object {
	int64_t n; /* insertion order: larger is newer */
	struct al_oid id;
	uint64_t size;
	bool loose;
};
typedef int (*al_cas__object_fn)(void *ctx, const struct al_cas__object *o, struct al_error *err);
/* Every object inserted after the n-th (0: all), oldest first. */
int al_cas__foreach(struct al_cas *c, int64_t after_n, al_cas__object_fn fn, void *ctx,
		    struct al_error *err);
int al_cas__max_n(struct al_cas *c, int64_t *out, struct al_error *err);

struct al_cas__sweep_stats {
	uint64_t objects, bytes;             /* index rows deleted, their sizes */
	uint64_t orphan_files, orphan_bytes; /* files under objects/ the index does not name */
};
/* Count the orphan files (nothing removed). */
int al_cas__orphan_files(struct al_cas *c, struct al_cas__sweep_stats *s, struct al_error *err);
/* Delete ids from the index in one transaction; before_commit runs inside
 * it (the caller records the sweep); after the commit the loose files of
 * the deleted objects and every orphan file are removed.  The caller holds
 * AL_CAS_GC_LOCK exclusively. */
int al_cas__sweep(struct al_cas *c, const struct al_oid *ids, size_t n,
		  int (*before_commit)(void *ctx, const struct al_cas__sweep_stats *s,
				       struct al_error *err),
		  void *ctx, struct al_cas__sweep_stats *out, struct al_error *err);

#endif
