/* Private to libairlock: an open-addressing set of digests (fsck's nodes
 * already checked, gc's retained objects).  Zero-initialised is empty. */
#ifndef AL_IDSET_H
#define AL_IDSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/oid.h"

struct al_idset {
	struct al_oid *slot;
	bool *used;
	size_t cap, n;
};

bool al_idset_has(const struct al_idset *s, const struct al_oid *d);
/* 1 added, 0 already present, -1 out of memory */
int al_idset_add(struct al_idset *s, const struct al_oid *d);
void al_idset_release(struct al_idset *s);

#endif
