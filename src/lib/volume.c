/* volume: projects, commits by compare-and-swap, merge strategies, drafts
 * (include/airlock/volume.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "airlock/review.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "cas_private.h"
#include "db.h"
#include "group.h"
#include "ledger_private.h"
#include "manifest_private.h"
#include "store_private.h"
#include "util.h"
#include "volume_private.h"

static const char *strategy_names[] = { NULL, "strict", "rebase_if_disjoint", "conflict_copy",
					"merge_lines" };

const char *al_strategy_name(enum al_strategy s)
{
	return s >= AL_STRICT && s <= AL_MERGE_LINES ? strategy_names[s] : "?";
}

int al_strategy_parse(const char *s, enum al_strategy *out, struct al_error *err)
{
	for (int i = AL_STRICT; i <= AL_MERGE_LINES; i++)
		if (strcmp(s, strategy_names[i]) == 0) {
			*out = i;
			return 0;
		}
	return al_fail(
		err, AL_EINVAL, 0,
		"unknown strategy '%.40s' (strict, rebase_if_disjoint, conflict_copy, merge_lines)",
		s);
}

int al_project_name_check(const char *name, struct al_error *err)
{
	size_t n = strlen(name);
	bool ok = n >= 1 && n <= AL_NAME_MAX;
	for (size_t i = 0; ok && i < n; i++) {
		char c = name[i];
		bool alnum =
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		ok = alnum || (i > 0 && (c == '.' || c == '_' || c == '-'));
	}
	if (!ok) {
		char q[100];
		al_quote(name, strnlen(name, 80), q, sizeof(q));
		return al_fail(
			err, AL_EINVAL, 0,
			"invalid project name '%s' (expected [A-Za-z0-9][A-Za-z0-9._-]{0,63})", q);
	}
	return 0;
}

void al_commit_result_release(struct al_commit_result *r)
{
	for (size_t i = 0; i < r->nconflicts; i++) {
		free(r->conflicts[i].path);
		free(r->conflicts[i].copy_path);
	}
	free(r->conflicts);
	r->conflicts = NULL;
	r->nconflicts = 0;
	for (size_t i = 0; i < r->nmerged; i++)
		free(r->merged[i]);
	free(r->merged);
	r->merged = NULL;
	r->nmerged = 0;
}

/* ---- the empty tree ------------------------------------------------------- */

static int empty_tree(struct al_cas *cas, struct al_oid *out, struct al_error *err)
{
	uint8_t *enc = NULL;
	size_t len = 0;
	int r = al_node_encode(NULL, 0, &enc, &len, err);
	if (r < 0)
		return r;
	if ((r = al_cas_begin(cas, err)) == 0) {
		r = al_cas_put(cas, enc, len, out, err);
		r = r < 0 ? (al_cas_abort(cas), r) : al_cas_commit(cas, err);
	}
	free(enc);
	return r;
}

/* ---- volumes in meta.db -------------------------------------------------- */

struct vol {
	int64_t id, project, seq;
	struct al_oid head, base;
	bool has_base;
	char kind[8], state[24], public_id[AL_DRAFT_ID_LEN + 1], project_name[AL_NAME_MAX + 1];
	char group[17], run[16];
	int64_t applied, discarded, partial, created;
};

/* A statement's failure, with what was being done (the seam filled err);
 * a statement that answered other than expected is an I/O failure. */
static int db_fail(struct al_error *err, const char *what)
{
	if (err && err->code < 0)
		return al_error_prefix(err, "%s: ", what);
	return al_fail(err, AL_EIO, 0, "%s: unexpected answer from the database", what);
}

/* The id an INSERT ... RETURNING id gave, read from its one row; the
 * statement is then ended (its insert is whole from the first step).
 * Left running until the commit (which resets it: s_commit), it kept its
 * own statement journal open, and every later statement of the
 * transaction wrote there the pages it changed, to undo this one alone:
 * past SQLite's 64 KiB in memory the journal spilled to a new file in
 * /var/tmp, written and removed in every run's draft. */
static int64_t returned_id(struct al_db_stmt *ins)
{
	int64_t id = al_db_column_int64(ins, 0);
	al_db_reset(ins);
	return id;
}

static int get_blob32(struct al_db_stmt *st, int col, struct al_oid *out)
{
	if (al_db_column_bytes(st, col) != AL_OID_LEN)
		return -1;
	memcpy(out->b, al_db_column_blob(st, col), AL_OID_LEN);
	return 0;
}

static void copy_text(char *dst, size_t n, struct al_db_stmt *st, int col)
{
	const char *t = al_db_column_text(st, col);
	snprintf(dst, n, "%s", t ? (const char *)t : "");
}

#define VOL_COLS                                                                                \
	"v.id, v.project, v.seq, v.head, v.base, v.kind, v.state, v.public_id, p.name, v.grp, " \
	"(SELECT r.id FROM runs r WHERE r.draft = v.public_id LIMIT 1), "                       \
	"(SELECT count(*) FROM draft_paths dp WHERE dp.volume = v.id AND dp.outcome IN "        \
	"('applied', 'partially_applied')), "                                                   \
	"(SELECT count(*) FROM draft_paths dp WHERE dp.volume = v.id AND dp.outcome = "         \
	"'discarded'), "                                                                        \
	"(SELECT count(*) FROM draft_paths dp WHERE dp.volume = v.id AND dp.outcome = "         \
	"'partially_applied'), v.created"

static int read_vol(struct al_db_stmt *st, struct vol *v, struct al_error *err)
{
	int rc = al_db_step(st, err);
	if (rc == AL_DB_DONE)
		return AL_ENOTFOUND;
	if (rc != AL_DB_ROW)
		return db_fail(err, "volumes");
	memset(v, 0, sizeof(*v));
	v->id = al_db_column_int64(st, 0);
	v->project = al_db_column_int64(st, 1);
	v->seq = al_db_column_int64(st, 2);
	if (get_blob32(st, 3, &v->head) < 0)
		return al_fail(err, AL_ECORRUPT, 0, "volume %lld has a malformed head",
			       (long long)v->id);
	v->has_base = get_blob32(st, 4, &v->base) == 0;
	copy_text(v->kind, sizeof(v->kind), st, 5);
	copy_text(v->state, sizeof(v->state), st, 6);
	copy_text(v->public_id, sizeof(v->public_id), st, 7);
	copy_text(v->project_name, sizeof(v->project_name), st, 8);
	copy_text(v->group, sizeof(v->group), st, 9);
	copy_text(v->run, sizeof(v->run), st, 10);
	v->applied = al_db_column_int64(st, 11);
	v->discarded = al_db_column_int64(st, 12);
	v->partial = al_db_column_int64(st, 13);
	v->created = al_db_column_int64(st, 14);
	return 0;
}

/* ---- the ledger: one entry per action, in the action's transaction ---------- */

static json_t *jid(const struct al_oid *d)
{
	char s[AL_OID_STRLEN + 1];
	al_oid_fmt(d, s);
	return json_string(s);
}

static json_t *jentry(bool has, const struct al_entry *e)
{
	if (!has)
		return json_null();
	char mode[8];
	snprintf(mode, sizeof(mode), "%04o", e->mode);
	json_t *o = json_pack("{s:s,s:s,s:I}", "type", al_entry_type_name(e->type), "mode", mode,
			      "size", (json_int_t)e->size);
	json_object_set_new(o, "sha256", jid(&e->digest));
	return o;
}

/* rec->data is consumed (unlike al_ledger__append's) */
static int log_action(struct al_store *st, struct al_db *db, const struct al_ledger_rec *rec,
		      uint64_t *seq, struct al_error *err)
{
	if (!rec->data)
		return al_fail(err, AL_ENOMEM, ENOMEM, "ledger");
	int r = al_ledger__append_db(st, db, rec, seq, err);
	json_decref(rec->data);
	return r;
}

/* A commit into a volume as commit_locked() takes it, and as its refusal
 * is recorded: base -> incoming, and what names it. */
struct commit_req {
	const struct al_oid *base, *incoming;
	const struct al_commit_opts *opts; /* NULL: strict, no author, no message */
	const char *kind;                  /* of the commit row and the ledger entry */
	const char *draft;                 /* the draft's public id, or NULL */
	const char *group;
	json_t *extra; /* more fields of the ledger entry, or NULL; borrowed */
	/* base→incoming as the caller computed it (an apply), or NULL; with
	 * keep, only the changes keep[i] marks.  Counts the result's files
	 * without another diff (record_snapshot). */
	const struct al_changes *changes;
	const bool *keep;
	struct precomputed *pre; /* what was computed before the lock, or NULL */
};

/* What a commit computes before it takes meta.db's write lock, because it
 * does not depend on the head: that base and incoming are complete trees,
 * and the changes base→incoming when there are at most PRE_CHANGES_MAX (a
 * rebase merges them; a commit onto its base counts its result's files
 * from them).  Under the lock this work held every other committer back.
 * Read with the store's gc.lock pin taken first, so nothing found present
 * can be swept before the head names it (as for an object batch's dedup;
 * docs/architecture.md, "Garbage collection").  Only an optimisation:
 * whatever is missing here (an error, a longer list) commit_locked
 * computes under the lock as before, so errors and their order are
 * unchanged, and a long list is never kept for a commit onto its base
 * (counted by a diff, as before). */
struct precomputed {
	bool checked;    /* base and incoming are complete trees */
	bool has_theirs; /* theirs holds base→incoming */
	struct al_changes theirs;
};

#define PRE_CHANGES_MAX 4096

static void precompute(struct al_store *st, const struct al_oid *base,
		       const struct al_oid *incoming, struct precomputed *pc)
{
	struct al_cas *cas = al_store_cas(st);
	struct al_error e2 = { 0 };
	memset(pc, 0, sizeof(*pc));
	if (al_cas__pin(cas, &e2) < 0 || al_manifest_stat(cas, incoming, NULL, NULL, &e2) < 0 ||
	    al_manifest_stat(cas, base, NULL, NULL, &e2) < 0)
		return;
	pc->checked = true;
	if (al_manifest__changes_max(cas, base, incoming, PRE_CHANGES_MAX, &pc->theirs, &e2) == 0)
		pc->has_theirs = true;
}

static void precomputed_release(struct precomputed *pc)
{
	if (pc->has_theirs)
		al_changes_release(&pc->theirs);
	pc->has_theirs = false;
}

static const char *group_of(const struct al_commit_opts *o, char buf[17])
{
	if (o && o->group && *o->group)
		return o->group;
	al_ledger__new_group(buf);
	return buf;
}

/* The refusal itself is an action, recorded in the current transaction
 * (a group commit's, where the refused request's savepoint rolled back). */
static int refusal_entry(struct al_store *st, struct al_db *db, const struct commit_req *q,
			 const char *project, const struct al_commit_result *res,
			 struct al_error *err)
{
	const struct al_oid *base = q->base, *incoming = q->incoming;
	const struct al_commit_opts *o = q->opts;
	json_t *paths = json_array();
	for (size_t i = 0; i < res->nconflicts; i++)
		json_array_append_new(paths, json_string(res->conflicts[i].path));
	json_t *d =
		json_pack("{s:s,s:s,s:o,s:o,s:o,s:o}", "outcome", "refused", "strategy",
			  al_strategy_name(o ? o->strategy : AL_STRICT), "head", jid(&res->head),
			  "base", jid(base), "incoming", jid(incoming), "paths", paths);
	if (d && q->draft)
		json_object_set_new(d, "draft", json_string(q->draft));
	return log_action(st, db,
			  &(struct al_ledger_rec){ .kind = "conflict",
						   .group = q->group,
						   .project = project,
						   .actor = o ? o->author : NULL,
						   .data = d },
			  NULL, err);
}

/* ... or in its own transaction once the refused one has rolled back. */
static void log_refusal(struct al_store *st, struct al_db *db, const struct commit_req *q,
			const char *project, const struct al_commit_result *res)
{
	struct al_db_txn txn;
	if (al_db_begin(db, AL_DB_WRITE, &txn, NULL) < 0)
		return;
	struct al_error e2 = { 0 };
	int r = refusal_entry(st, db, q, project, res, &e2);
	al_ledger__commit(st, &txn, r, &e2);
}

static int find_volume(struct al_db *db, const char *sql, const char *key, const char *what,
		       struct vol *v, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *st = NULL;
	int r = al_db_prepare(db, sql, &st, err);
	if (r < 0)
		return r;
	al_db_bind_text(st, 1, key, -1);
	r = read_vol(st, v, err);
	if (r == AL_ENOTFOUND) {
		char q[100];
		al_quote(key, strnlen(key, 80), q, sizeof(q));
		return al_fail(err, AL_ENOTFOUND, 0, "no %s %s", what, q);
	}
	return r;
}

static int live_volume(struct al_db *db, const char *project, struct vol *v, struct al_error *err)
{
	return find_volume(db,
			   "SELECT " VOL_COLS
			   " FROM projects p JOIN volumes v ON v.id = p.volume WHERE p.name = ?1",
			   project, "project", v, err);
}

