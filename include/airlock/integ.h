/* airlock — integrations: a credential bound to a base URL, used on the
 * host on a run's behalf.
 *
 * An admin creates an integration (a name, an https base URL, one header
 * whose value holds the credential where "@secret" stands) and grants it
 * to projects or principals of the tenant.  A run granted it that asks for
 * it reaches AL_INTEG_URL/NAME/PATH inside its sandbox; airlock sends the
 * request to BASE_URL/PATH from the host with the header added and
 * returns the answer (docs/threat-model.md, "Integrations").  The secret
 * is kept encrypted under the deployment's secrets key (AES-256-GCM) and
 * is never shown again: listings show the header's name only. */
#ifndef AIRLOCK_INTEG_H
#define AIRLOCK_INTEG_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "airlock/error.h"

struct al_store;

#define AL_INTEG_PORT 3129
#define AL_INTEG_URL "http://127.0.0.1:3129" /* $AIRLOCK_INTEGRATIONS in a run */
#define AL_INTEG_RUN_MAX 16                  /* integrations one run may ask for */
#define AL_INTEG_SECRET_MAX 8192             /* bytes of a secret */
#define AL_INTEG_REQUEST_MAX (1u << 20)      /* bytes of a call's request body */
#define AL_INTEG_RESPONSE_MAX (8u << 20)     /* bytes of a call's answer body */

struct al_integ_spec {
	const char *name;     /* [a-z0-9][a-z0-9_-]{0,62} */
	const char *base_url; /* https://host[:port][/path]; http:// to loopback with insecure */
	const char *header;   /* "Name: value with @secret" (exactly one "@secret") */
	const char *secret;   /* what @secret stands for */
	const char *ca_pem;   /* CA certificates to trust for base_url, or NULL: the system's */
	bool keep_bodies;     /* keep each call's bodies in the run's record */
	bool insecure;        /* allow http:// (loopback addresses only) */
	const char *actor;
};

/* Is name an integration name?  AL_EINVAL saying why if not. */
int al_integ_name_check(const char *name, struct al_error *err);
/* Is header a credential header ("Name: value", @secret once in the
 * value, no control character, not a reserved name)?  AL_EINVAL if not. */
int al_integ_header_check(const char *header, struct al_error *err);
/* Is spec well-formed (its secret too unless NULL)?  AL_EINVAL saying why. */
int al_integ_check(const struct al_integ_spec *spec, struct al_error *err);
/* Create it (AL_EEXIST if the name is taken); a ledger entry
 * "integration_create" without the secret. */
int al_integ_create(struct al_store *st, const struct al_integ_spec *spec, struct al_error *err);
/* Grant it to a project or (project NULL) a principal of the tenant. */
int al_integ_grant(struct al_store *st, const char *name, const char *project,
		   const char *principal, const char *actor, struct al_error *err);
/* Replace its secret (and, unless header is NULL, its header: checked as
 * create checks it), keeping its grants; a ledger entry
 * "integration_rotate" without the secret.  Runs started before keep the
 * secret they loaded; later runs use the new one.  AL_ENOTFOUND if none. */
int al_integ_rotate(struct al_store *st, const char *name, const char *header, const char *secret,
		    const char *actor, struct al_error *err);
/* Delete it and its grants. */
int al_integ_delete(struct al_store *st, const char *name, const char *actor, struct al_error *err);
/* May a run of project (started by principal, or NULL) use the
 * NULL-terminated names?  As a run checks them before it starts: each
 * exists (AL_ENOTFOUND), is granted (AL_EDENIED), its secret opens. */
int al_integ_usable(struct al_store *st, const char *const *names, const char *project,
		    const char *principal, struct al_error *err);
/* The tenant's integrations, by name: [{"name","base_url","header" (its
 * name only),"keep_bodies","insecure","ca":bool,"projects":[...],
 * "principals":[...],"created"}]. */
int al_integ_list(struct al_store *st, json_t **out, struct al_error *err);

#endif
