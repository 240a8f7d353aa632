/* airlock: the JSON form of every object, one place for the daemon's
 * answers and the CLI's --json (so a script reads the same document from
 * either).  docs/api.md describes each. */
#ifndef AL_VIEW_H
#define AL_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "airlock/error.h"
#include "airlock/oid.h"

struct al_store;
struct al_entry;
struct al_conflict;
struct al_commit_result;
struct al_project_info;
struct al_draft_info;
struct al_ledger_query;

json_t *view_id(const struct al_oid *id);
/* A JSON string from bytes that may not be UTF-8 (escaped as in messages). */
json_t *view_bytes(const char *s, size_t n);
/* {type, mode, size[, sha256][, target]}; NULL -> null */
json_t *view_entry(const struct al_entry *e, const char *target);
json_t *view_conflicts(const struct al_conflict *c, size_t n);
/* {head, seq, rebased, conflicts, merged} */
json_t *view_commit_result(const struct al_commit_result *res);
/* {"error": {code, message}}; a conflict adds head, paths and conflicts */
json_t *view_error(const struct al_error *err, const struct al_commit_result *conflict);

struct al_apply_path;
/* What an apply was asked: {draft, mode, strategy, paths, hunks} (hunks
 * empty until view_apply_result) */
json_t *view_apply(const char *draft, const char *mode, const char *strategy,
		   const struct al_apply_path *paths, size_t n);

struct al_import_result;
/* An image import: {files, bytes, skipped, id, name} */
json_t *view_image_import(const struct al_import_result *res, const char *name);

json_t *view_project(const struct al_project_info *p);
/* {id, state, base, head, created, project, group, applied, discarded,
 * partial, paths:[{path, outcome, hunks?}], run, marks, warnings}; st NULL:
 * without the outcomes and the run's marks */
json_t *view_draft(struct al_store *st, const struct al_draft_info *d);
/* An apply's answer completed: applied, discarded, partial, hunks (the
 * numbers taken per path), state, run, marks, warnings (out is returned) */
json_t *view_apply_result(struct al_store *st, const char *draft, json_t *out,
			  const struct al_commit_result *res);

/* Lists: append to arr. */
int view_projects(struct al_store *st, json_t *arr, struct al_error *err);
int view_log(struct al_store *st, const char *project, json_t *arr, struct al_error *err);
int view_drafts(struct al_store *st, const char *project, json_t *arr, struct al_error *err);
int view_images(struct al_store *st, json_t *arr, struct al_error *err);
int view_runs(struct al_store *st, const char *project, json_t *arr, struct al_error *err);
int view_ledger(struct al_store *st, const struct al_ledger_query *q, json_t *arr,
		struct al_error *err);

/* One object: *out is new. */
/* with_output: stdout.text and stderr.text, each its first text_max bytes
 * (then "text_truncated": true).  The daemon passes VIEW_TEXT_MAX. */
#define VIEW_TEXT_MAX ((size_t)1 << 20)
int view_run(struct al_store *st, const char *id, bool with_output, size_t text_max, json_t **out,
	     struct al_error *err);
int view_review(struct al_store *st, const char *draft, bool stat, json_t **out,
		struct al_error *err);
/* The review of one path of the draft (its diff and hunks); AL_ENOTFOUND if
 * the draft does not change it. */
int view_review_path(struct al_store *st, const char *draft, const char *path, json_t **out,
		     struct al_error *err);
int view_ledger_entry(struct al_store *st, uint64_t seq, json_t **out, struct al_error *err);
int view_checkpoint(struct al_store *st, json_t **out, struct al_error *err);
/* An entry's inclusion proof in the latest checkpoint, checked:
 * {entry (seq), size, leaf, root, proof, valid} (airlock audit prove). */
int view_inclusion(struct al_store *st, uint64_t seq, json_t **out, struct al_error *err);
/* A Merkle proof as an array of hex hashes. */
json_t *view_proof(uint8_t (*p)[AL_DIGEST_LEN], size_t n);

/* A run record (parsed) with stdout.text and stderr.text added. */
int view_run_output(struct al_store *st, json_t *rec, size_t text_max, struct al_error *err);

struct al_auth;
struct al_principal;
struct al_token_info;
/* {tenant, name, roles, created, projects} */
json_t *view_principal(struct al_auth *a, const struct al_principal *p);
/* {id, principal, created, expires, revoked}: never the token */
json_t *view_token(const struct al_token_info *t);

/* Where a contract's violation (a record's contract.violations[i]) is:
 * its path, pattern or stream ("" for the exit status). */
const char *contract_where(json_t *v);

#endif