/* A draft by its id, or by the id of the run that made it. */
static int draft_volume(struct al_db *db, const char *id, struct vol *v, struct al_error *err)
{
	if (id[0] == 'r')
		return find_volume(
			db,
			"SELECT " VOL_COLS " FROM runs r JOIN volumes v ON v.public_id = r.draft "
			"JOIN projects p ON p.id = v.project WHERE r.id = ?1 AND v.kind = 'draft'",
			id, "run", v, err);
	return find_volume(db,
			   "SELECT " VOL_COLS " FROM volumes v JOIN projects p ON p.id = v.project "
			   "WHERE v.public_id = ?1 AND v.kind = 'draft'",
			   id, "draft", v, err);
}

static int count_file(void *ctx, const char *path, const struct al_entry *e, struct al_error *err)
{
	(void)path;
	(void)err;
	int64_t *c = ctx;
	if (e->type == AL_T_FILE) {
		c[0]++;
		c[1] += (int64_t)e->size;
	}
	return 0;
}

static int count_change(void *ctx, const struct al_change *ch, struct al_error *err)
{
	(void)err;
	int64_t *c = ctx;
	if (ch->old && ch->old->type == AL_T_FILE) {
		c[0]--;
		c[1] -= (int64_t)ch->old->size;
	}
	if (ch->new && ch->new->type == AL_T_FILE) {
		c[0]++;
		c[1] += (int64_t)ch->new->size;
	}
	return 0;
}

/* The changes parent→result a commit already has (or none), for counting. */
struct from_parent {
	const struct al_changes *changes; /* NULL: diff parent and result */
	const bool *keep;                 /* NULL: all of them */
};

/* A commit's result in the snapshots table with its regular files and their
 * bytes, as an import records them: its parent's counts plus the change
 * when the parent's row has them (from fp's list when the commit has it,
 * else a diff, which reads only differing subtrees), else a walk.  A row an
 * earlier version left at 0 files 0 bytes is filled in. */
static int record_snapshot(struct al_db *db, struct al_cas *cas, const struct al_oid *parent,
			   const struct al_oid *id, const char *source,
			   const struct from_parent *fp, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL, *st = NULL;
	int r = al_db_prepare(db,
			      "SELECT id, files, bytes FROM snapshots WHERE id IN (?1, ?2) AND "
			      "(files > 0 OR bytes > 0)",
			      &q, err);
	if (r < 0)
		return r;
	al_db_bind_blob(q, 1, id->b, AL_OID_LEN);
	al_db_bind_blob(q, 2, parent->b, AL_OID_LEN);
	int64_t c[2] = { 0, 0 };
	bool have_parent = false;
	int rc;
	while ((rc = al_db_step(q, err)) == AL_DB_ROW) {
		if (memcmp(al_db_column_blob(q, 0), id->b, AL_OID_LEN) == 0)
			return 0; /* recorded, with its counts */
		c[0] = al_db_column_int64(q, 1);
		c[1] = al_db_column_int64(q, 2);
		have_parent = true;
	}
	if (rc != AL_DB_DONE)
		return db_fail(err, "record snapshot");
	if (have_parent && fp->changes) {
		for (size_t i = 0; i < fp->changes->n; i++) {
			const struct al_change_rec *x = &fp->changes->v[i];
			if (!fp->keep || fp->keep[i])
				count_change(
					c,
					&(struct al_change){ .old = x->has_old ? &x->old : NULL,
							     .new = x->has_new ? &x->new : NULL },
					err);
		}
	} else if (have_parent)
		r = al_manifest_diff(cas, parent, id, count_change, c, err);
	if (!have_parent || r < 0 || c[0] < 0 || c[1] < 0) {
		c[0] = c[1] = 0;
		if ((r = al_manifest_walk(cas, id, count_file, c, err)) < 0)
			return r;
	}
	/* a row left at 0 files 0 bytes is filled in, else one is added: an
	 * UPDATE, then an INSERT if it changed nothing, in the caller's write
	 * transaction (an upsert's conflict target would differ per engine:
	 * PostgreSQL's key begins with the tenant) */
	_cleanup_db_stmt_ struct al_db_stmt *up = NULL;
	if ((r = al_db_prepare(db, "UPDATE snapshots SET files = ?2, bytes = ?3 WHERE id = ?1", &up,
			       err)) < 0)
		return r;
	al_db_bind_blob(up, 1, id->b, AL_OID_LEN);
	al_db_bind_int64(up, 2, c[0]);
	al_db_bind_int64(up, 3, c[1]);
	if (al_db_step(up, err) != AL_DB_DONE)
		return db_fail(err, "record snapshot");
	if (al_db_changes(db) > 0)
		return 0;
	if ((r = al_db_prepare(db,
			       "INSERT INTO snapshots(id, created, files, bytes, source, seq) "
			       "VALUES (?1, ?2, ?3, ?4, ?5, " AL_SNAPSHOT_SEQ ")",
			       &st, err)) < 0)
		return r;
	al_db_bind_blob(st, 1, id->b, AL_OID_LEN);
	al_db_bind_int64(st, 2, al_wall_s());
	al_db_bind_int64(st, 3, c[0]);
	al_db_bind_int64(st, 4, c[1]);
	al_db_bind_text(st, 5, source, -1);
	return al_db_step(st, err) == AL_DB_DONE ? 0 : db_fail(err, "record snapshot");
}

static void bind_entry(struct al_db_stmt *st, int col, bool has, const struct al_entry *e)
{
	if (!has) {
		for (int i = 0; i < 4; i++)
			al_db_bind_null(st, col + i);
		return;
	}
	al_db_bind_int64(st, col, e->type);
	al_db_bind_int64(st, col + 1, (int)e->mode);
	al_db_bind_int64(st, col + 2, (int64_t)e->size);
	al_db_bind_blob(st, col + 3, e->digest.b, AL_OID_LEN);
}

/* Move a volume's head (compare-and-swap on the head read) and record the
 * commit, in the caller's transaction. */
static int record_commit(struct al_db *db, struct al_cas *cas, struct vol *v,
			 const struct commit_req *q, const struct al_oid *result,
			 const struct from_parent *fp, struct al_commit_result *res,
			 struct al_error *err)
{
	const struct al_oid *base = q->base;
	const struct al_commit_opts *o = q->opts;
	const char *kind = q->kind, *draft = q->draft;
	int64_t *seq = &res->seq;
	_cleanup_db_stmt_ struct al_db_stmt *up = NULL, *ins = NULL, *cf = NULL;
	int r = al_db_prepare(
		db, "UPDATE volumes SET head = ?1, seq = seq + 1 WHERE id = ?2 AND head = ?3", &up,
		err);
	if (r < 0)
		return r;
	al_db_bind_blob(up, 1, result->b, AL_OID_LEN);
	al_db_bind_int64(up, 2, v->id);
	al_db_bind_blob(up, 3, v->head.b, AL_OID_LEN);
	if (al_db_step(up, err) != AL_DB_DONE)
		return db_fail(err, "move head");
	if (al_db_changes(db) != 1) /* cannot happen under the write lock; checked anyway */
		return al_fail(err, AL_ECONFLICT, 0,
			       "VolumeConflictError: the head moved during the commit");
	if ((r = al_db_prepare(
		     db,
		     "INSERT INTO commits(volume, seq, parent, base, result, author, message, "
		     "strategy, kind, draft, time) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11) "
		     "RETURNING id",
		     &ins, err)) < 0)
		return r;
	*seq = v->seq + 1;
	al_db_bind_int64(ins, 1, v->id);
	al_db_bind_int64(ins, 2, *seq);
	al_db_bind_blob(ins, 3, v->head.b, AL_OID_LEN);
	al_db_bind_blob(ins, 4, base->b, AL_OID_LEN);
	al_db_bind_blob(ins, 5, result->b, AL_OID_LEN);
	al_db_bind_text(ins, 6, o && o->author ? o->author : "", -1);
	al_db_bind_text(ins, 7, o && o->message ? o->message : "", -1);
	al_db_bind_text(ins, 8, al_strategy_name(o ? o->strategy : AL_STRICT), -1);
	al_db_bind_text(ins, 9, kind, -1);
	if (draft)
		al_db_bind_text(ins, 10, draft, -1);
	else
		al_db_bind_null(ins, 10);
	al_db_bind_int64(ins, 11, al_wall_s());
	if (al_db_step(ins, err) != AL_DB_ROW)
		return db_fail(err, "record commit");
	int64_t cid = returned_id(ins);
	if (res->nconflicts) {
		if ((r = al_db_prepare(
			     db,
			     "INSERT INTO conflicts(commit_id, path, copy_path, base_type, "
			     "base_mode, "
			     "base_size, base_digest, theirs_type, theirs_mode, theirs_size, "
			     "theirs_digest, ours_type, ours_mode, ours_size, ours_digest, seq) "
			     "VALUES (?1,?2,?3, ?4,?5,?6,?7, ?8,?9,?10,?11, ?12,?13,?14,?15, ?16)",
			     &cf, err)) < 0)
			return r;
		for (size_t i = 0; i < res->nconflicts; i++) {
			const struct al_conflict *c = &res->conflicts[i];
			al_db_reset(cf);
			al_db_bind_int64(cf, 1, cid);
			al_db_bind_text(cf, 2, c->path, -1);
			if (c->copy_path)
				al_db_bind_text(cf, 3, c->copy_path, -1);
			else
				al_db_bind_null(cf, 3);
			bind_entry(cf, 4, c->has_base, &c->base);
			bind_entry(cf, 8, c->has_theirs, &c->theirs);
			bind_entry(cf, 12, c->has_ours, &c->ours);
			al_db_bind_int64(cf, 16, (int64_t)i);
			if (al_db_step(cf, err) != AL_DB_DONE)
				return db_fail(err, "record conflict");
		}
	}
	struct al_oid parent;
	parent = v->head;
	v->head = *result;
	v->seq = *seq;
	return record_snapshot(db, cas, &parent, result, kind, fp, err);
}

/* ---- overlaps ------------------------------------------------------------ */

static bool same_new(const struct al_change_rec *a, const struct al_change_rec *b)
{
	if (a->has_new != b->has_new)
		return false;
	if (!a->has_new)
		return true; /* both deleted */
	if (a->new.type != b->new.type || a->new.mode != b->new.mode)
		return false;
	/* a directory's contents are judged path by path beneath it */
	return a->new.type == AL_T_DIR || al_oid_eq(&a->new.digest, &b->new.digest);
}

/* a change that removes or replaces everything beneath its path */
static bool destroys(const struct al_change_rec *c)
{
	return c->op == 'D' || (c->op == 'M' && c->has_old && c->has_new &&
				c->old.type != c->new.type && c->old.type == AL_T_DIR);
}

static const struct al_change_rec *find_change(const struct al_changes *cs, const char *path)
{
	size_t lo = 0, hi = cs->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = al_path_cmp(cs->v[mid].path, path);
		if (c == 0)
			return &cs->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Does cs add or modify anything strictly beneath path?  (Deletions
 * beneath a path the other side deletes agree with it.) */
static bool changes_beneath(const struct al_changes *cs, const char *path)
{
	size_t n = strlen(path), lo = 0, hi = cs->n;
	while (lo < hi) { /* first change sorting after path */
		size_t mid = (lo + hi) / 2;
		if (al_path_cmp(cs->v[mid].path, path) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo;
	     i < cs->n && strncmp(cs->v[i].path, path, n) == 0 && cs->v[i].path[n] == '/'; i++)
		if (cs->v[i].has_new)
			return true;
	return false;
}

struct roots {
	char **v;
	size_t n, cap;
};

static int roots_add(struct roots *r, const char *path, size_t len)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		char **v = realloc(r->v, cap * sizeof(*v));
		if (!v)
			return -1;
		r->v = v;
		r->cap = cap;
	}
	if (!(r->v[r->n] = strndup(path, len)))
		return -1;
	r->n++;
	return 0;
}

static void roots_release(struct roots *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i]);
	free(r->v);
	memset(r, 0, sizeof(*r));
}

static int cmp_str_path(const void *a, const void *b)
{
	return al_path_cmp(*(char *const *)a, *(char *const *)b);
}

