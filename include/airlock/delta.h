/* airlock — DeltaBundles: the change between two snapshots as one
 * self-describing tar.zst file (docs/formats.md).  The first member,
 * ".airlock/bundle.json", is the canonical index; the bundle's id is the
 * sha256 of its bytes.  Then one member "files/<path>" per added or
 * modified file, symlink or directory.  Reading verifies everything before
 * anything is committed. */
#ifndef AIRLOCK_DELTA_H
#define AIRLOCK_DELTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/error.h"
#include "airlock/oid.h"
#include "airlock/manifest.h"

struct al_cas;

#define AL_BUNDLE_MAX_ENTRIES 1000000u
#define AL_BUNDLE_MAX_INDEX (64u << 20)
#define AL_BUNDLE_MAX_BYTES (16ull << 30)
/* a bundle's file bytes to its compressed bytes, checked past the grace
 * (the same figures as an image tarball's, image.h) */
#define AL_BUNDLE_MAX_RATIO 100u
#define AL_BUNDLE_RATIO_GRACE (1ull << 20)

struct al_bundle_entry {
	char op; /* 'A' add, 'M' modify, 'D' delete */
	char *path;
	bool has_old, has_new;
	struct al_entry old, new; /* names unset; a directory's digest is unused */
};

struct al_bundle {
	struct al_oid id; /* sha256 of the index */
	struct al_oid base, head;
	struct al_bundle_entry *entries;
	size_t n;
	uint64_t content_bytes;
};
void al_bundle_release(struct al_bundle *b);

/* Write the change base -> head to fd (at its offset; not synced).  A
 * change of nothing is written without libarchive, in the bytes it writes
 * to a regular file (to a pipe or a device libarchive pads the stream to
 * 10240 bytes; this does not). */
int al_bundle_write_fd(struct al_cas *cas, const struct al_oid *base, const struct al_oid *head,
		       int fd, struct al_oid *id_out, struct al_error *err);
/* Write the change base -> head to path (temp file, fsync, rename). */
int al_bundle_write(struct al_cas *cas, const struct al_oid *base, const struct al_oid *head,
		    const char *path, struct al_oid *id_out, struct al_error *err);

/* Read and verify a bundle.  With cas, the new bytes are put into the
 * caller's open batch (abort it on error: nothing is kept); without, they
 * are only verified.  Caps: entries, index size, total bytes, expansion
 * ratio (AL_ELIMIT). */
int al_bundle_read_fd(struct al_cas *cas, int fd, struct al_bundle *out, struct al_error *err);
int al_bundle_read_mem(struct al_cas *cas, const void *data, size_t len, struct al_bundle *out,
		       struct al_error *err);

/* The snapshot that results from applying a verified bundle to onto:
 * every old version it names must be what onto has at that path, every
 * added path absent.  Needs an open batch. */
int al_bundle_apply_tree(struct al_cas *cas, const struct al_bundle *b, const struct al_oid *onto,
			 struct al_oid *out, struct al_error *err);

#endif
