/* airlock — run policy: what a run gets for a limit it does not set, and
 * the most it may ask for.
 *
 * Two levels.  The deployment's, set by the operator on the home
 * (`airlock admin policy set`), starts from built-in values; each
 * tenant's, set by its admin (`PUT /api/policy`, or the operator with
 * --tenant), may only be stricter: its ceilings are at most the
 * deployment's.  A request may only lower a limit: a limit it leaves out
 * is the default, a limit above the ceiling is refused (AL_ELIMIT, naming
 * the limit and the ceiling), and no limit is ever "none".
 *
 * A limit this host cannot enforce (no cgroup controller, or not
 * delegated to airlock) refuses the run, unless the operator opted into
 * best effort for the deployment; the run's record says which limits were
 * enforced. */
#ifndef AIRLOCK_POLICY_H
#define AIRLOCK_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "airlock/error.h"
#include "airlock/net.h"
#include "airlock/sandbox.h"

struct al_store;

struct al_policy {
	struct al_limits dflt;    /* what a run gets for a limit it leaves out */
	struct al_limits max;     /* the most a run may ask for */
	uint32_t runs_per_tenant; /* runs in flight at once (the daemon) */
	uint32_t runs_per_principal;
	bool best_effort; /* the deployment's only: skip a limit no cgroup can enforce */
	/* the least a contract's violation does: 1 + enum al_contract_action
	 * (0: not set, i.e. record); a run's contract may ask for more, never
	 * less, and a tenant's may only be stricter than the deployment's */
	uint8_t contract_floor;
	/* the sandbox backend of a run that names none: AL_BACKEND_NS or
	 * AL_BACKEND_VM (0: not set) */
	uint8_t backend;
	/* the backends a run may ask for, a mask of AL_BACKEND_* bits (0: not
	 * set, i.e. every one); a tenant's may only be a subset of the
	 * deployment's, and the default must be among them */
	uint8_t backends;
	/* egress: the allow entries (net.h) a run may ask for, each covered
	 * by one of these; egress_set says the level sets the list (set and
	 * empty: no destination at all, the built-in value).  A tenant's
	 * entries must each be covered by the deployment's. */
	bool egress_set;
	uint8_t negress;
	char egress[AL_NET_ALLOW_MAX][AL_NET_ENTRY_MAX];
};
#define AL_BACKEND_NS 1u
#define AL_BACKEND_VM 2u
/* "ns" -> AL_BACKEND_NS, "vm" -> AL_BACKEND_VM, else 0; and back */
unsigned al_policy_backend_bit(const char *name);
const char *al_policy_backend_name(unsigned bit);
/* The backend a run gets (want: the request's, or NULL for the default):
 * its name, or AL_EDENIED naming the allowed ones. */
int al_policy_backend(const struct al_policy *p, const char *want, const char **out,
		      struct al_error *err);
/* Does the policy let a run allow these entries (NULL-terminated, or
 * NULL)?  AL_EINVAL for a malformed one, AL_EDENIED naming the first the
 * policy's egress_allow does not cover. */
int al_policy_egress(const struct al_policy *p, const char *const *allow, struct al_error *err);
/* In a stored policy a field of 0 is "not set here": the level above
 * (the tenant's falls back to the deployment's, the deployment's to the
 * built-in values) decides it. */

/* The built-in values (docs/operations.md). */
void al_policy_builtin(struct al_policy *p);

/* The stored policy of the deployment (tenant NULL) or of one tenant, as
 * set: unset fields 0. */
int al_policy_get(const char *home, struct al_store *tenant, struct al_policy *out,
		  struct al_error *err);

/* Store the policy of the deployment (tenant NULL) or of a tenant: every
 * field of p that is not 0 replaces the stored one (best_effort: with
 * set_best_effort).  A tenant's ceilings above the deployment's, a
 * default above its ceiling, or best effort for a tenant are AL_ELIMIT /
 * AL_EINVAL and change nothing.  A tenant's change is a `policy` ledger
 * entry (actor, before, after) in the transaction that stores it. */
int al_policy_set(const char *home, struct al_store *tenant, const struct al_policy *p,
		  bool set_best_effort, bool best_effort, const char *actor, struct al_error *err);

/* The policy that applies to runs of the tenant: built-in, then the
 * deployment's, then the tenant's, every field set. */
int al_policy_effective(struct al_store *tenant, struct al_policy *out, struct al_error *err);

/* The limits of one run: each field of req that is 0 takes the policy's
 * default; one above the ceiling is AL_ELIMIT ("memory 32G is above the
 * ceiling 8G"). */
int al_policy_limits(const struct al_policy *p, const struct al_limits *req, struct al_limits *out,
		     struct al_error *err);

/* JSON (docs/api.md "Policy"): {"defaults":{...},"ceilings":{...},
 * "runs_per_tenant":N,"runs_per_principal":N,"best_effort_limits":B,
 * "contract_on_violation":"record"|"drop"|"block_apply",
 * "backend":"ns"|"vm","backends":["ns","vm"],"egress_allow":[...]}, the
 * limits named as in a run request (memory, pids, cpus, timeout in
 * seconds, output_limit, disk_limit, files).  format: malloc'ed text. */
char *al_policy_format(const struct al_policy *p);
/* parse: unknown fields, negative or fractional counts are AL_EINVAL;
 * fields left out are 0 (not set).  *has_best_effort says whether
 * best_effort_limits was given. */
int al_policy_parse(const char *text, size_t n, struct al_policy *out, bool *has_best_effort,
		    struct al_error *err);

#endif