static bool is_under(const char *path, const char *root)
{
	size_t n = strlen(root);
	return strncmp(path, root, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/* Overlaps of theirs (the incoming change) with ours (changes since its
 * base), as their shallowest paths: the same path changed differently; a
 * path deleted or turned into another type on one side with changes beneath
 * it on the other. */
static int overlap_roots(const struct al_changes *theirs, const struct al_changes *ours,
			 struct roots *out, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	const struct al_changes *side[2] = { theirs, ours };
	for (int s = 0; s < 2; s++) {
		const struct al_changes *a = side[s], *b = side[1 - s];
		for (size_t i = 0; i < a->n; i++) {
			const struct al_change_rec *c = &a->v[i];
			const struct al_change_rec *d = find_change(b, c->path);
			bool hit = s == 0 && d && !same_new(c, d);
			if (!hit && destroys(c) && changes_beneath(b, c->path))
				hit = true;
			if (hit && roots_add(out, c->path, strlen(c->path)) < 0)
				goto oom;
		}
	}
	if (out->n)
		qsort(out->v, out->n, sizeof(char *), cmp_str_path);
	/* keep the shallowest: drop duplicates and paths under another root */
	size_t k = 0;
	for (size_t i = 0; i < out->n; i++) {
		if (k && is_under(out->v[i], out->v[k - 1])) {
			free(out->v[i]);
			continue;
		}
		out->v[k++] = out->v[i];
	}
	out->n = k;
	return 0;
oom:
	roots_release(out);
	return al_fail(err, AL_ENOMEM, ENOMEM, "commit");
}

/* ---- conflict copies ------------------------------------------------------ */

int al_conflict_name(const char *path, const struct al_oid *change_id, char *out, size_t outsz)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
	const char *dot = strrchr(name, '.');
	if (dot == name)
		dot = NULL; /* ".bashrc": no extension */
	size_t stemlen = dot ? (size_t)(dot - name) : strlen(name);
	const char *ext = dot ? dot : "";
	/* never nest markers: drop an earlier ".conflict-<8 hex>[-N]" */
	const char *m = NULL;
	for (const char *p = name; p + 18 <= name + stemlen; p++)
		if (strncmp(p, ".conflict-", 10) == 0)
			m = p;
	if (m)
		stemlen = (size_t)(m - name);
	char hex[65];
	al_hex(change_id->b, AL_OID_LEN, hex);
	size_t extlen = strlen(ext);
	if (stemlen + 18 + extlen > 250) /* a name stays within 255 bytes */
		stemlen = 250 > 18 + extlen ? 250 - 18 - extlen : 0;
	int n = snprintf(out, outsz, "%.*s%.*s.conflict-%.8s%s", (int)dirlen, path, (int)stemlen,
			 name, hex, ext);
	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

static int unique_copy_path(struct al_cas *cas, const struct al_oid *tree, const char *path,
			    const struct al_oid *change_id, const struct roots *taken, char *out,
			    size_t outsz, struct al_error *err)
{
	char first[AL_PATH_MAX + 64];
	if (al_conflict_name(path, change_id, first, sizeof(first)) < 0 ||
	    strlen(first) > AL_PATH_MAX)
		return al_fail(err, AL_ELIMIT, 0, "conflict copy of %s: path too long", path);
	const char *dot = strrchr(first, '.');
	const char *marker = strstr(first, ".conflict-");
	if (dot && dot < marker)
		dot = NULL;
	for (int k = 1; k < 1000; k++) {
		if (k == 1)
			snprintf(out, outsz, "%s", first);
		else if (dot && dot > marker)
			snprintf(out, outsz, "%.*s-%d%s", (int)(dot - first), first, k, dot);
		else
			snprintf(out, outsz, "%s-%d", first, k);
		bool used = false;
		for (size_t i = 0; i < taken->n && !used; i++)
			used = strcmp(taken->v[i], out) == 0;
		struct al_entry e;
		struct al_error e2 = { 0 };
		int r = used ? 0 : al_manifest_lookup(cas, tree, out, &e, &e2);
		if (!used && r == AL_ENOTFOUND)
			return 0;
		if (r < 0 && r != AL_ENOTFOUND) {
			*err = e2;
			return r;
		}
	}
	return al_fail(err, AL_ELIMIT, 0, "no free conflict name for %s", path);
}

static int lookup_opt(struct al_cas *cas, const struct al_oid *tree, const char *path, bool *has,
		      struct al_entry *e, struct al_error *err)
{
	struct al_error e2 = { 0 };
	int r = al_manifest_lookup(cas, tree, path, e, &e2);
	*has = r == 0;
	if (r == AL_ENOTFOUND)
		return 0;
	if (r < 0)
		*err = e2;
	return r;
}

/* ---- commit --------------------------------------------------------------- */

/* A file both sides changed whose lines merged (merge_lines). */
struct merged_file {
	char *path;
	struct al_entry entry;
};

struct merge {
	struct al_cas *cas;
	const struct al_oid *base, *incoming;
	struct al_oid head;
	struct al_changes theirs, ours;
	struct roots roots;
	struct merged_file *merged; /* in path order */
	size_t nmerged;
};

static void merge_release(struct merge *m)
{
	al_changes_release(&m->theirs);
	al_changes_release(&m->ours);
	roots_release(&m->roots);
	for (size_t i = 0; i < m->nmerged; i++)
		free(m->merged[i].path);
	free(m->merged);
	m->merged = NULL;
	m->nmerged = 0;
}

static int load_text(struct al_cas *cas, const struct al_entry *e, uint8_t **out, size_t *len,
		     struct al_error *err)
{
	*out = NULL;
	*len = 0;
	if (e->size > AL_REVIEW_TEXT_MAX)
		return 1; /* not text: too large to diff */
	return al_cas_get(cas, &e->digest, out, len, err);
}

/* One overlap as merge_lines takes it: 1 and the merged file's entry (its
 * bytes stored in the caller's batch) when it is a regular file on the
 * base and both sides, both modified it, the modes reconcile (one side
 * kept the base's, or both agree) and the lines merge (al_review_merge_lines);
 * 0 when it is an overlap after all. */
static int merge_file(struct merge *m, const char *path, struct al_entry *out, struct al_error *err)
{
	const struct al_change_rec *t = find_change(&m->theirs, path),
				   *o = find_change(&m->ours, path);
	if (!t || !o || t->op != 'M' || o->op != 'M' || !t->has_old || !t->has_new || !o->has_new ||
	    t->old.type != AL_T_FILE || t->new.type != AL_T_FILE || o->new.type != AL_T_FILE)
		return 0;
	unsigned bm = t->old.mode, om = o->new.mode, tm = t->new.mode;
	if (om != tm && om != bm && tm != bm)
		return 0;
	uint8_t *p[3] = { NULL, NULL, NULL }, *merged = NULL;
	size_t len[3] = { 0, 0, 0 }, mlen = 0;
	const struct al_entry *e[3] = { &t->old, &o->new, &t->new };
	int r = 0;
	for (int i = 0; i < 3 && r == 0; i++)
		r = load_text(m->cas, e[i], &p[i], &len[i], err);
	if (r == 1) /* too large to be merged as text: an overlap */
		r = 0;
	else if (r == 0)
		r = al_review_merge_lines(p[0], len[0], p[1], len[1], p[2], len[2], &merged, &mlen,
					  err);
	if (r == 1) {
		*out = (struct al_entry){ .type = AL_T_FILE,
					  .mode = tm == bm ? om : tm,
					  .size = mlen };
		if (al_cas_put(m->cas, merged ? merged : (const uint8_t *)"", mlen, &out->digest,
			       err) < 0)
			r = err->code;
	}
	free(merged);
	for (int i = 0; i < 3; i++)
		free(p[i]);
	return r;
}

/* merge_lines: the overlaps whose lines merge leave m->roots for
 * m->merged. */
static int merge_files(struct merge *m, struct al_error *err)
{
	if (!m->roots.n)
		return 0;
	if (!(m->merged = calloc(m->roots.n, sizeof(*m->merged))))
		return al_fail(err, AL_ENOMEM, ENOMEM, "merge");
	size_t k = 0;
	int r = 0;
	for (size_t i = 0; i < m->roots.n; i++) {
		struct al_entry e;
		int ok = r < 0 ? 0 : merge_file(m, m->roots.v[i], &e, err);
		if (ok < 0)
			r = ok;
		if (ok == 1)
			m->merged[m->nmerged++] = (struct merged_file){ m->roots.v[i], e };
		else
			m->roots.v[k++] = m->roots.v[i];
	}
	m->roots.n = k;
	return r;
}

static const struct merged_file *find_merged(const struct merge *m, const char *path)
{
	size_t lo = 0, hi = m->nmerged;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = al_path_cmp(m->merged[mid].path, path);
		if (c == 0)
			return &m->merged[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int fill_conflicts(struct merge *m, struct al_commit_result *res, struct al_error *err)
{
	res->conflicts = calloc(m->roots.n ? m->roots.n : 1, sizeof(*res->conflicts));
	if (!res->conflicts)
		return al_fail(err, AL_ENOMEM, ENOMEM, "commit");
	for (size_t i = 0; i < m->roots.n; i++) {
		struct al_conflict *c = &res->conflicts[res->nconflicts++];
		if (!(c->path = strdup(m->roots.v[i])))
			return al_fail(err, AL_ENOMEM, ENOMEM, "commit");
		int r;
		if ((r = lookup_opt(m->cas, m->base, c->path, &c->has_base, &c->base, err)) < 0 ||
		    (r = lookup_opt(m->cas, m->incoming, c->path, &c->has_theirs, &c->theirs,
				    err)) < 0 ||
		    (r = lookup_opt(m->cas, &m->head, c->path, &c->has_ours, &c->ours, err)) < 0)
			return r;
	}
	return 0;
}

static int conflict_error(struct merge *m, struct al_commit_result *res, const char *why,
			  struct al_error *err)
{
	int r = fill_conflicts(m, res, err);
	if (r < 0)
		return r;
	res->head = m->head;
	char id[AL_OID_STRLEN + 1], paths[160] = "";
	al_oid_fmt(&m->head, id);
	size_t o = 0;
	for (size_t i = 0; i < m->roots.n && o + 4 < sizeof(paths); i++)
		o += (size_t)snprintf(paths + o, sizeof(paths) - o, "%s%s", i ? ", " : "",
				      m->roots.v[i]);
	al_utf8_cut(paths);
	return al_fail(err, AL_ECONFLICT, 0,
		       "VolumeConflictError: head is %s, not the declared base (%s)%s%s", id, why,
		       m->roots.n ? "; overlapping paths: " : "", paths);
}

/* Apply "incoming minus overlaps" onto head, then land each overlap's
 * incoming version beside ours. */
static int merge_apply(struct merge *m, bool with_copies, struct al_oid *out,
		       struct al_commit_result *res, struct al_error *err)
{
	struct al_edit *ed = NULL;
	int r = al_changes_edits(&m->theirs, &ed, err);
	if (r < 0)
		return r;
	size_t k = 0;
	for (size_t i = 0; i < m->theirs.n; i++) {
		/* identical on both sides: already in the head */
		const struct al_change_rec *o = find_change(&m->ours, m->theirs.v[i].path);
		bool skip = o && same_new(&m->theirs.v[i], o);
		for (size_t j = 0; j < m->roots.n && !skip; j++)
			skip = is_under(ed[i].path, m->roots.v[j]);
		const struct merged_file *mf = skip ? NULL : find_merged(m, ed[i].path);
		if (mf)
			ed[i].entry = mf->entry; /* both sides' lines */
		if (!skip)
			ed[k++] = ed[i];
	}
	struct al_oid mid;
	r = al_manifest_edit(m->cas, &m->head, ed, k, &mid, err);
	free(ed);
	if (r < 0 || !with_copies || m->roots.n == 0) {
		if (r == 0)
			*out = mid;
		return r;
	}
	if ((r = fill_conflicts(m, res, err)) < 0)
		return r;
	/* the change's id: what it was made from and what it made */
	struct al_oid cid, buf[2] = { *m->base, *m->incoming };
	al_sha256(buf, sizeof(buf), cid.b);
	struct al_edit *copies = calloc(m->roots.n, sizeof(*copies));
	struct roots taken = { 0 };
	if (!copies)
		return al_fail(err, AL_ENOMEM, ENOMEM, "commit");
	size_t nc = 0;
	for (size_t i = 0; i < res->nconflicts && r == 0; i++) {
		struct al_conflict *c = &res->conflicts[i];
		if (!c->has_theirs)
			continue; /* theirs deleted it: ours stays, the conflict is recorded */
		char cp[AL_PATH_MAX + 64];
		if ((r = unique_copy_path(m->cas, &mid, c->path, &cid, &taken, cp, sizeof(cp),
					  err)) < 0)
			break;
		if (!(c->copy_path = strdup(cp)) || roots_add(&taken, cp, strlen(cp)) < 0) {
			r = al_fail(err, AL_ENOMEM, ENOMEM, "commit");
			break;
		}
		copies[nc].path = c->copy_path;
		copies[nc].op = AL_EDIT_SET;
		copies[nc].entry = c->theirs; /* a directory is grafted whole */
		nc++;
	}
	if (r == 0)
		r = al_manifest_edit(m->cas, &mid, copies, nc, out, err);
	free(copies);
	roots_release(&taken);
	return r;
}

/* In an open meta transaction: commit base -> incoming into v. */
static int commit_locked(struct al_store *st, struct al_db *db, struct vol *v,
			 const struct commit_req *q, struct al_commit_result *res,
			 struct al_error *err)
{
	const struct al_oid *base = q->base, *incoming = q->incoming;
	const struct al_commit_opts *o = q->opts;
	const char *kind = q->kind, *group = q->group;
	json_t *extra = q->extra;
	struct al_cas *cas = al_store_cas(st);
	enum al_strategy strategy = o ? o->strategy : AL_STRICT;
	struct al_oid result;
	int r = 0;
	/* the changes parent→result when the commit has them (record_snapshot):
	 * the caller's when the head is the base; the incoming side's when a
	 * disjoint merge put them on the head (the paths the head changed are
	 * not among them, so their old entries are the head's too) */
	struct from_parent fp = { 0 };
	struct merge m = { .cas = cas, .base = base, .incoming = incoming };
	/* bad input is refused as such before anything is judged (the ledger
	 * would refuse this author later) */
	if (o && o->author && *o->author && (r = al_text_check("author", o->author, 255, err)) < 0)
		return r;
	struct precomputed *pre = q->pre;
	/* the incoming snapshot must be a complete tree of this tenant */
	if ((!pre || !pre->checked) &&
	    ((r = al_manifest_stat(cas, incoming, NULL, NULL, err)) < 0 ||
	     (r = al_manifest_stat(cas, base, NULL, NULL, err)) < 0))
		return r;
	if (al_oid_eq(&v->head, base)) {
		result = *incoming;
		fp = (struct from_parent){ q->changes, q->keep };
		if (!fp.changes && pre && pre->has_theirs)
			fp.changes = &pre->theirs; /* base→incoming is parent→result */
	} else {
		m.head = v->head;
		if (pre && pre->has_theirs) { /* taken: m releases it */
			m.theirs = pre->theirs;
			pre->has_theirs = false;
		} else if ((r = al_manifest_changes(cas, base, incoming, &m.theirs, err)) < 0) {
			merge_release(&m);
			return r;
		}
		if ((r = al_manifest_changes(cas, base, &v->head, &m.ours, err)) < 0 ||
		    (r = overlap_roots(&m.theirs, &m.ours, &m.roots, err)) < 0) {
			merge_release(&m);
			return r;
		}
		if (strategy == AL_STRICT)
			r = conflict_error(&m, res, "strict", err);
		else if (strategy == AL_REBASE_IF_DISJOINT && m.roots.n)
			r = conflict_error(&m, res, "rebase_if_disjoint: changes overlap", err);
		else if ((r = al_cas_begin(cas, err)) == 0) {
			/* the files whose lines merge are no overlap; any other is */
			if (strategy == AL_MERGE_LINES && (r = merge_files(&m, err)) == 0 &&
			    m.roots.n)
				r = conflict_error(&m, res, "merge_lines: changes overlap", err);
			if (r == 0)
				r = merge_apply(&m, strategy == AL_CONFLICT_COPY, &result, res,
						err);
			/* every new node durable before the head names it */
			r = r < 0 ? (al_cas_abort(cas), r) : al_cas_commit(cas, err);
			res->rebased = r == 0;
		}
		if (r < 0) {
			merge_release(&m);
			return r;
		}
		/* a merged file's old entry is not the head's: count by a diff */
		if (m.roots.n == 0 && m.nmerged == 0)
			fp.changes = &m.theirs;
	}
	if (al_oid_eq(&result, &v->head) && res->nconflicts == 0) {
		/* an empty commit would say something happened when nothing did;
		 * one that records a conflict (conflict_copy keeping ours against
		 * an incoming deletion) is the record of that conflict */
		char hid[AL_OID_STRLEN + 1];
		al_oid_fmt(&v->head, hid);
		res->head = v->head;
		merge_release(&m);
		return al_fail(
			err, AL_ESTATE, 0, "nothing to apply: the head %s already has %s", hid,
			al_oid_eq(base, incoming) ? "this (empty) change" : "every change of it");
	}
	struct al_oid parent;
	parent = v->head;
	r = record_commit(db, cas, v, q, &result, &fp, res, err);
	json_t *merged = json_array();
	if (r == 0 && m.nmerged && !(res->merged = calloc(m.nmerged, sizeof(char *))))
		r = al_fail(err, AL_ENOMEM, ENOMEM, "commit");
	for (size_t i = 0; r == 0 && i < m.nmerged; i++) {
		json_array_append_new(merged, json_string(m.merged[i].path));
		res->merged[res->nmerged++] = steal_ptr(m.merged[i].path);
	}
	merge_release(&m);
	if (r < 0) {
		json_decref(merged);
		return r;
	}
	res->head = result;
	json_t *d =
		json_pack("{s:s,s:I,s:o,s:o,s:o,s:o,s:s,s:s,s:b,s:I}", "volume",
			  strcmp(v->kind, "draft") == 0 ? v->public_id : "live", "seq",
			  (json_int_t)res->seq, "parent", jid(&parent), "base", jid(base),
			  "incoming", jid(incoming), "result", jid(&result), "strategy",
			  al_strategy_name(strategy), "message", o && o->message ? o->message : "",
			  "rebased", res->rebased, "conflicts", (json_int_t)res->nconflicts);
	if (d && strategy == AL_MERGE_LINES)
		json_object_set(d, "merged", merged);
	json_decref(merged);
	if (d && extra)
		json_object_update(d, extra);
	uint64_t cseq;
	if ((r = log_action(st, db,
			    &(struct al_ledger_rec){ .kind = kind,
						     .group = group,
						     .project = v->project_name,
						     .actor = o ? o->author : NULL,
						     .data = d },
			    &cseq, err)) < 0)
		return r;
	for (size_t i = 0; i < res->nconflicts && r == 0; i++) {
		const struct al_conflict *c = &res->conflicts[i];
		json_t *cd = json_pack(
			"{s:I,s:s,s:s,s:o,s:o,s:o}", "commit_seq", (json_int_t)cseq, "path",
			c->path, "outcome", c->copy_path ? "copied" : "kept_ours", "base",
			jentry(c->has_base, &c->base), "theirs", jentry(c->has_theirs, &c->theirs),
			"ours", jentry(c->has_ours, &c->ours));
		if (cd)
			json_object_set_new(cd, "copy_path",
					    c->copy_path ? json_string(c->copy_path) : json_null());
		r = log_action(st, db,
			       &(struct al_ledger_rec){ .kind = "conflict",
							.group = group,
							.project = v->project_name,
							.actor = o ? o->author : NULL,
							.data = cd },
			       NULL, err);
	}
	return r;
}

/* objects.db's checkpoints wait while meta.db's write lock is held (a
 * rebase's or a selection's object batch commits inside it): its copy and
 * syncs would hold every other committer back (al_sqlite_hold_checkpoints).
 * Released once meta.db's transaction has ended. */
static void hold_checkpoints(struct al_store *st, bool hold)
{
	al_cas__hold_checkpoints(al_store_cas(st), hold);
}

static int begin(struct al_store *st, struct al_db **db, struct al_db_txn *txn,
		 struct al_error *err)
{
	txn->open = false;
	int r = al_store__meta_db(st, db, err);
	return r < 0 ? r : al_db_begin(*db, AL_DB_WRITE, txn, err);
}

/* ---- group commit ------------------------------------------------------------
 *
 * Commits of the live head by several processes at once share one
 * transaction of meta.db and one of objects.db, so one pair of syncs
 * (group.h has the queue).  Each request keeps its own savepoint, its own
 * commit row, ledger entries and refusal; one checkpoint seals the lot.
 * What a request came to is a row of grouped(token, result) written in the
 * same transaction, read by its process once the leader has committed;
 * a leader that finds a request's row (its leader killed between the
 * commit and the done word) does it no more: it is done exactly once.
 * The rows of requests no process waits for any more go in each batch.
 * docs/architecture.md, "Group commit". */

struct greq {
	uint64_t token;
	json_t *doc; /* the strings below point into it */
	const char *project, *group;
	struct al_oid base, incoming;
	struct al_commit_opts o;
	bool ready;   /* its row is in the transaction */
	bool had_row; /* its row was there before: done by a leader killed */
};

/* What a request posts: the commit's arguments, all strings (opts'
 * author and message omitted when NULL).  NULL when it cannot be (not
 * UTF-8, an unknown strategy): the commit is then made alone, where
 * commit_locked says what is wrong with it. */
static char *request_text(const char *project, const struct al_oid *base,
			  const struct al_oid *incoming, const struct al_commit_opts *o,
			  const char *group, bool remote, size_t *len)
{
	const char *strategy = al_strategy_name(o ? o->strategy : AL_STRICT);
	json_t *j = strategy ? json_pack("{s:s,s:o,s:o,s:s,s:s,s:b}", "project", project, "base",
					 jid(base), "incoming", jid(incoming), "strategy", strategy,
					 "group", group, "remote", remote)
			     : NULL;
	if (j && o && o->author && json_object_set_new(j, "author", json_string(o->author)) < 0)
		json_decref(steal_ptr(j));
	if (j && o && o->message && json_object_set_new(j, "message", json_string(o->message)) < 0)
		json_decref(steal_ptr(j));
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (s)
		*len = strlen(s);
	return s;
}

static int request_parse(const void *buf, size_t len, struct greq *q, bool *remote)
{
	json_error_t je;
	const char *base, *incoming, *strategy;
	int rem;
	json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	memset(q, 0, sizeof(*q));
	if (!j ||
	    json_unpack(j, "{s:s,s:s,s:s,s:s,s:s,s:b,s?s,s?s}", "project", &q->project, "base",
			&base, "incoming", &incoming, "strategy", &strategy, "group", &q->group,
			"remote", &rem, "author", &q->o.author, "message", &q->o.message) < 0 ||
	    al_oid_parse(base, &q->base, NULL) < 0 ||
	    al_oid_parse(incoming, &q->incoming, NULL) < 0 ||
	    al_strategy_parse(strategy, &q->o.strategy, NULL) < 0) {
		json_decref(j);
		return -1;
	}
	q->doc = j;
	*remote = rem;
	return 0;
}

static json_t *jside(bool has, const struct al_entry *e)
{
	if (!has)
		return json_null();
	return json_pack("[i,i,I,o]", (int)e->type, (int)e->mode, (json_int_t)e->size,
			 jid(&e->digest));
}

static int side_parse(json_t *j, bool *has, struct al_entry *e)
{
	int type, mode;
	json_int_t size;
	const char *d;
	*has = !json_is_null(j);
	memset(e, 0, sizeof(*e));
	if (!*has)
		return 0;
	if (json_unpack(j, "[i,i,I,s]", &type, &mode, &size, &d) < 0 || size < 0 ||
	    al_oid_parse(d, &e->digest, NULL) < 0)
		return -1;
	e->type = (enum al_entry_type)type;
	e->mode = (uint32_t)mode;
	e->size = (uint64_t)size;
	return 0;
}

/* A request's outcome as its row holds it: r, the error, and the result.
 * NULL when a string is not UTF-8 (json_string refuses it). */
static char *result_text(int r, const struct al_error *e, const struct al_commit_result *res)
{
	json_t *cs = json_array(), *ms = json_array();
	for (size_t i = 0; cs && i < res->nconflicts; i++) {
		const struct al_conflict *c = &res->conflicts[i];
		json_t *x = json_pack("{s:s,s:o,s:o,s:o}", "path", c->path, "base",
				      jside(c->has_base, &c->base), "theirs",
				      jside(c->has_theirs, &c->theirs), "ours",
				      jside(c->has_ours, &c->ours));
		if (x && c->copy_path &&
		    json_object_set_new(x, "copy_path", json_string(c->copy_path)) < 0)
			json_decref(steal_ptr(x));
		if (!x || json_array_append_new(cs, x) < 0)
			json_decref(steal_ptr(cs));
	}
	for (size_t i = 0; ms && i < res->nmerged; i++)
		if (json_array_append_new(ms, json_string(res->merged[i])) < 0)
			json_decref(steal_ptr(ms));
	/* a message is UTF-8 as a rule; one that is not is told with '?' */
	char msg[sizeof(e->msg)];
	snprintf(msg, sizeof(msg), "%s", r < 0 ? e->msg : "");
	if (!al_utf8_valid((const uint8_t *)msg, strlen(msg)))
		for (char *p = msg; *p; p++)
			if ((unsigned char)*p >= 0x80)
				*p = '?';
	json_t *j =
		cs && ms ? json_pack("{s:i,s:i,s:i,s:s,s:o,s:I,s:b,s:o,s:o}", "r", r, "code",
				     r < 0 ? e->code : 0, "errno", r < 0 ? e->sys_errno : 0, "msg",
				     msg, "head", jid(&res->head), "seq", (json_int_t)res->seq,
				     "rebased", res->rebased, "conflicts", cs, "merged", ms)
			 : (json_decref(cs), json_decref(ms), NULL);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return s;
}

static int result_parse(const char *s, struct al_commit_result *res, struct al_error *err)
{
	json_error_t je;
	int r, code, eno, rebased;
	const char *msg, *head;
	json_int_t seq;
	json_t *cs, *ms;
	json_t *j = json_loads(s, 0, &je);
	if (!j ||
	    json_unpack(j, "{s:i,s:i,s:i,s:s,s:s,s:I,s:b,s:o,s:o}", "r", &r, "code", &code, "errno",
			&eno, "msg", &msg, "head", &head, "seq", &seq, "rebased", &rebased,
			"conflicts", &cs, "merged", &ms) < 0 ||
	    !json_is_array(cs) || !json_is_array(ms) || r > 0 ||
	    al_oid_parse(head, &res->head, NULL) < 0)
		goto bad;
	res->seq = seq;
	res->rebased = rebased;
	size_t nc = json_array_size(cs), nm = json_array_size(ms);
	if ((nc && !(res->conflicts = calloc(nc, sizeof(*res->conflicts)))) ||
	    (nm && !(res->merged = calloc(nm, sizeof(char *)))))
		goto nomem;
	for (size_t i = 0; i < nc; i++) {
		struct al_conflict *c = &res->conflicts[res->nconflicts];
		const char *path, *copy = NULL;
		json_t *b, *t, *o;
		if (json_unpack(json_array_get(cs, i), "{s:s,s?s,s:o,s:o,s:o}", "path", &path,
				"copy_path", &copy, "base", &b, "theirs", &t, "ours", &o) < 0 ||
		    side_parse(b, &c->has_base, &c->base) < 0 ||
		    side_parse(t, &c->has_theirs, &c->theirs) < 0 ||
		    side_parse(o, &c->has_ours, &c->ours) < 0)
			goto bad;
		c->path = strdup(path);
		c->copy_path = copy ? strdup(copy) : NULL;
		res->nconflicts++;
		if (!c->path || (copy && !c->copy_path))
			goto nomem;
	}
	for (size_t i = 0; i < nm; i++) {
		const char *m = json_string_value(json_array_get(ms, i));
		if (!m)
			goto bad;
		if (!(res->merged[res->nmerged++] = strdup(m)))
			goto nomem;
	}
	if (r < 0 && err) {
		err->code = code;
		err->sys_errno = eno;
		snprintf(err->msg, sizeof(err->msg), "%s", msg);
	}
	json_decref(j);
	return r;
bad:
	json_decref(j);
	return al_fail(err, AL_ECORRUPT, 0, "commit: a group commit's outcome is malformed");
nomem:
	json_decref(j);
	return al_fail(err, AL_ENOMEM, ENOMEM, "commit");
}

/* token's row: 1 and *out (malloc'd), or 0: none */
static int find_row(struct al_db *db, uint64_t token, char **out, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(db, "SELECT result FROM grouped WHERE token = ?1", &q, err);
	if (r < 0)
		return r;
	al_db_bind_int64(q, 1, (int64_t)token);
	if ((r = al_db_step(q, err)) < 0)
		return al_error_prefix(err, "commit: ");
	if (r != AL_DB_ROW)
		return 0;
	const char *s = al_db_column_text(q, 0);
	if (!(*out = strdup(s ? s : "")))
		return al_fail(err, AL_ENOMEM, ENOMEM, "commit");
	return 1;
}

static int put_row(struct al_db *db, uint64_t token, const char *result, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(db, "INSERT INTO grouped(token, result) VALUES (?1, ?2)", &q, err);
	if (r < 0)
		return r;
	al_db_bind_int64(q, 1, (int64_t)token);
	al_db_bind_text(q, 2, result, -1);
	return al_db_step(q, err) < 0 ? al_error_prefix(err, "commit: ") : 0;
}

/* The rows no live process waits for: read (its own is read already),
 * or its process gone.  The table holds a few rows: read whole. */
static int prune_rows(struct al_db *db, struct al_group *g, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL, *del = NULL;
	int r = al_db_prepare(db, "SELECT token FROM grouped", &q, err);
	if (r < 0 || (r = al_db_prepare(db, "DELETE FROM grouped WHERE token = ?1", &del, err)) < 0)
		return r;
	uint64_t gone[256];
	size_t n = 0;
	while (n < 256 && (r = al_db_step(q, err)) == AL_DB_ROW) {
		uint64_t t = (uint64_t)al_db_column_int64(q, 0);
		if (!al_group_waiting(g, t))
			gone[n++] = t;
	}
	if (r < 0)
		return al_error_prefix(err, "commit: ");
	for (size_t i = 0; i < n && r >= 0; i++) {
		al_db_reset(del);
		al_db_bind_int64(del, 1, (int64_t)gone[i]);
		r = al_db_step(del, err);
	}
	return r < 0 ? al_error_prefix(err, "commit: ") : 0;
}

/* One request of a batch, in a savepoint of its own: r is its outcome;
 * *broken when the transaction itself failed (the batch fails whole).
 * For another process's request, *row is its outcome's text. */
static int batch_one(struct al_store *st, struct al_db *db, const char *project,
		     const struct commit_req *q, struct al_commit_result *res, char **row,
		     bool *broken, struct al_error *err)
{
	struct al_error e2 = { 0 };
	if (al_db_exec(db, "SAVEPOINT grouped", err) < 0) {
		*broken = true;
		return err->code;
	}
	struct vol v;
	int r = live_volume(db, project, &v, err);
	if (r == 0)
		r = commit_locked(st, db, &v, q, res, err);
	if (row && !(*row = result_text(r, err, res)) && r == 0)
		r = al_fail(err, AL_EINVAL, 0,
			    "commit: its outcome cannot be told to its process (not UTF-8)");
	if (row && !*row) {
		struct al_commit_result none = { .head = res->head };
		*row = result_text(r, err, &none);
	}
	if (row && !*row) {
		*broken = true;
		return al_fail(err, AL_ENOMEM, ENOMEM, "commit");
	}
	if (r == 0) {
		if (al_db_exec(db, "RELEASE grouped", &e2) < 0) {
			*broken = true;
			*err = e2;
			return e2.code;
		}
		return 0;
	}
	/* a savepoint gone: the request's error rolled the whole transaction
	 * back (a full disk, an I/O error), and is the batch's */
	if (al_db_exec(db, "ROLLBACK TO grouped", &e2) < 0 ||
	    al_db_exec(db, "RELEASE grouped", &e2) < 0) {
		*broken = true;
		return r;
	}
	if (r == AL_ECONFLICT && refusal_entry(st, db, q, project, res, &e2) < 0) {
		*broken = true;
		*err = e2;
		return e2.code;
	}
	return r;
}

struct batch {
	struct greq q[AL_GROUP_SLOTS];
	size_t n;
	bool remote; /* the leader's objects go to a remote tier too */
};

static int collect(void *ctx, uint64_t token, const void *req, size_t len)
{
	struct batch *b = ctx;
	/* a request that is not one (torn, another version's), or one whose
	 * objects must reach a remote tier this leader has not (or the other
	 * way), is left to its process, which does it itself when it leads */
	bool remote;
	if (b->n < AL_GROUP_SLOTS && request_parse(req, len, &b->q[b->n], &remote) == 0) {
		if (remote == b->remote)
			b->q[b->n++].token = token;
		else
			json_decref(b->q[b->n].doc);
	}
	return 0;
}

/* A commit alone, in the transaction begun: the direct path's, and a
 * leader's whom no other request waits for (no savepoint, no held
 * objects: a group of one costs what a commit without a queue does). */
static int commit_alone(struct al_store *st, struct al_db *db, struct al_db_txn *txn,
			const char *project, const struct commit_req *q, struct al_group *g,
			struct al_commit_result *res, struct al_error *err)
{
	struct vol v;
	hold_checkpoints(st, true);
	int r = g ? prune_rows(db, g, err) : 0;
	if (r == 0 && (r = live_volume(db, project, &v, err)) == 0)
		r = commit_locked(st, db, &v, q, res, err);
	r = al_ledger__commit(st, txn, r, err);
	hold_checkpoints(st, false);
	if (r == AL_ECONFLICT)
		log_refusal(st, db, q, project, res);
	return r;
}

/* This process leads: its own request and every other posted, in one
 * transaction of each database. */
static int lead(struct al_store *st, struct al_group *g, const char *project,
		const struct commit_req *own, struct al_commit_result *res, struct al_error *err)
{
	struct al_cas *cas = al_store_cas(st);
	struct batch *b = calloc(1, sizeof(*b));
	struct al_db *db;
	struct al_db_txn txn;
	struct al_error e2 = { 0 }, oe = { 0 };
	int r = b ? begin(st, &db, &txn, err) : al_fail(err, AL_ENOMEM, ENOMEM, "commit");
	if (r < 0) {
		free(b);
		al_group_end(g);
		return r;
	}
	b->remote = al_cas__has_remote(cas);
	al_group_foreach(g, collect, b);
	/* its own: done by a leader killed after its commit (its outcome
	 * stands whatever becomes of this batch), or now; alone, as a
	 * commit without a queue */
	char *row = NULL;
	int f = find_row(db, al_group_token(g), &row, &e2);
	if (f == 0 && b->n == 0) {
		free(b);
		r = commit_alone(st, db, &txn, project, own, g, res, err);
		al_group_end(g);
		return r;
	}
	hold_checkpoints(st, true);
	bool grouped = f >= 0 && al_cas__group(cas, true, &e2) == 0;
	bool broken = !grouped || al_cas_begin(cas, &e2) < 0;
	bool own_row = f == 1;
	if (own_row)
		r = result_parse(row, res, &oe);
	else if (!broken && (r = batch_one(st, db, project, own, res, NULL, &broken, &oe)) < 0 &&
		 broken)
		e2 = oe;
	free(steal_ptr(row));
	for (size_t i = 0; i < b->n && !broken; i++) {
		struct greq *x = &b->q[i];
		if ((f = find_row(db, x->token, &row, &e2)) != 0) {
			broken = f < 0;
			x->had_row = f == 1;
			free(steal_ptr(row));
			continue;
		}
		struct commit_req q = { .base = &x->base,
					.incoming = &x->incoming,
					.opts = &x->o,
					.kind = "commit",
					.group = x->group };
		struct al_commit_result xr = { 0 };
		struct al_error xe = { 0 };
		batch_one(st, db, x->project, &q, &xr, &row, &broken, &xe);
		al_commit_result_release(&xr);
		if (broken)
			e2 = xe;
		else if (put_row(db, x->token, row, &e2) < 0)
			broken = true;
		x->ready = !broken;
		free(steal_ptr(row));
	}
	if (!broken && prune_rows(db, g, &e2) < 0)
		broken = true;
	/* every object durable before any head names it; a broken batch's
	 * objects dropped with it */
	int c = !broken       ? al_cas_commit(cas, &e2)
		: e2.code < 0 ? e2.code
			      : al_fail(&e2, AL_EIO, 0, "commit: the group's transaction failed");
	if (grouped) /* a batch open before is not this one's to end */
		al_cas__group(cas, false, NULL);
	if (c < 0 && grouped)
		al_cas_abort(cas);
	c = al_ledger__commit(st, &txn, c, &e2);
	hold_checkpoints(st, false);
	if (c == 0 && al_group__after_commit)
		al_group__after_commit();
	for (size_t i = 0; i < b->n; i++) {
		if (b->q[i].had_row || (c == 0 && b->q[i].ready))
			al_group_done(g, b->q[i].token);
		json_decref(b->q[i].doc);
	}
	free(b);
	al_group_end(g);
	if (c < 0 && !own_row) { /* the batch's failure is its own request's too */
		*err = e2;
		return c;
	}
	if (r < 0)
		*err = oe;
	return r;
}

/* Another process led: the request's outcome from its row. */
static int read_result(struct al_db *db, uint64_t token, struct al_commit_result *res,
		       struct al_error *err)
{
	char *row = NULL;
	int r = find_row(db, token, &row, err);
	if (r == 0)
		r = al_fail(err, AL_EIO, 0,
			    "commit: a group commit's outcome is not on record: see the project's "
			    "log");
	if (r == 1)
		r = result_parse(row, res, err);
	free(row);
	return r;
}

int al_project_commit(struct al_store *st, const char *project, const struct al_oid *base,
		      const struct al_oid *snapshot, const struct al_commit_opts *opts,
		      struct al_commit_result *res, struct al_error *err)
{
	memset(res, 0, sizeof(*res));
	struct al_db *db;
	struct al_db_txn txn;
	struct precomputed pre;
	precompute(st, base, snapshot, &pre);
	char gbuf[17];
	const char *group = group_of(opts, gbuf);
	struct commit_req q = { .base = base,
				.incoming = snapshot,
				.opts = opts,
				.kind = "commit",
				.group = group,
				.pre = &pre };
	int r = al_store__meta_db(st, &db, err);
	const char *file = r == 0 ? al_store__meta_file(st) : NULL;
	size_t len = 0;
	char *req = file ? request_text(project, base, snapshot, opts, group,
					al_cas__has_remote(al_store_cas(st)), &len)
			 : NULL;
	struct al_group *g = NULL;
	if (req && al_group_join(al_store__group_map(st), file, req, len, &g) == 0) {
		free(req);
		if ((r = al_group_wait(g, err)) == 1)
			r = read_result(db, al_group_token(g), res, err);
		else if (r == 0)
			r = lead(st, g, project, &q, res, err);
		al_group_leave(g);
		precomputed_release(&pre);
		return r;
	}
	free(req);
	if (r == 0 && (r = begin(st, &db, &txn, err)) == 0)
		r = commit_alone(st, db, &txn, project, &q, NULL, res, err);
	precomputed_release(&pre);
	return r;
}

/* ---- projects ------------------------------------------------------------- */

int al_project_create(struct al_store *st, const char *name, const struct al_oid *snapshot,
		      const char *author, struct al_project_info *out, struct al_error *err)
{
	int r = al_project_name_check(name, err);
	if (r < 0)
		return r;
	struct al_cas *cas = al_store_cas(st);
	/* the volume starts at the empty tree; the first commit brings snapshot */
	struct al_oid head, empty;
	if ((r = empty_tree(cas, &empty, err)) < 0)
		return r;
	head = snapshot ? *snapshot : empty;
	if (snapshot && (r = al_manifest_stat(cas, &head, NULL, NULL, err)) < 0)
		return r;
	struct al_db *db;
	struct al_db_txn txn;
	if ((r = begin(st, &db, &txn, err)) < 0)
		return r;
	_cleanup_db_stmt_ struct al_db_stmt *pv = NULL, *pp = NULL, *up = NULL;
	int64_t now = al_wall_s();
	if ((r = al_db_prepare(db,
			       "INSERT INTO projects(name, volume, created) VALUES (?1, 0, ?2) "
			       "RETURNING id",
			       &pp, err)) < 0)
		return al_ledger__commit(st, &txn, r, err);
	al_db_bind_text(pp, 1, name, -1);
	al_db_bind_int64(pp, 2, now);
	int rc = al_db_step(pp, err);
	if (rc == AL_EEXIST)
		return al_ledger__commit(
			st, &txn, al_fail(err, AL_EEXIST, 0, "project %s already exists", name),
			err);
	if (rc != AL_DB_ROW)
		return al_ledger__commit(st, &txn, db_fail(err, "create project"), err);
	int64_t pid = returned_id(pp);
	if ((r = al_db_prepare(db,
			       "INSERT INTO volumes(project, kind, head, created) VALUES (?1, "
			       "'live', ?2, ?3) "
			       "RETURNING id",
			       &pv, err)) < 0)
		return al_ledger__commit(st, &txn, r, err);
	al_db_bind_int64(pv, 1, pid);
	al_db_bind_blob(pv, 2, empty.b, AL_OID_LEN);
	al_db_bind_int64(pv, 3, now);
	if (al_db_step(pv, err) != AL_DB_ROW)
		return al_ledger__commit(st, &txn, db_fail(err, "create volume"), err);
	int64_t vid = returned_id(pv);
	if ((r = al_db_prepare(db, "UPDATE projects SET volume = ?1 WHERE id = ?2", &up, err)) < 0)
		return al_ledger__commit(st, &txn, r, err);
	al_db_bind_int64(up, 1, vid);
	al_db_bind_int64(up, 2, pid);
	if (al_db_step(up, err) != AL_DB_DONE)
		return al_ledger__commit(st, &txn, db_fail(err, "create project"), err);
	struct vol v = { .id = vid, .project = pid };
	v.head = empty;
	struct al_commit_opts o = { .strategy = AL_STRICT,
				    .author = author,
				    .message = "create project" };
	struct al_commit_result res = { 0 };
	char gbuf[17];
	al_ledger__new_group(gbuf);
	struct commit_req q = { .base = &empty, .incoming = &head, .opts = &o, .kind = "create" };
	if ((r = record_commit(db, al_store_cas(st), &v, &q, &head, &(struct from_parent){ 0 },
			       &res, err)) < 0 ||
	    (r = log_action(
		     st, db,
		     &(struct al_ledger_rec){ .kind = "project_create",
					      .group = gbuf,
					      .project = name,
					      .actor = author,
					      .data = json_pack("{s:o}", "head", jid(&head)) },
		     NULL, err)) < 0)
		return al_ledger__commit(st, &txn, r, err);
	if ((r = al_ledger__commit(st, &txn, 0, err)) < 0)
		return r;
	if (out) {
		memset(out, 0, sizeof(*out));
		snprintf(out->name, sizeof(out->name), "%s", name);
		out->volume = vid;
		out->head = head;
		out->created = now;
		out->commits = 1;
	}
	return 0;
}

static int project_row(struct al_db *db, struct al_db_stmt *st, struct al_project_info *p,
		       struct al_error *err)
{
	memset(p, 0, sizeof(*p));
	copy_text(p->name, sizeof(p->name), st, 0);
	p->volume = al_db_column_int64(st, 1);
	if (get_blob32(st, 2, &p->head) < 0)
		return al_fail(err, AL_ECORRUPT, 0, "project %s has a malformed head", p->name);
	p->created = al_db_column_int64(st, 3);
	p->commits = al_db_column_int64(st, 4);
	(void)db;
	return 0;
}

#define PROJECT_SELECT                                                       \
	"SELECT p.name, p.volume, v.head, p.created, v.seq FROM projects p " \
	"JOIN volumes v ON v.id = p.volume "

int al_project_get(struct al_store *st, const char *name, struct al_project_info *out,
		   struct al_error *err)
{
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0)
		return r;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	if ((r = al_db_prepare(db, PROJECT_SELECT "WHERE p.name = ?1", &q, err)) < 0)
		return r;
	al_db_bind_text(q, 1, name, -1);
	int rc = al_db_step(q, err);
	if (rc == AL_DB_DONE) {
		char n[100];
		al_quote(name, strnlen(name, 80), n, sizeof(n));
		return al_fail(err, AL_ENOTFOUND, 0, "no project %s", n);
	}
	if (rc != AL_DB_ROW)
		return db_fail(err, "projects");
	return project_row(db, q, out, err);
}

int al_project_foreach(struct al_store *st, al_project_fn fn, void *ctx, struct al_error *err)
{
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0)
		return r;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	if ((r = al_db_prepare(db, PROJECT_SELECT "ORDER BY p.name", &q, err)) < 0)
		return r;
	int rc;
	while ((rc = al_db_step(q, err)) == AL_DB_ROW) {
		struct al_project_info p;
		if ((r = project_row(db, q, &p, err)) < 0 || (r = fn(ctx, &p, err)) != 0)
			return r;
	}
	return rc == AL_DB_DONE ? 0 : db_fail(err, "projects");
}

static void read_entry(struct al_db_stmt *st, int col, bool *has, struct al_entry *e)
{
	memset(e, 0, sizeof(*e));
	*has = al_db_column_type(st, col) != AL_DB_NULL &&
	       al_db_column_bytes(st, col + 3) == AL_OID_LEN;
	if (!*has)
		return;
	e->type = (int)al_db_column_int64(st, col);
	e->mode = (unsigned)(int)al_db_column_int64(st, col + 1);
	e->size = (uint64_t)al_db_column_int64(st, col + 2);
	memcpy(e->digest.b, al_db_column_blob(st, col + 3), AL_OID_LEN);
}

int al_project_log(struct al_store *st, const char *project, al_commit_fn fn, void *ctx,
		   struct al_error *err)
{
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0)
		return r;
	struct vol v;
	if ((r = live_volume(db, project, &v, err)) < 0)
		return r;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL, *cq = NULL;
	if ((r = al_db_prepare(
		     db,
		     "SELECT id, seq, parent, base, result, author, message, strategy, kind, "
		     "draft, time FROM commits WHERE volume = ?1 ORDER BY seq",
		     &q, err)) < 0 ||
	    (r = al_db_prepare(
		     db,
		     "SELECT path, copy_path, base_type, base_mode, base_size, base_digest, "
		     "theirs_type, theirs_mode, theirs_size, theirs_digest, ours_type, ours_mode, "
		     "ours_size, ours_digest FROM conflicts WHERE commit_id = ?1 ORDER BY seq",
		     &cq, err)) < 0)
		return r;
	al_db_bind_int64(q, 1, v.id);
	int rc;
	while ((rc = al_db_step(q, err)) == AL_DB_ROW) {
		struct al_commit_info c = { 0 };
		c.seq = al_db_column_int64(q, 1);
		if (get_blob32(q, 2, &c.parent) < 0 || get_blob32(q, 3, &c.base) < 0 ||
		    get_blob32(q, 4, &c.result) < 0)
			return al_fail(err, AL_ECORRUPT, 0, "commit %lld is malformed",
				       (long long)c.seq);
		c.author = al_db_column_text(q, 5);
		c.message = al_db_column_text(q, 6);
		c.strategy = al_db_column_text(q, 7);
		c.kind = al_db_column_text(q, 8);
		c.draft = al_db_column_text(q, 9);
		c.time = al_db_column_int64(q, 10);
		struct al_conflict *cf = NULL;
		size_t ncf = 0, capcf = 0;
		al_db_reset(cq);
		al_db_bind_int64(cq, 1, al_db_column_int64(q, 0));
		while (al_db_step(cq, err) == AL_DB_ROW) {
			if (ncf == capcf) {
				capcf = capcf ? capcf * 2 : 8;
				struct al_conflict *n = realloc(cf, capcf * sizeof(*n));
				if (!n) {
					free(cf);
					return al_fail(err, AL_ENOMEM, ENOMEM, "log");
				}
				cf = n;
			}
			struct al_conflict *x = &cf[ncf++];
			const char *p0 = al_db_column_text(cq, 0);
			const char *p1 = al_db_column_text(cq, 1);
			x->path = strdup(p0 ? p0 : "");
			x->copy_path = p1 ? strdup(p1) : NULL;
			read_entry(cq, 2, &x->has_base, &x->base);
			read_entry(cq, 6, &x->has_theirs, &x->theirs);
			read_entry(cq, 10, &x->has_ours, &x->ours);
		}
		c.conflicts = cf;
		c.nconflicts = ncf;
		r = fn(ctx, &c, err);
		struct al_commit_result tmp = { .conflicts = cf, .nconflicts = ncf };
		al_commit_result_release(&tmp);
		if (r != 0)
			return r;
	}
	return rc == AL_DB_DONE ? 0 : db_fail(err, "log");
}

/* ---- drafts ------------------------------------------------------------- */

static void draft_info(const struct vol *v, struct al_draft_info *d)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->group, sizeof(d->group), "%s", v->group);
	snprintf(d->id, sizeof(d->id), "%s", v->public_id);
	snprintf(d->project, sizeof(d->project), "%s", v->project_name);
	d->base = v->base;
	d->head = v->head;
	snprintf(d->state, sizeof(d->state), "%s", v->state);
	snprintf(d->run, sizeof(d->run), "%s", v->run);
	d->applied = (uint64_t)v->applied;
	d->discarded = (uint64_t)v->discarded;
	d->partial = (uint64_t)v->partial;
	d->created = v->created;
}

