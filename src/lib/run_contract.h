/* libairlock: a run's contracts, checked after its changes are collected
 * and before they become its bundle and draft (run.c; contract.h). */
#ifndef AL_RUN_CONTRACT_H
#define AL_RUN_CONTRACT_H

#include <jansson.h>

#include "airlock/contract.h"
#include "airlock/oid.h"

struct al_store;

struct run_contracts {
	struct al_contract *project;       /* the project's default (owned), or NULL */
	const struct al_contract *request; /* the run request's (borrowed), or NULL */
	enum al_contract_action floor;     /* the policy's least action */
};

/* Load the project's default contract (before the sandbox starts: a
 * stored one that no longer parses is an error, nothing runs).  The
 * caller has just read the project (it is not looked up again). */
int al_run__contracts_load(struct al_store *st, const char *project,
			   const struct al_contract *request, uint8_t policy_floor,
			   struct run_contracts *rc, struct al_error *err);
void al_run__contracts_release(struct run_contracts *rc);
/* The project's stored contract (*out NULL: none), without looking the
 * project up (contract.c). */
int al_project__contract_load(struct al_store *st, const char *project, json_t **out,
			      struct al_error *err);

/* Check both contracts against base → *result, the command's exit code
 * and its kept output (fds of stdout and stderr).  *verdict: the record's
 * "contract" ({verdict, on_violation, violations (each with its source,
 * "project" or "request"), more, contracts, dropped}), or NULL when the run
 * has no contract.  With on_violation drop, *result becomes the base plus
 * only the writable changes and the dropped paths are listed.  *blocked:
 * violated with block_apply. */
int al_run__contracts_check(struct al_store *st, const struct run_contracts *rc,
			    const struct al_oid *base, struct al_oid *result, int exit_code,
			    int stdout_fd, int stderr_fd, json_t **verdict, bool *blocked,
			    struct al_error *err);

#endif
