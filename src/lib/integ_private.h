/* The host side of a run's integrations (integ.h): the relay that serves
 * AL_INTEG_URL in the sandbox and its record of every call. */
#ifndef AL_INTEG_PRIVATE_H
#define AL_INTEG_PRIVATE_H

#include <stdint.h>

#include <jansson.h>

#include "airlock/integ.h"

struct al_integ_relay;

/* A relay for one run of project (started by principal, or NULL) that
 * asked for the NULL-terminated names: each must exist (AL_ENOTFOUND) and
 * be granted to the project or the principal (AL_EDENIED).  Its secrets
 * are decrypted here and live only in the host's memory.  At most
 * max_calls calls and max_bytes bytes (bodies, both ways). */
int al_integ__relay_new(struct al_store *st, const char *const *names, const char *project,
			const char *principal, uint64_t max_calls, uint64_t max_bytes,
			struct al_integ_relay **out, struct al_error *err);
/* Serve connections accepted from listen_fd (owned from here; -1: none). */
int al_integ__relay_start(struct al_integ_relay *r, int listen_fd, struct al_error *err);
/* Or: serve a connected socket (owned from here) from elsewhere (the
 * microVM relay): 0, or -1 when refused (over the call cap: answered 429
 * and counted; or stopped) and closed. */
int al_integ__relay_admit(struct al_integ_relay *r, int fd);
/* Stop accepting, end every call, wait for them.  Idempotent. */
void al_integ__relay_stop(struct al_integ_relay *r);
/* The record (docs/formats.md, "integrations"). */
json_t *al_integ__relay_json(struct al_integ_relay *r);
void al_integ__relay_free(struct al_integ_relay *r);

#endif