int al_volume__draft_create(struct al_store *st, const char *project, const struct al_draft_opts *o,
			    al_volume__draft_hook hook, void *ctx, struct al_draft_info *out,
			    struct al_error *err)
{
	const struct al_oid *content = o->content;
	const char *author = o->author;
	struct al_db *db;
	struct al_db_txn txn;
	int r = begin(st, &db, &txn, err);
	if (r < 0)
		return r;
	struct vol live;
	if ((r = live_volume(db, project, &live, err)) < 0)
		return al_ledger__commit(st, &txn, r, err);
	uint8_t rnd[7];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return al_ledger__commit(st, &txn, al_fail(err, AL_EIO, errno, "draft id"), err);
	char hex[15], id[AL_DRAFT_ID_LEN + 1];
	al_hex(rnd, sizeof(rnd), hex);
	snprintf(id, sizeof(id), "d%.13s", hex);
	_cleanup_db_stmt_ struct al_db_stmt *ins = NULL;
	char group[17];
	if (o->group)
		snprintf(group, sizeof(group), "%s", o->group);
	else
		al_ledger__new_group(group);
	const struct al_oid *base = o->base ? o->base : &live.head;
	if (o->base && (r = al_manifest_stat(al_store_cas(st), o->base, NULL, NULL, err)) < 0)
		return al_ledger__commit(st, &txn, r, err);
	bool empty = !content || al_oid_eq(content, base);
	const char *state = o->close_empty && empty ? AL_DRAFT_EMPTY
			    : o->blocked            ? AL_DRAFT_BLOCKED
						    : AL_DRAFT_OPEN;
	if ((r = al_db_prepare(db,
			       "INSERT INTO volumes(project, kind, head, base, public_id, "
			       "created, grp, state) "
			       "VALUES (?1, 'draft', ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
			       &ins, err)) < 0)
		return al_ledger__commit(st, &txn, r, err);
	al_db_bind_text(ins, 6, group, -1);
	al_db_bind_text(ins, 7, state, -1);
	al_db_bind_int64(ins, 1, live.project);
	al_db_bind_blob(ins, 2, base->b, AL_OID_LEN);
	al_db_bind_blob(ins, 3, base->b, AL_OID_LEN);
	al_db_bind_text(ins, 4, id, -1);
	int64_t now = al_wall_s();
	al_db_bind_int64(ins, 5, now);
	if (al_db_step(ins, err) != AL_DB_ROW)
		return al_ledger__commit(st, &txn, db_fail(err, "create draft"), err);
	struct vol v = live;
	v.id = returned_id(ins);
	v.created = now;
	v.seq = 0;
	v.base = *base;
	v.head = *base;
	v.has_base = true;
	snprintf(v.kind, sizeof(v.kind), "draft");
	snprintf(v.state, sizeof(v.state), "%s", state);
	snprintf(v.public_id, sizeof(v.public_id), "%s", id);
	snprintf(v.group, sizeof(v.group), "%s", group);
	if ((r = log_action(st, db,
			    &(struct al_ledger_rec){ .kind = "draft_create",
						     .group = group,
						     .project = live.project_name,
						     .actor = author,
						     .data = json_pack("{s:s,s:o,s:s}", "draft", id,
								       "base", jid(base), "state",
								       state) },
			    NULL, err)) < 0)
		return al_ledger__commit(st, &txn, r, err);
	if (!empty) {
		struct al_commit_opts co = { .strategy = AL_STRICT,
					     .author = author,
					     .message = "draft content" };
		struct al_commit_result res = { 0 };
		struct commit_req q = { .base = base,
					.incoming = content,
					.opts = &co,
					.kind = "commit",
					.draft = id,
					.group = group };
		r = commit_locked(st, db, &v, &q, &res, err);
		al_commit_result_release(&res);
		if (r < 0)
			return al_ledger__commit(st, &txn, r, err);
	}
	struct al_draft_info info;
	draft_info(&v, &info);
	if (hook && (r = hook(ctx, db, &info, err)) < 0)
		return al_ledger__commit(st, &txn, r, err);
	if ((r = al_ledger__commit(st, &txn, 0, err)) < 0)
		return r;
	if (out)
		*out = info;
	return 0;
}

