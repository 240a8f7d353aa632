/* airlock daemon: request bodies (JSON) decoded into requests, every field
 * checked; strings are borrowed from the JSON document.  Unknown fields are
 * refused so a misspelt limit never silently falls back to a default.
 * fuzz/fuzz_api.c feeds these hostile bytes. */
#ifndef AL_DECODE_H
#define AL_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "airlock/run.h"
#include "airlock/volume.h"

#define DECODE_ARGS_MAX 4096
#define DECODE_PATHS_MAX 10000

struct run_request {
	struct al_run_opts o; /* project, init_path, author, id, cancel_fd: the caller's */
	const char **argv, **env, **secrets,
		**secret_files; /* NULL-terminated; "K=V" built in bufs */
	const char **allow;     /* network.allow, NULL-terminated (borrowed strings) */
	const char **integ;     /* integrations, NULL-terminated (borrowed strings) */
	char **bufs;            /* owned: the K=V strings (secret ones wiped on release) */
	size_t nbufs;
	bool wait;
	bool on_head;                 /* a replay's (decode_replay) */
	struct al_contract *contract; /* owned; o.contract points to it */
};
int decode_run(json_t *body, struct run_request *out, struct al_error *err);
/* A replay: {on_head, secrets: [{name, value}], wait}; the secrets as
 * "K=V" in out->secrets (their delivery is the original's); the rest of
 * out->o is the caller's. */
int decode_replay(json_t *body, struct run_request *out, struct al_error *err);
void run_request_release(struct run_request *r);

/* An apply: paths[i] is a path (its whole change; hunks NULL) or one file's
 * hunks ({"path": P, "hunks": [N, ...]}: nhunks >= 1, every N >= 1). */
#define DECODE_HUNKS_MAX (1u << 20) /* hunk numbers in one request */
struct apply_request {
	enum al_apply_mode mode;
	enum al_strategy strategy;
	struct al_apply_path *paths; /* owned array; path strings borrowed */
	size_t npaths;
	unsigned *hunks; /* owned: the numbers paths[i].hunks point into */
	const char *message;
};
int decode_apply(json_t *body, struct apply_request *out, struct al_error *err);
void apply_request_release(struct apply_request *r);

struct principal_request {
	const char *name;
	unsigned roles;
	const char **projects; /* owned array, borrowed strings */
	size_t nprojects;
};
int decode_principal(json_t *body, struct principal_request *out, struct al_error *err);
void principal_request_release(struct principal_request *r);

/* {"ttl": seconds} (absent or 0: no expiry) */
int decode_token(json_t *body, int64_t *ttl, struct al_error *err);
/* {"name": "..."} */
int decode_project(json_t *body, const char **name, struct al_error *err);

/* An integration: {name, base_url, header, secret, ca_pem?, keep_bodies?,
 * insecure?} (insecure true refused: the API's daemon is not a local home),
 * checked as al_integ_check does; strings borrowed from body. */
struct al_integ_spec;
int decode_integration(json_t *body, struct al_integ_spec *s, struct al_error *err);
/* {"secret": S, "header"?: H}: a new secret (checked by al_integ_rotate)
 * and maybe header (checked here); *header NULL when absent. */
int decode_integration_secret(json_t *body, const char **header, const char **secret,
			      struct al_error *err);
/* {"project": P} or {"principal": P}: exactly one (the other NULL). */
int decode_integration_grant(json_t *body, const char **project, const char **principal,
			     struct al_error *err);

/* Parse a body: an object, no duplicate keys. */
int decode_body(const char *p, size_t n, json_t **out, struct al_error *err);

#endif
