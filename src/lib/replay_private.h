/* Private: the verdict of a replay, apart from the run that produced it
 * (tests/unit/test_replay.c calls it on records it builds). */
#ifndef AL_REPLAY_PRIVATE_H
#define AL_REPLAY_PRIVATE_H

#include <stdbool.h>

#include <jansson.h>

#include "airlock/error.h"

struct al_store;

/* How many paths a verdict lists, and how many of them with their two
 * versions' diff (docs/formats.md, "verdict"). */
#define AL_REPLAY_PATHS_LISTED 1000
#define AL_REPLAY_PATHS_DETAILED 50
#define AL_REPLAY_UNIFIED_MAX (16u << 10)

/* The verdict on rep, the replay's record, against orig, the original's
 * (both parsed; rep may be a failed attempt's, without result): a new
 * object {result, original, on_head, differences, paths_differing,
 * paths_unlisted, secrets}.  secrets (may be NULL) is the comparison of the
 * supplied secrets, [{name, as, same}], taken as is (a reference is added). */
int al_replay__verdict(struct al_store *st, json_t *orig, json_t *rep, bool on_head,
		       json_t *secrets, json_t **out, struct al_error *err);

/* The wall-clock times (UTC seconds) written in text: unix seconds (10
 * digits), ISO 8601 (2026-11-30T16:45:13, or a space for the T) and
 * date(1)'s default (Mon Nov 30 16:45:13 UTC 2026).  At most max; returns
 * how many. */
size_t al_replay__times(const char *s, size_t n, int64_t *out, size_t max);

#endif
