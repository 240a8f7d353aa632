/* delta: what only the library itself may call. */
#ifndef AIRLOCK_DELTA_PRIVATE_H
#define AIRLOCK_DELTA_PRIVATE_H

#include "airlock/delta.h"

/* al_bundle_read_fd without the expansion-ratio cap, for a bundle airlock
 * has just written itself (a run's changes): how well an agent's files
 * compress is bounded by its disk limit, not refused.  A plain bundle
 * (al_bundle__plain_name) is read without libarchive. */
int al_bundle__read_own_fd(struct al_cas *cas, int fd, struct al_bundle *out, struct al_error *err);

/* Whether a bundle names the path (a directory's, if dir) in a plain ustar
 * header, as al_bundle_write_fd writes without libarchive: printable
 * ASCII, "files/<path>" shorter than 100 bytes. */
bool al_bundle__plain_name(const char *path, bool dir);

/* al_bundle_write_fd through libarchive always, also for a plain bundle
 * (which al_bundle_write_fd writes itself): for the test that the two
 * give the same tar. */
int al_bundle__write_fd_archive(struct al_cas *cas, const struct al_oid *base,
				const struct al_oid *head, int fd, struct al_oid *id_out,
				struct al_error *err);

#endif
