/* airlock — projects, volumes, commits with merge strategies, drafts.
 *
 * A project has a live volume: a head (snapshot id) and its history.  A
 * commit declares the base it was made from; the head moves only by
 * compare-and-swap in one transaction, after every object of the new
 * snapshot is durable.  When the head is no longer the base, the strategy
 * decides: strict fails, rebase_if_disjoint replays the change when it
 * touches no path the head changed, conflict_copy commits what is disjoint
 * and lands the incoming version of each overlap beside ours, merge_lines
 * is rebase_if_disjoint that also merges text files both sides changed
 * when their hunks do not overlap (review.h, al_review_merge_lines).  A draft is a
 * volume forked from the live head; applying it commits into the live
 * volume; until then the live head does not move. */
#ifndef AIRLOCK_VOLUME_H
#define AIRLOCK_VOLUME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/error.h"
#include "airlock/oid.h"
#include "airlock/manifest.h"

struct al_store;

enum al_strategy {
	AL_STRICT = 1,
	AL_REBASE_IF_DISJOINT = 2,
	AL_CONFLICT_COPY = 3,
	AL_MERGE_LINES = 4,
};
const char *al_strategy_name(enum al_strategy s);
int al_strategy_parse(const char *s, enum al_strategy *out, struct al_error *err);

#define AL_NAME_MAX 64
/* Project names: [A-Za-z0-9][A-Za-z0-9._-]{0,63} */
int al_project_name_check(const char *name, struct al_error *err);

struct al_project_info {
	char name[AL_NAME_MAX + 1];
	int64_t volume;
	struct al_oid head;
	int64_t created;
	int64_t commits;
};

/* Create a project whose first commit is snapshot (NULL: the empty tree). */
int al_project_create(struct al_store *st, const char *name, const struct al_oid *snapshot,
		      const char *author, struct al_project_info *out, struct al_error *err);
int al_project_get(struct al_store *st, const char *name, struct al_project_info *out,
		   struct al_error *err);
typedef int (*al_project_fn)(void *ctx, const struct al_project_info *p, struct al_error *err);
int al_project_foreach(struct al_store *st, al_project_fn fn, void *ctx, struct al_error *err);

/* One overlap resolved (conflict_copy) or refused (strict, rebase). */
struct al_conflict {
	char *path;      /* the shallowest overlapping path */
	char *copy_path; /* where the incoming version landed (NULL: none) */
	bool has_base, has_theirs, has_ours;
	struct al_entry base, theirs, ours; /* names unset */
};

struct al_commit_opts {
	enum al_strategy strategy;
	const char *author;
	const char *message;
	const char *group; /* the unit of work's id in the ledger (NULL: a new one) */
};

struct al_commit_result {
	struct al_oid head; /* the new head; on AL_ECONFLICT the current head */
	int64_t seq;        /* the commit's number in its volume */
	bool rebased;       /* the head had moved; the change was replayed */
	struct al_conflict *conflicts;
	size_t nconflicts;
	char **merged; /* merge_lines: the files whose lines were merged, in path order */
	size_t nmerged;
	uint64_t applied, discarded; /* a draft's apply: its changes taken and left */
	uint64_t partial;            /* of the applied, those taken in part (hunks) */
};
void al_commit_result_release(struct al_commit_result *r);

/* Commit "base -> snapshot" into a project's live volume.  A commit whose
 * result is the head itself (an empty change, or one the head already has)
 * is refused with AL_ESTATE, "nothing to apply", and nothing is recorded. */
int al_project_commit(struct al_store *st, const char *project, const struct al_oid *base,
		      const struct al_oid *snapshot, const struct al_commit_opts *opts,
		      struct al_commit_result *res, struct al_error *err);

struct al_commit_info {
	int64_t seq;
	struct al_oid parent, base, result;
	const char *author, *message, *strategy, *kind, *draft;
	int64_t time;
	const struct al_conflict *conflicts;
	size_t nconflicts;
};
typedef int (*al_commit_fn)(void *ctx, const struct al_commit_info *c, struct al_error *err);
/* Commits of a project's live volume, oldest first. */
int al_project_log(struct al_store *st, const char *project, al_commit_fn fn, void *ctx,
		   struct al_error *err);

/* Drafts */
#define AL_DRAFT_ID_LEN 14
struct al_draft_info {
	char id[AL_DRAFT_ID_LEN + 1]; /* "d" + 13 hex */
	char project[AL_NAME_MAX + 1];
	struct al_oid base, head;
	char state[24]; /* AL_DRAFT_* (docs/architecture.md, "Draft states") */
	int64_t created;
	char group[17];              /* its unit of work in the ledger */
	char run[16];                /* the run that made it ("": none) */
	uint64_t applied, discarded; /* per-path outcomes of its decision */
	uint64_t partial;            /* of the applied, those taken in part (hunks) */
};
/* Draft states: open (undecided); applied (every change taken);
 * partially_applied (accept_selected left some: per path applied or
 * discarded); rejected (every change discarded); empty (a run that changed
 * nothing: closed when it was made); blocked (its run's contract was
 * violated with block_apply: it can only be rejected).  Only an open
 * draft can be applied. */
