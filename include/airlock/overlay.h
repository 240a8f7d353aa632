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
 * trusted.  Cost: what the run changed, not the workspace. */
#ifndef AIRLOCK_OVERLAY_H
#define AIRLOCK_OVERLAY_H

#include <stddef.h>
#include <stdint.h>

#include "airlock/error.h"

struct al_store;

struct al_overlay_report {
	uint64_t set, deleted, unchanged_copyups, neutralised;
	char **notes; /* one line per neutralised entry: "path: what was done" */
	size_t nnotes;
};
void al_overlay_report_release(struct al_overlay_report *r);

int al_overlay_apply(struct al_store *st, const uint8_t base[32], const char *upper, uint8_t out[32],
		     struct al_overlay_report *rep, struct al_error *err);

#endif
