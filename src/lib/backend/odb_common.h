/* Private to the object backends: what more than one of them does.
 *  - foreach and the sweep over a backend's listing (each stored object,
 *    its size and when it was stored), shared by the bucket (s3/s3.c: S3's
 *    LastModified) and the database's rows (postgres/odb.c: stored), which
 *    keep the same rule (odb_backend.h);
 *  - a source read whole, exactly its announced size;
 *  - buffers as write_many's objects. */
#ifndef AL_ODB_COMMON_H
#define AL_ODB_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/odb_backend.h"

/* One object of a listing; a non-zero return stops it. */
typedef int (*al_odb__listed_fn)(void *ctx, const struct al_oid *id, uint64_t size, int64_t stored,
				 struct al_error *err);
/* Every object the backend stores, each once. */
typedef int (*al_odb__list_fn)(struct al_odb_backend *b, al_odb__listed_fn fn, void *ctx,
			       struct al_error *err);
/* Delete ids (those stored again at or after `before` may be kept). */
typedef int (*al_odb__delete_fn)(struct al_odb_backend *b, const struct al_oid *ids, size_t n,
				 int64_t before, struct al_error *err);

/* foreach (odb_backend.h) over list. */
int al_odb__foreach_listed(struct al_odb_backend *b, al_odb__list_fn list, al_odb_foreach_fn fn,
			   void *ctx, struct al_error *err);
/* sweep (odb_backend.h) over list: the listing whole first (deleting while
 * paging would move the pages), then doomed told every id that goes, then
 * del. */
int al_odb__sweep_listed(struct al_odb_backend *b, al_odb__list_fn list, al_odb__delete_fn del,
			 al_odb_keep_fn keep, al_odb_doomed_fn doomed, void *ctx, int64_t before,
			 bool dry, struct al_odb_sweep *out, struct al_error *err);

/* Exactly size bytes of the source src (read), into a new buffer *out
 * (free it): a source that ends early or goes on is AL_EINVAL. */
int al_odb__read_exact(al_odb_source read, void *src, uint64_t size, uint8_t **out,
		       struct al_error *err);

/* An object's bytes in memory, and how far a source over them has read. */
struct al_odb__buf {
	struct al_oid id;
	const uint8_t *p;
	size_t len, pos;
};
/* n of them as write_many's objects (al_odb__bufs_objects): open finds an
 * object by its id and reads it from its first byte (again, on a retry). */
struct al_odb__bufs {
	struct al_odb__buf *b;
	size_t n;
};
struct al_odb_objects al_odb__bufs_objects(struct al_odb__bufs *bufs);

#endif
