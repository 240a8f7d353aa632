/* airlock — a run's changes from its overlayfs upper layer.
 *
 * After every process of a run is dead, the host reads the upper layer of
 * the run's /workspace overlay and applies it to the run's base snapshot:
 * whiteouts (char 0:0) are deletions, opaque directories (trusted. or
 * user.overlay.opaque = "y") replace, copied-up files identical to the base
 * are not changes.  What a run may not hand back is neutralised and
 * recorded: device files, FIFOs and sockets are not kept; setuid/setgid
 * bits are removed; hardlinks become independent files; invalid names are
 * not kept.  Symlinks are stored as symlinks, never followed; no owner is
 * trusted.  Cost: what the run changed, not the workspace.
 *
 * With a byte budget (a run's disk limit), the apparent size (st_size) of
 * every regular file taken counts against it: a sparse file costs what it
 * would cost to hash and store, not its blocks.  The first file that does
 * not fit and every regular file after it (in walk order) are not read:
 * they are left out of the snapshot (a new file is absent, a modified one
 * keeps its base version), counted in `dropped`, and the first
 * AL_OVERLAY_DROPPED_NAMED of them named in the notes (and in
 * dropped_paths), then one note with the count of the rest.  Deletions,
 * directories and symlinks still apply. */
#ifndef AIRLOCK_OVERLAY_H
#define AIRLOCK_OVERLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/error.h"
#include "airlock/oid.h"

struct al_store;

#define AL_OVERLAY_DROPPED_NAMED 1000

struct al_overlay_report {
	uint64_t set, deleted, unchanged_copyups, neutralised;
	char **notes; /* one line per neutralised entry: "path: what was done" */
	size_t nnotes;
	bool limit_hit;       /* the budget was reached: files were dropped */
	uint64_t dropped;     /* regular files not kept because of it */
	uint64_t bytes_taken; /* apparent bytes of the regular files read */
	char **dropped_paths; /* the first AL_OVERLAY_DROPPED_NAMED dropped, as paths */
	size_t ndropped_paths;
	/* the regular file modified last (any, kept or not): when the run's
	 * disk was full, the write that failed was most likely to it */
	char *newest;
	bool newest_kept;
	int64_t newest_sec, newest_nsec;
};
void al_overlay_report_release(struct al_overlay_report *r);
/* One more neutralised entry, noted (formatted): -1 if out of memory. */
int al_overlay_report_note(struct al_overlay_report *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

int al_overlay_apply(struct al_store *st, const struct al_oid *base, const char *upper,
		     struct al_oid *out, struct al_overlay_report *rep, struct al_error *err);
/* The same within max_bytes of regular files' apparent sizes (0: none).
 * unplain, if not NULL, is called once during the walk, with ctx, at the
 * first path kept that a bundle names only through libarchive (delta.c):
 * a caller about to write the changes' bundle may start loading it. */
int al_overlay_apply_within(struct al_store *st, const struct al_oid *base, const char *upper,
			    uint64_t max_bytes, void (*unplain)(void *ctx), void *ctx,
			    struct al_oid *out, struct al_overlay_report *rep,
			    struct al_error *err);

#endif
