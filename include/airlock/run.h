/* airlock — runs: a command in a sandbox against a project, its changes
 * returned as a draft.
 *
 * A run forks from the project's head at its start: the image and that
 * snapshot are materialised once each (owned by the sandbox's host uid,
 * shared read-only by every run), the command runs in a sandbox
 * (sandbox.h), and after every process in it is dead its workspace's upper
 * layer becomes the run's snapshot (overlay.h), then a DeltaBundle
 * (delta.h), which is read back, verified and committed into a new draft
 * whose base is that head.  The live head does not move.  The run's record
 * (argv, environment without secret values, policy, limits, status,
 * stdout/stderr blobs, resource use, bundle, draft) and its ledger entry
 * are written in the draft's transaction. */
#ifndef AIRLOCK_RUN_H
#define AIRLOCK_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "airlock/error.h"
#include "airlock/sandbox.h"
#include "airlock/volume.h"

struct al_policy; /* policy.h */

struct al_store;
struct al_contract;

#define AL_RUN_ID_LEN 14 /* "r" + 13 hex */
#define AL_SANDBOX_UID \
	1879048192u /* 0x70000000: the sandbox's root on the host, when airlock is root */

struct al_run_opts {
	const char *project;
	const char *image;               /* name or sha256:id */
	const char *const *argv;         /* the command, NULL-terminated */
	const char *const *env;          /* "K=V" over the defaults; NULL-terminated or NULL */
	const char *const *secrets;      /* "K=V": in the environment, the value never stored */
	const char *const *secret_files; /* "K=V": the file /run/airlock/secrets/K, this run only */
	const char *id;                  /* the run's id ("r" + 13 hex); NULL: a new one */
	int cancel_fd; /* > 0: once readable, the run is killed and recorded cancelled */
	enum al_network network;
	/* network egress: the allow entries (net.h), NULL-terminated or NULL;
	 * each must be covered by the policy's egress_allow (AL_EDENIED) */
	const char *const *egress_allow;
	/* integrations (integ.h) the run reaches at $AIRLOCK_INTEGRATIONS,
	 * NULL-terminated or NULL: each granted to the project or the
	 * principal (AL_EDENIED); their calls count against the connections
	 * and egress_bytes limits */
	const char *const *integrations;
	/* what the requester asks for: 0 is the policy's default, above its
	 * ceiling is AL_ELIMIT (policy.h) */
	struct al_limits limits;
	const char *author;
	const char *principal;       /* the daemon's principal that started it (NULL: local) */
	const char *group;           /* NULL: a new one, shared by the run's draft */
	const char *init_path;       /* airlock-init */
	uint32_t host_uid, host_gid; /* 0: AL_SANDBOX_UID as root, else our own ids */
	al_sandbox_output_fn output; /* live output, within the output limit; may be NULL */
	void *output_ctx;
	/* The heavy phases (materialising the layers; turning the changes
	 * into a bundle and a draft) run between throttle(ctx, true) and
	 * throttle(ctx, false), so a daemon can bound how many run at once
	 * (cores, memory); the sandbox itself runs outside.  May be NULL. */
	void (*throttle)(void *ctx, bool enter);
	void *throttle_ctx;
	/* where the run is, as it moves: "materialise" (the layers),
	 * "sandbox" (the command), "output", "collect" (the changes),
	 * "contract", "record"; for progress (the CLI). May be NULL. */
	void (*phase)(void *ctx, const char *phase);
	void *phase_ctx;
	/* the request's contract (contract.h), or NULL; the project's default
	 * contract applies as well, and the policy's least action */
	const struct al_contract *contract;
	/* the sandbox backend asked for ("ns", "vm"), or NULL: the policy's
	 * default; one the policy does not allow is AL_EDENIED (policy.h) */
	const char *backend;
	const char *guest_dir; /* the "vm" backend's guest (sandbox.h) */
	/* the policy's runs in flight (airlock serve), held across nodes with
	 * the metadata on PostgreSQL: the attempt begins only if fewer of the
	 * tenant's (of the principal's) are running, counted in the database
	 * under the tenant's write lock; else AL_EUNAVAIL, nothing recorded.
	 * 0: not checked here (the embedded home: one node counts its own). */
	unsigned runs_per_tenant, runs_per_principal;
	/* the tenant's effective policy as the caller looked it up to accept
	 * the run (airlock serve's handler: the run is held to what it was
	 * accepted under), or NULL: looked up here */
	const struct al_policy *policy;
	/* the image's id as the caller resolved o->image to accept the run
	 * (airlock serve's handler, for the principal), used as is; or NULL:
	 * o->image resolved here */
	const struct al_oid *image_id;
};

struct al_run_info {
	char id[AL_RUN_ID_LEN + 1];
	char draft[AL_DRAFT_ID_LEN + 1];
	char group[17];
	char project[AL_NAME_MAX + 1];
	int exit_code;
	bool timed_out, oom, cancelled;
	uint64_t added, modified, deleted;
	int64_t created;
	char *record; /* the whole record, JSON (docs/formats.md); malloc'ed */
};
void al_run_info_release(struct al_run_info *r);

/* Is id a well-formed run id ("r" + 13 lowercase hex)? */
bool al_run_id_valid(const char *id);

/* Run.  The sandbox's own failures are AL_ESANDBOX and record nothing. */
int al_run(struct al_store *st, const struct al_run_opts *o, struct al_run_info *out,
	   struct al_error *err);

int al_run_get(struct al_store *st, const char *id, struct al_run_info *out, struct al_error *err);

/* Attempts left "running" whose process is gone, each recorded as
 * "failed: interrupted" with its ledger entry, once (an attempt already
 * recorded by another node is left alone): on the embedded home those
 * whose lock (tenants/<t>/runs/<id>.lock) no process holds; on PostgreSQL
 * also those of another node whose heartbeat is older than the lease
 * (architecture.md "Several nodes").  A run does this in its tenant
 * before it starts.  The number recorded, or an error. */
int al_run_recover(struct al_store *st, struct al_error *err);

/* Ask the node running attempt id (in flight on another node, metadata on
 * PostgreSQL) to cancel it: that node finds the request within a beat and
 * cancels it as its own (al_node_serve's fn).  AL_ESTATE when the attempt
 * is not running (ended), or on the embedded home (no other node). */
int al_run_cancel_request(struct al_store *st, const char *id, struct al_error *err);

/* airlock serve on PostgreSQL: this process beats as a node from now on;
 * each beat hands fn(ctx, tenant, id) the cancels asked through other
 * nodes of its runs in flight (again at each beat until the run ends),
 * then recovers, in every tenant, the attempts of nodes whose heartbeat is
 * older than the lease.  A no-op on the embedded home.  After
 * al_node_serve_stop, fn is never called again. */
typedef void (*al_node_cancel_fn)(void *ctx, const char *tenant, const char *id);
int al_node_serve(const char *home, al_node_cancel_fn fn, void *ctx, struct al_error *err);
void al_node_serve_stop(void);
typedef int (*al_run_fn)(void *ctx, const struct al_run_info *r, struct al_error *err);
/* A project's runs, oldest first. */
int al_run_foreach(struct al_store *st, const char *project, al_run_fn fn, void *ctx,
		   struct al_error *err);

/* Are the inputs of run id still stored (its base snapshot and its image,
 * every node and blob)?  0 if so; AL_ENOTFOUND saying which input the
 * collector removed (gc.h) otherwise.  Replay checks this first. */
int al_run_inputs_present(struct al_store *st, const char *id, struct al_error *err);

#endif
