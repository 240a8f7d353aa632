/* airlock — replay: a recorded run executed again from its record, and a
 * verdict on whether it did the same.
 *
 * The replay takes the original's inputs from its record: base snapshot
 * (or, on_head, the project's head now), image, argv, environment, limits,
 * network policy; /workspace is the working directory of both.  Secrets
 * are never in a record: the caller supplies every secret the original had,
 * by name, and the record's keyed digests say whether they are the same
 * values.  The replay is a run like any other (its own record, draft and
 * `run` ledger entry, in the original's group) whose record adds
 * `replay_of` and `verdict` (docs/formats.md):
 *
 *   identical       exit status, stdout and stderr digests, and every
 *                   changed path's change kind, type, mode and content
 *                   digest are equal;
 *   divergent       each difference, with the first differing line of an
 *                   output, a unified diff (text) or sizes and digests
 *                   (binary) of a path, and the likely cause when it can
 *                   be told (docs/determinism.md);
 *   not_replayable  an input is gone (a collected base, image or result)
 *                   or a secret was not supplied: recorded with the
 *                   reason, and no sandbox is started.
 *
 * The verdict compares digests from the two drafts' manifests; contents
 * are read only for paths and outputs whose digests differ. */
#ifndef AIRLOCK_REPLAY_H
#define AIRLOCK_REPLAY_H

#include <stdbool.h>

#include "airlock/error.h"
#include "airlock/run.h"

/* airlock replay's exit status for each verdict (identical: 0) */
#define AL_REPLAY_EXIT_DIVERGENT 20
#define AL_REPLAY_EXIT_NOT_REPLAYABLE 21

struct al_replay_opts {
	const char *of;             /* the recorded run's id */
	bool on_head;               /* on the project's head now, not the original's base */
	const char *const *secrets; /* "NAME=VALUE", NULL-terminated: the original's secrets */
};

/* Replay run ro->of.  From o only the execution's own fields are taken (id,
 * cancel_fd, author, principal, init_path, host ids, output, throttle);
 * everything else comes from the record.  0 once the replay is recorded,
 * whatever its verdict (out->record has it).  Refused, with nothing
 * recorded: AL_ENOTFOUND (no such run), AL_ESTATE (it has not ended),
 * AL_EUSAGE (a malformed or repeated NAME=VALUE), AL_EINVAL (a secret the
 * original did not have).  A replay that fails after it began is recorded
 * and fails like al_run. */
int al_replay(struct al_store *st, const struct al_replay_opts *ro, const struct al_run_opts *o,
	      struct al_run_info *out, struct al_error *err);

#endif