#define AL_DRAFT_OPEN "open"
#define AL_DRAFT_APPLIED "applied"
#define AL_DRAFT_PARTIAL "partially_applied"
#define AL_DRAFT_REJECTED "rejected"
#define AL_DRAFT_EMPTY "empty"
#define AL_DRAFT_BLOCKED "blocked"
/* Fork a draft from the project's head; with content, the draft's head is
 * that snapshot (one commit on the draft). */
int al_draft_create(struct al_store *st, const char *project, const struct al_oid *content,
		    const char *author, struct al_draft_info *out, struct al_error *err);
struct al_draft_opts {
	const struct al_oid *base;    /* the fork point (NULL: the live head now) */
	const struct al_oid *content; /* the draft's head (NULL: the base) */
	const char *author;
	const char *group; /* its unit of work (NULL: a new one) */
	bool close_empty;  /* content == base: the draft is made closed, "empty" */
	bool blocked;      /* made "blocked" (a contract's block_apply), unless empty */
};
int al_draft_create_opts(struct al_store *st, const char *project, const struct al_draft_opts *o,
			 struct al_draft_info *out, struct al_error *err);
int al_draft_get(struct al_store *st, const char *id, struct al_draft_info *out,
		 struct al_error *err);
typedef int (*al_draft_fn)(void *ctx, const struct al_draft_info *d, struct al_error *err);
int al_draft_foreach(struct al_store *st, const char *project, al_draft_fn fn, void *ctx,
		     struct al_error *err);
/* Commit to a draft's own volume (its base stays the fork point). */
int al_draft_commit(struct al_store *st, const char *id, const struct al_oid *base,
		    const struct al_oid *snapshot, const struct al_commit_opts *opts,
		    struct al_commit_result *res, struct al_error *err);
/* The per-path outcome ("applied", "partially_applied", "discarded") of a
 * decided draft's changes, in path order; nothing for an open or empty
 * draft. */
typedef int (*al_outcome_fn)(void *ctx, const char *path, const char *outcome,
			     struct al_error *err);
int al_draft_outcomes(struct al_store *st, const char *id, al_outcome_fn fn, void *ctx,
		      struct al_error *err);
/* The same with the hunks taken of a path accepted by hunks. */
struct al_path_outcome {
	const char *path;
	char op; /* A M D */
	const char *outcome;
	const unsigned *hunks; /* NULL: the path was decided whole */
	size_t nhunks;
};
typedef int (*al_path_outcome_fn)(void *ctx, const struct al_path_outcome *o, struct al_error *err);
int al_draft_path_outcomes(struct al_store *st, const char *id, al_path_outcome_fn fn, void *ctx,
			   struct al_error *err);

enum al_apply_mode { AL_ACCEPT_ALL = 1, AL_ACCEPT_SELECTED = 2, AL_REJECT_ALL = 3 };
/* Apply a draft to its project (one commit into the live volume, with the
 * caller's strategy), or reject it.  accept_selected takes paths: a
 * directory means everything under it; a path the draft does not change is
 * an error.  Only an open draft can be decided (AL_ESTATE otherwise); an
 * accept that changes nothing in the head is AL_ESTATE "nothing to apply".
 * The state and every change's outcome (res->applied, res->discarded) are
 * stored in the apply's transaction.  On any error nothing changes. */
int al_draft_apply(struct al_store *st, const char *id, enum al_apply_mode mode,
		   const char *const *paths, size_t npaths, const struct al_commit_opts *opts,
		   struct al_commit_result *res, struct al_error *err);

/* What accept_selected takes of one path: its whole change (hunks NULL:
 * everything at or under path, as al_draft_apply's paths), or only some
 * hunks of a file's change, numbered as al_review numbers them (from 1; any
 * order; repeats and the same path twice take the union).  Hunks can be
 * taken only of a text file the draft modifies (op M, a regular file on
 * both sides); the file that lands is the base's with those hunks applied,
 * in the base's mode.  A number the file lacks, hunks of any other change,
 * an empty list, or a path selected both whole and by hunks is AL_EINVAL.
 * The outcome of such a path is "partially_applied" when what lands
 * differs from the draft's version, else "applied"; either way its hunks
 * are recorded (al_draft_path_outcomes) and the ledger entry has them. */
struct al_apply_path {
	const char *path;
	const unsigned *hunks;
	size_t nhunks;
};
int al_draft_apply_sel(struct al_store *st, const char *id, enum al_apply_mode mode,
		       const struct al_apply_path *paths, size_t npaths,
		       const struct al_commit_opts *opts, struct al_commit_result *res,
		       struct al_error *err);

/* The conflict copy name for path (docs/formats.md), before uniqueness. */
int al_conflict_name(const char *path, const struct al_oid *change_id, char *out, size_t outsz);

#endif
