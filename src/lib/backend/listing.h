/* Private to the object backends: foreach and the sweep over a backend's
 * listing (each stored object, its size and when it was stored), shared by
 * the bucket (s3/s3.c: S3's LastModified) and the database's rows
 * (postgres/odb.c: stored), which keep the same rule (odb_backend.h). */
#ifndef AL_ODB_LISTING_H
#define AL_ODB_LISTING_H

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

#endif
