/* airlock: run contracts (docs/formats.md, "Contracts").  What a run may
 * change (writable), must and must not change, what its outputs must be
 * (JSON valid against a JSON Schema, or text matching a regular
 * expression) and its exit status; checked against the run's changes and
 * the files it produced; the verdict is JSON for the record and the
 * ledger.  Patterns are gitignore-style globs (contract.c says which
 * parts of gitignore's syntax). */
#ifndef AIRLOCK_CONTRACT_H
#define AIRLOCK_CONTRACT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "airlock/error.h"
#include "airlock/manifest.h"

struct al_contract;

/* What a violation does (the stricter of the contract's and the policy's,
 * in this order). */
enum al_contract_action {
	AL_CONTRACT_RECORD,      /* shown to the reviewer; apply stays possible */
	AL_CONTRACT_DROP,        /* changes outside writable are not kept */
	AL_CONTRACT_BLOCK_APPLY, /* apply refuses with the violations */
};
const char *al_contract_action_name(enum al_contract_action a);
int al_contract_action_parse(const char *s, enum al_contract_action *out);

/* Parse and check a contract: every glob, schema and expression compiled
 * now, so that a bad one is refused (AL_EINVAL naming the field) before a
 * run starts.  Caps: AL_CONTRACT_MAX bytes of JSON text. */
#define AL_CONTRACT_MAX (1u << 20)
int al_contract_parse(const json_t *j, struct al_contract **out, struct al_error *err);
int al_contract_parse_text(const char *text, size_t len, struct al_contract **out,
			   struct al_error *err);
void al_contract_free(struct al_contract *c);
/* The contract as given (validated), for the record; borrowed. */
const json_t *al_contract_json(const struct al_contract *c);
enum al_contract_action al_contract_action(const struct al_contract *c);

/* May the run change path (a file, link or directory path)?  Always true
 * when the contract has no writable list. */
bool al_contract_writable(const struct al_contract *c, const char *path);

/* The bytes of an output: a file of the run's result (stream AL_OUT_FILE,
 * path) or its stdout / stderr.  AL_ENOTFOUND when the file is missing or
 * not a regular file; AL_ELIMIT past max bytes.  *buf is malloc'ed with
 * one spare byte after *len (al_cas_get's allocation). */
enum al_output_stream { AL_OUT_FILE, AL_OUT_STDOUT, AL_OUT_STDERR };
typedef int (*al_contract_read_fn)(void *ctx, enum al_output_stream stream, const char *path,
				   size_t max, char **buf, size_t *len, struct al_error *err);

struct al_contract_input {
	const struct al_changes *changes; /* base → the run's result */
	int exit_code;
	al_contract_read_fn read;
	void *ctx;
};

/* Check c: *verdict = {"verdict": "satisfied"|"violated", "on_violation",
 * "violations": [{kind, path|stream, …}…], "more": N}; only the outputs'
 * files are read. */
int al_contract_check(const struct al_contract *c, const struct al_contract_input *in,
		      json_t **verdict, struct al_error *err);

/* A project's default contract: every run on the project is checked
 * against it as well as against its own (a request cannot weaken it).
 * get: *out NULL when the project has none.  set: contract NULL removes
 * it; a bad contract is AL_EINVAL and changes nothing; the change is a
 * `project_contract` ledger entry (actor, before, after) in its
 * transaction.  Authors and admins set it (the front-ends check). */
struct al_store;
int al_project_contract_get(struct al_store *st, const char *project, json_t **out,
			    struct al_error *err);
int al_project_contract_set(struct al_store *st, const char *project, const json_t *contract,
			    const char *actor, struct al_error *err);

#endif