int al_draft_create_opts(struct al_store *st, const char *project, const struct al_draft_opts *o,
			 struct al_draft_info *out, struct al_error *err)
{
	return al_volume__draft_create(st, project, o, NULL, NULL, out, err);
}

int al_draft_create(struct al_store *st, const char *project, const struct al_oid *content,
		    const char *author, struct al_draft_info *out, struct al_error *err)
{
	struct al_draft_opts o = { .content = content, .author = author };
	return al_volume__draft_create(st, project, &o, NULL, NULL, out, err);
}

int al_draft_get(struct al_store *st, const char *id, struct al_draft_info *out,
		 struct al_error *err)
{
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0)
		return r;
	struct vol v;
	if ((r = draft_volume(db, id, &v, err)) < 0)
		return r;
	draft_info(&v, out);
	return 0;
}

int al_draft_foreach(struct al_store *st, const char *project, al_draft_fn fn, void *ctx,
		     struct al_error *err)
{
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0)
		return r;
	struct vol live;
	if ((r = live_volume(db, project, &live, err)) < 0)
		return r;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	if ((r = al_db_prepare(db,
			       "SELECT " VOL_COLS
			       " FROM volumes v JOIN projects p ON p.id = v.project "
			       "WHERE v.project = ?1 AND v.kind = 'draft' ORDER BY v.id",
			       &q, err)) < 0)
		return r;
	al_db_bind_int64(q, 1, live.project);
	for (;;) {
		struct vol v;
		r = read_vol(q, &v, err);
		if (r == AL_ENOTFOUND)
			return 0;
		if (r < 0)
			return r;
		struct al_draft_info d;
		draft_info(&v, &d);
		if ((r = fn(ctx, &d, err)) != 0)
			return r;
	}
}

