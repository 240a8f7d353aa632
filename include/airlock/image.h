/* airlock — images: snapshots used as a sandbox's read-only root
 * filesystem, with names.  Device files, FIFOs and sockets in an image are
 * skipped (counted): the sandbox provides its own /dev. */
#ifndef AIRLOCK_IMAGE_H
#define AIRLOCK_IMAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "airlock/error.h"
#include "airlock/oid.h"
#include "airlock/manifest.h"

struct al_store;

/* What one tar archive from an outsider (an image or a tree upload) may
 * unpack into; past any of them it is refused (AL_ELIMIT) and nothing is
 * kept.  Bytes are apparent sizes: a sparse member's holes and a
 * hardlink's target count in full, since the import reads and hashes them.
 * The ratio is unpacked bytes to archive bytes read, checked once more
 * than AL_TAR_RATIO_GRACE bytes are unpacked (Apache POI's zip-bomb
 * default: 1:100).  Only libarchive's built-in gzip, xz, zstd and bzip2
 * decoders (or none) are enabled, never an external program. */
#define AL_TAR_MAX_BYTES (8ull << 30)
#define AL_TAR_MAX_ENTRIES 1000000u
#define AL_TAR_MAX_RATIO 100u
#define AL_TAR_RATIO_GRACE (1ull << 20)

struct al_image_info {
	char name[65]; /* "" when unnamed */
	struct al_oid id;
	int64_t created;
	const char *source;
};

/* Import a directory, or a tar archive (uncompressed, gzip, xz, zstd or
 * bzip2; within the caps above),
 * as an image; name may be NULL.  A tarball is unpacked into the tenant's
 * temp directory with libarchive's secure flags (no "..", no absolute
 * paths, no writing through symlinks), imported, and removed. */
int al_image_import(struct al_store *st, const char *src, const char *name,
		    struct al_import_result *res, struct al_error *err);
/* Import a tar archive as a snapshot of the tenant, unpacked the same way
 * (skipped special files counted in res->skipped); not recorded as an
 * image. */
int al_tar_import(struct al_store *st, const char *tarball, struct al_import_result *res,
		  struct al_error *err);
/* The same, recording source (e.g. "upload") instead of src as its origin,
 * and actor as who imported it; every import is an image_import ledger
 * entry, in the transaction that registers it. */
int al_image_import_as(struct al_store *st, const char *src, const char *name, const char *source,
		       const char *actor, struct al_import_result *res, struct al_error *err);
typedef int (*al_image_fn)(void *ctx, const struct al_image_info *img, struct al_error *err);
int al_image_foreach(struct al_store *st, al_image_fn fn, void *ctx, struct al_error *err);
/* May the caller read this project? */
typedef bool (*al_project_read_fn)(void *ctx, const char *project);
/* A name or an id (sha256:…) to an image's snapshot id, for a caller who
 * may read the projects may_read accepts (NULL: every project, as the CLI
 * and the operator may).  An id is an image only if it is a registered
 * image's, or a snapshot in the history of a project the caller may read:
 * its live head, or the parent or result of one of its live volume's
 * commits (a draft's content is not, until applied).  Every id refused —
 * unknown, a blob or another kind of object, a snapshot of no readable
 * project — gets the same AL_ENOTFOUND and the same message, decided
 * before any object is read: no answer tells which. */
int al_image_resolve_as(struct al_store *st, const char *name_or_id, al_project_read_fn may_read,
			void *ctx, struct al_oid *id, struct al_error *err);
/* al_image_resolve_as with every project readable. */
int al_image_resolve(struct al_store *st, const char *name_or_id, struct al_oid *id,
		     struct al_error *err);

#endif
