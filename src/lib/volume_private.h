/* Private: creating a draft together with a record of what produced it
 * (a run), in one transaction of meta.db. */
#ifndef AL_VOLUME_PRIVATE_H
#define AL_VOLUME_PRIVATE_H

#include "airlock/volume.h"

/* Called inside the draft's transaction, after the draft exists; an error
 * rolls everything back. */
struct al_db;
typedef int (*al_volume__draft_hook)(void *ctx, struct al_db *db, const struct al_draft_info *d,
				     struct al_error *err);
int al_volume__draft_create(struct al_store *st, const char *project, const struct al_draft_opts *o,
			    al_volume__draft_hook hook, void *ctx, struct al_draft_info *out,
			    struct al_error *err);

#endif