int al_draft_commit(struct al_store *st, const char *id, const struct al_oid *base,
		    const struct al_oid *snapshot, const struct al_commit_opts *opts,
		    struct al_commit_result *res, struct al_error *err)
{
	memset(res, 0, sizeof(*res));
	struct al_db *db;
	struct al_db_txn txn;
	struct vol v;
	struct precomputed pre;
	precompute(st, base, snapshot, &pre);
	int r = begin(st, &db, &txn, err);
	if (r < 0) {
		precomputed_release(&pre);
		return r;
	}
	struct commit_req q = { .base = base,
				.incoming = snapshot,
				.opts = opts,
				.kind = "commit",
				.draft = id,
				.pre = &pre };
	hold_checkpoints(st, true);
	if ((r = draft_volume(db, id, &v, err)) == 0) {
		q.group = v.group;
		if (strcmp(v.state, AL_DRAFT_OPEN) != 0)
			r = al_fail(err, AL_ESTATE, 0, "draft %s is %s", id, v.state);
		else
			r = commit_locked(st, db, &v, &q, res, err);
	}
	r = al_ledger__commit(st, &txn, r, err);
	hold_checkpoints(st, false);
	precomputed_release(&pre);
	if (r == AL_ECONFLICT)
		log_refusal(st, db, &q, v.project_name, res);
	return r;
}

/* What a decision takes of each change: keep[i]; for a change taken by
 * hunks, which (sorted, unique), and whether what lands differs from the
 * draft's version. */
struct pick {
	unsigned *hunks; /* NULL: the whole change */
	size_t n;
	bool partial;
};

static void picks_free(struct pick *pick, size_t n)
{
	for (size_t i = 0; pick && i < n; i++)
		free(pick[i].hunks);
	free(pick);
}

static int cmp_unsigned(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return x < y ? -1 : x > y;
}

/* A selected path without its trailing '/'s ("dir/" means dir), checked. */
static int sel_path(const char *path, char sel[AL_PATH_MAX + 1], struct al_error *err)
{
	const char *why;
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len > AL_PATH_MAX)
		return al_fail(err, AL_EINVAL, 0, "path too long");
	memcpy(sel, path, len);
	sel[len] = 0;
	if (!al_path_valid(sel, &why)) {
		char q[300];
		al_quote(sel, strnlen(sel, 200), q, sizeof(q));
		return al_fail(err, AL_EINVAL, 0, "bad path '%s': %s", q, why);
	}
	return 0;
}

static int not_changed(const char *sel, const struct vol *d, struct al_error *err)
{
	char q[300];
	al_quote(sel, strnlen(sel, 200), q, sizeof(q));
	return al_fail(err, AL_EINVAL, 0, "%s is not changed by draft %s", q, d->public_id);
}

/* Hunks can be taken of a text file's modification only. */
static const char *no_hunks_why(const struct al_change_rec *c)
{
	if (c->op == 'A')
		return "added";
	if (c->op == 'D')
		return "deleted";
	if (c->has_old && c->has_new && c->old.type != c->new.type)
		return "of another type than in the base";
	if (c->has_new && c->new.type == AL_T_DIR)
		return "a directory";
	if (c->has_new && c->new.type == AL_T_SYMLINK)
		return "a symlink";
	return NULL;
}

static int pick_hunks(const struct al_changes *ch, const struct vol *d, const char *sel,
		      const struct al_apply_path *ap, struct pick *pick, struct al_error *err)
{
	char q[300];
	al_quote(sel, strnlen(sel, 200), q, sizeof(q));
	if (ap->nhunks == 0)
		return al_fail(err, AL_EINVAL, 0,
			       "%s: an empty list of hunks (to take the whole change, name no "
			       "hunks)",
			       q);
	const struct al_change_rec *c = find_change(ch, sel);
	if (!c)
		return not_changed(sel, d, err);
	const char *why = no_hunks_why(c);
	if (why)
		return al_fail(
			err, AL_EINVAL, 0,
			"%s is %s in draft %s: only its whole change can be taken, not hunks", q,
			why, d->public_id);
	struct pick *p = &pick[c - ch->v];
	if (ap->nhunks > (1u << 20) || p->n + ap->nhunks > (1u << 20))
		return al_fail(err, AL_ELIMIT, 0, "%s: more than %u hunks named", q, 1u << 20);
	unsigned *v = realloc(p->hunks, (p->n + ap->nhunks) * sizeof(*v));
	if (!v)
		return al_fail(err, AL_ENOMEM, ENOMEM, "apply");
	memcpy(v + p->n, ap->hunks, ap->nhunks * sizeof(*v));
	p->hunks = v;
	p->n += ap->nhunks;
	return 0;
}

/* Which of the draft's changes a decision takes: all, none, or those at or
 * under the selected paths plus the directories the draft made for them,
 * and the files taken by hunks. */
static int select_paths(const struct al_changes *ch, const struct vol *d, enum al_apply_mode mode,
			const struct al_apply_path *paths, size_t npaths, bool *keep,
			struct pick *pick, struct al_error *err)
{
	for (size_t i = 0; i < ch->n; i++)
		keep[i] = mode == AL_ACCEPT_ALL;
	if (mode != AL_ACCEPT_SELECTED)
		return 0;
	for (size_t p = 0; p < npaths; p++) {
		char sel[AL_PATH_MAX + 1];
		int r = sel_path(paths[p].path, sel, err);
		if (r == 0 && paths[p].hunks)
			r = pick_hunks(ch, d, sel, &paths[p], pick, err);
		if (r < 0)
			return r;
		if (paths[p].hunks)
			continue;
		bool any = false;
		for (size_t i = 0; i < ch->n; i++) {
			if (!is_under(ch->v[i].path, sel))
				continue;
			any = keep[i] = true;
			/* the directories it lives in, if the draft made them */
			for (size_t j = 0; j < i; j++)
				if (!keep[j] && ch->v[j].has_new &&
				    ch->v[j].new.type ==
					    AL_T_DIR &&is_under(ch->v[i].path, ch->v[j].path))
					keep[j] = true;
		}
		if (!any)
			return not_changed(sel, d, err);
	}
	for (size_t i = 0; i < ch->n; i++) {
		struct pick *p = &pick[i];
		if (!p->hunks)
			continue;
		if (keep[i]) {
			char q[300];
			al_quote(ch->v[i].path, strnlen(ch->v[i].path, 200), q, sizeof(q));
			return al_fail(err, AL_EINVAL, 0,
				       "%s is selected both whole and by hunks: name it one way",
				       q);
		}
		qsort(p->hunks, p->n, sizeof(*p->hunks), cmp_unsigned);
		size_t k = 0;
		for (size_t j = 0; j < p->n; j++)
			if (!k || p->hunks[k - 1] != p->hunks[j])
				p->hunks[k++] = p->hunks[j];
		p->n = k;
		keep[i] = true;
	}
	return 0;
}

/* A file taken by hunks: the base's version with those hunks applied,
 * stored (in the caller's batch); c->new becomes what lands. */
static int hunk_file(struct al_cas *cas, struct al_change_rec *c, struct pick *p,
		     struct al_error *err)
{
	uint8_t *a = NULL, *b = NULL, *out = NULL;
	size_t alen = 0, blen = 0, outlen = 0, nh;
	int r = load_text(cas, &c->old, &a, &alen, err);
	if (r == 0)
		r = load_text(cas, &c->new, &b, &blen, err);
	if (r == 1) {
		char q[300];
		al_quote(c->path, strnlen(c->path, 200), q, sizeof(q));
		r = al_fail(err, AL_EINVAL, 0,
			    "%s is over %u MiB (shown as binary): only its whole change can be "
			    "taken",
			    q, AL_REVIEW_TEXT_MAX >> 20);
	}
	if (r == 0)
		r = al_review_take_hunks(a, alen, b, blen, c->path, p->hunks, p->n, &out, &outlen,
					 &nh, err);
	struct al_entry e = { .type = AL_T_FILE, .mode = c->old.mode, .size = outlen };
	if (r == 0)
		r = al_cas_put(cas, out ? out : (const uint8_t *)"", outlen, &e.digest, err);
	if (r == 0) {
		p->partial = !al_oid_eq(&e.digest, &c->new.digest) || c->old.mode != c->new.mode;
		c->new = e;
	}
	free(a);
	free(b);
	free(out);
	return r;
}

/* The kept changes applied to the draft's base (a file taken by hunks as
 * hunk_file made it). */
static int selected_tree(struct al_cas *cas, const struct vol *d, struct al_changes *ch,
			 const bool *keep, struct pick *pick, struct al_oid *out,
			 struct al_error *err)
{
	struct al_edit *ed = NULL;
	int r = al_cas_begin(cas, err);
	if (r < 0)
		return r;
	for (size_t i = 0; r == 0 && i < ch->n; i++)
		if (keep[i] && pick[i].hunks)
			r = hunk_file(cas, &ch->v[i], &pick[i], err);
	if (r == 0)
		r = al_changes_edits(ch, &ed, err);
	size_t k = 0;
	for (size_t i = 0; r == 0 && i < ch->n; i++)
		if (keep[i])
			ed[k++] = ed[i];
	if (r == 0)
		r = al_manifest_edit(cas, &d->base, ed, k, out, err);
	r = r < 0 ? (al_cas_abort(cas), r) : al_cas_commit(cas, err);
	free(ed);
	return r;
}

static const char *outcome_of(bool keep, const struct pick *p)
{
	return !keep ? "discarded" : p->partial ? "partially_applied" : "applied";
}

/* "1,3,4": a path's hunks as draft_paths keeps them */
static char *hunks_text(const struct pick *p)
{
	size_t cap = p->n * 11 + 1, o = 0;
	char *s = malloc(cap);
	for (size_t i = 0; s && i < p->n; i++)
		o += (size_t)snprintf(s + o, cap - o, "%s%u", i ? "," : "", p->hunks[i]);
	if (s)
		s[o] = 0;
	return s;
}

/* Each change's outcome, in the decision's transaction: a row there
 * already replaced by DELETE + INSERT (db.h's subset; INSERT OR REPLACE is
 * SQLite's alone). */
static int record_outcomes(struct al_db *db, const struct vol *d, const struct al_changes *ch,
			   const bool *keep, const struct pick *pick, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *ins = NULL, *del = NULL;
	int r = al_db_prepare(db,
			      "INSERT INTO draft_paths(volume, path, op, outcome, "
			      "hunks) VALUES (?1,?2,?3,?4,?5)",
			      &ins, err);
	if (r == 0)
		r = al_db_prepare(db, "DELETE FROM draft_paths WHERE volume = ?1 AND path = ?2",
				  &del, err);
	for (size_t i = 0; r == 0 && i < ch->n; i++) {
		char op[2] = { ch->v[i].op, 0 };
		al_db_reset(del);
		al_db_bind_int64(del, 1, d->id);
		al_db_bind_text(del, 2, ch->v[i].path, -1);
		if (al_db_step(del, err) != AL_DB_DONE) {
			r = db_fail(err, "record the draft's outcomes");
			break;
		}
		al_db_reset(ins);
		al_db_bind_int64(ins, 1, d->id);
		al_db_bind_text(ins, 2, ch->v[i].path, -1);
		al_db_bind_text(ins, 3, op, -1);
		al_db_bind_text(ins, 4, outcome_of(keep[i], &pick[i]), -1);
		char *h = pick[i].hunks ? hunks_text(&pick[i]) : NULL;
		if (pick[i].hunks && !h)
			return al_fail(err, AL_ENOMEM, ENOMEM, "apply");
		al_db_bind_text(ins, 5, h, -1); /* NULL binds NULL */
		free(h);
		if (al_db_step(ins, err) != AL_DB_DONE)
			r = db_fail(err, "record the draft's outcomes");
	}
	return r;
}

/* draft_paths.hunks back into numbers; NULL for none. */
static unsigned *parse_hunks(const char *s, size_t *n)
{
	*n = 0;
	if (!s || !*s)
		return NULL;
	size_t cap = 1;
	for (const char *c = s; *c; c++)
		cap += *c == ',';
	unsigned *v = malloc(cap * sizeof(*v));
	for (const char *c = s; v && *c;) {
		char *end;
		unsigned long x = strtoul(c, &end, 10);
		if (end == c || x == 0 || x > UINT32_MAX || *n == cap) {
			free(v);
			*n = 0;
			return NULL;
		}
		v[(*n)++] = (unsigned)x;
		c = *end == ',' ? end + 1 : end;
	}
	return v;
}

int al_draft_path_outcomes(struct al_store *st, const char *id, al_path_outcome_fn fn, void *ctx,
			   struct al_error *err)
{
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0)
		return r;
	struct vol v;
	if ((r = draft_volume(db, id, &v, err)) < 0)
		return r;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	if ((r = al_db_prepare(db,
			       "SELECT path, outcome, op, hunks FROM draft_paths WHERE volume = "
			       "?1 ORDER BY path",
			       &q, err)) < 0)
		return r;
	al_db_bind_int64(q, 1, v.id);
	int rc;
	while ((rc = al_db_step(q, err)) == AL_DB_ROW) {
		const char *op = al_db_column_text(q, 2);
		const char *h = al_db_column_text(q, 3);
		struct al_path_outcome o = { .path = al_db_column_text(q, 0),
					     .outcome = al_db_column_text(q, 1),
					     .op = op ? op[0] : '?' };
		unsigned *hunks = parse_hunks(h, &o.nhunks);
		if (h && *h && !hunks)
			return al_fail(err, AL_ECORRUPT, 0, "draft %s: malformed hunks of %s", id,
				       o.path);
		o.hunks = hunks;
		r = fn(ctx, &o, err);
		free(hunks);
		if (r != 0)
			return r;
	}
	return rc == AL_DB_DONE ? 0 : db_fail(err, "draft outcomes");
}

/* A blocked draft's refusal, naming its run's first violations. */
static int blocked_error(struct al_db *db, const char *id, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	char what[200] = "";
	size_t n = 0, shown = 0;
	const char *run = "?";
	json_t *rec = NULL;
	if (al_db_prepare(db, "SELECT id, record FROM runs WHERE draft = ?1", &q, NULL) == 0) {
		al_db_bind_text(q, 1, id, -1);
		if (al_db_step(q, NULL) == AL_DB_ROW) {
			json_error_t je;
			run = al_db_column_text(q, 0);
			rec = json_loads(al_db_column_text(q, 1), 0, &je);
		}
	}
	json_t *vs = json_object_get(json_object_get(rec, "contract"), "violations"), *x;
	size_t i, len = 0;
	json_array_foreach(vs, i, x) {
		n++;
		const char *k = json_string_value(json_object_get(x, "kind"));
		const char *p = json_string_value(json_object_get(x, "path"));
		if (!p)
			p = json_string_value(json_object_get(x, "pattern"));
		if (!p)
			p = json_string_value(json_object_get(x, "stream"));
		if (shown < 3 && len < sizeof(what) - 1) {
			len += (size_t)snprintf(what + len, sizeof(what) - len, "%s%s%s%s",
						shown ? "; " : "", k ? k : "?", p ? " " : "",
						p ? p : "");
			shown++;
		}
	}
	n += (size_t)json_integer_value(json_object_get(json_object_get(rec, "contract"), "more"));
	int r = al_fail(err, AL_ESTATE, 0,
			"draft %s is blocked: run %s broke its contract (%zu violation%s: %s%s); "
			"it can only be rejected",
			id, run, n, n == 1 ? "" : "s", what, n > shown ? "; …" : "");
	json_decref(rec);
	return r;
}

struct outcome_cb {
	al_outcome_fn fn;
	void *ctx;
};

static int outcome_only(void *ctx, const struct al_path_outcome *o, struct al_error *err)
{
	struct outcome_cb *c = ctx;
	return c->fn(c->ctx, o->path, o->outcome, err);
}

int al_draft_outcomes(struct al_store *st, const char *id, al_outcome_fn fn, void *ctx,
		      struct al_error *err)
{
	struct outcome_cb c = { fn, ctx };
	return al_draft_path_outcomes(st, id, outcome_only, &c, err);
}

/* The apply's ledger fields: what was asked and what became of it. */
static json_t *apply_extra(const char *id, const char *mname, const char *state,
			   const struct al_apply_path *paths, size_t npaths,
			   const struct al_changes *ch, const struct pick *pick,
			   const struct al_commit_result *res)
{
	json_t *jp = json_array(), *jh = json_object();
	for (size_t i = 0; i < npaths; i++)
		json_array_append_new(jp, json_string(paths[i].path));
	for (size_t i = 0; i < ch->n; i++) {
		if (!pick[i].hunks)
			continue;
		json_t *a = json_array();
		for (size_t j = 0; j < pick[i].n; j++)
			json_array_append_new(a, json_integer(pick[i].hunks[j]));
		json_object_set_new(jh, ch->v[i].path, a);
	}
	return json_pack("{s:s,s:s,s:o,s:o,s:s,s:I,s:I,s:I}", "draft", id, "mode", mname, "paths",
			 jp, "hunks", jh, "state", state, "applied", (json_int_t)res->applied,
			 "partial", (json_int_t)res->partial, "discarded",
			 (json_int_t)res->discarded);
}

int al_draft_apply(struct al_store *st, const char *id, enum al_apply_mode mode,
		   const char *const *paths, size_t npaths, const struct al_commit_opts *opts,
		   struct al_commit_result *res, struct al_error *err)
{
	struct al_apply_path *ap = calloc(npaths ? npaths : 1, sizeof(*ap));
	if (!ap) {
		memset(res, 0, sizeof(*res));
		return al_fail(err, AL_ENOMEM, ENOMEM, "apply");
	}
	for (size_t i = 0; i < npaths; i++)
		ap[i].path = paths[i];
	int r = al_draft_apply_sel(st, id, mode, ap, npaths, opts, res, err);
	free(ap);
	return r;
}

static int apply_sel(struct al_store *st, const char *id, enum al_apply_mode mode,
		     const struct al_apply_path *paths, size_t npaths,
		     const struct al_commit_opts *opts, struct al_commit_result *res,
		     struct al_error *err)
{
	if (mode != AL_ACCEPT_ALL && mode != AL_ACCEPT_SELECTED && mode != AL_REJECT_ALL)
		return al_fail(err, AL_EUSAGE, 0, "apply: bad mode");
	if (mode == AL_ACCEPT_SELECTED && npaths == 0)
		return al_fail(err, AL_EINVAL, 0, "accept_selected needs at least one path");
	struct al_db *db;
	struct al_db_txn txn;
	int r = begin(st, &db, &txn, err);
	if (r < 0)
		return r;
	struct vol d, live;
	if ((r = draft_volume(db, id, &d, err)) < 0)
		return al_ledger__commit(st, &txn, r, err);
	id = d.public_id; /* the draft's own id, also when named by its run's */
	if (strcmp(d.state, AL_DRAFT_EMPTY) == 0)
		return al_ledger__commit(st, &txn,
					 al_fail(err, AL_ESTATE, 0,
						 "draft %s is empty (its run changed nothing): "
						 "nothing to apply",
						 id),
					 err);
	if (strcmp(d.state, AL_DRAFT_BLOCKED) == 0 && mode != AL_REJECT_ALL)
		return al_ledger__commit(st, &txn, blocked_error(db, id, err), err);
	if (strcmp(d.state, AL_DRAFT_OPEN) != 0 && strcmp(d.state, AL_DRAFT_BLOCKED) != 0)
		return al_ledger__commit(
			st, &txn,
			al_fail(err, AL_ESTATE, 0, "draft %s was already %s", id, d.state), err);
	if ((r = live_volume(db, d.project_name, &live, err)) < 0)
		return al_ledger__commit(st, &txn, r, err);
	struct al_cas *cas = al_store_cas(st);
	struct al_changes ch;
	if ((r = al_manifest_changes(cas, &d.base, &d.head, &ch, err)) < 0)
		return al_ledger__commit(st, &txn, r, err);
	bool *keep = calloc(ch.n ? ch.n : 1, sizeof(bool));
	struct pick *pick = calloc(ch.n ? ch.n : 1, sizeof(*pick));
	if (!keep || !pick)
		r = al_fail(err, AL_ENOMEM, ENOMEM, "apply");
	if (r == 0)
		r = select_paths(&ch, &d, mode, paths, npaths, keep, pick, err);
	struct al_oid incoming;
	incoming = d.head;
	/* the files taken by hunks are made before anything is judged */
	if (r == 0 && mode == AL_ACCEPT_SELECTED)
		r = selected_tree(cas, &d, &ch, keep, pick, &incoming, err);
	for (size_t i = 0; r == 0 && i < ch.n; i++) {
		*(keep[i] ? &res->applied : &res->discarded) += 1;
		res->partial += keep[i] && pick[i].partial;
	}
	const char *state = mode == AL_REJECT_ALL            ? AL_DRAFT_REJECTED
			    : res->discarded || res->partial ? AL_DRAFT_PARTIAL
							     : AL_DRAFT_APPLIED;
	const char *mname = mode == AL_ACCEPT_ALL        ? "accept_all"
			    : mode == AL_ACCEPT_SELECTED ? "accept_selected"
							 : "reject_all";
	json_t *extra = NULL;
	struct commit_req q = { .base = &d.base,
				.incoming = &incoming,
				.opts = opts,
				.kind = "apply",
				.draft = id,
				.group = d.group,
				/* a file taken in part is not the draft's version:
				 * then the result's counts come from a diff */
				.changes = res->partial ? NULL : &ch,
				.keep = keep };
	if (r == 0) {
		extra = apply_extra(id, mname, state, paths, npaths, &ch, pick, res);
		q.extra = extra;
	}
	if (r == 0 && mode != AL_REJECT_ALL) {
		r = commit_locked(st, db, &live, &q, res, err);
	} else if (r == 0) {
		res->head = live.head;
		r = log_action(st, db,
			       &(struct al_ledger_rec){ .kind = "reject",
							.group = d.group,
							.project = d.project_name,
							.actor = opts ? opts->author : NULL,
							.data = json_incref(extra) },
			       NULL, err);
	}
	json_decref(extra);
	q.extra = NULL;
	if (r == 0)
		r = record_outcomes(db, &d, &ch, keep, pick, err);
	free(keep);
	picks_free(pick, ch.n);
	al_changes_release(&ch);
	if (r < 0) {
		r = al_ledger__commit(st, &txn, r, err);
		if (r == AL_ECONFLICT)
			log_refusal(st, db, &q, d.project_name, res);
		return r;
	}
	_cleanup_db_stmt_ struct al_db_stmt *up = NULL;
	if ((r = al_db_prepare(db,
			       "UPDATE volumes SET state = ?1 WHERE id = ?2 AND state IN ('open', "
			       "'blocked')",
			       &up, err)) < 0)
		return al_ledger__commit(st, &txn, r, err);
	al_db_bind_text(up, 1, state, -1);
	al_db_bind_int64(up, 2, d.id);
	if (al_db_step(up, err) != AL_DB_DONE || al_db_changes(db) != 1)
		return al_ledger__commit(
			st, &txn, al_fail(err, AL_ESTATE, 0, "draft %s changed state", id), err);
	return al_ledger__commit(st, &txn, 0, err);
}

int al_draft_apply_sel(struct al_store *st, const char *id, enum al_apply_mode mode,
		       const struct al_apply_path *paths, size_t npaths,
		       const struct al_commit_opts *opts, struct al_commit_result *res,
		       struct al_error *err)
{
	memset(res, 0, sizeof(*res));
	hold_checkpoints(st, true);
	int r = apply_sel(st, id, mode, paths, npaths, opts, res, err);
	hold_checkpoints(st, false);
	return r;
}
