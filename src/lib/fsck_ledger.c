/* fsck against the ledger: the tables that repeat what the ledger says
 * (run records, commits, heads, drafts' decisions) must say the same.  The
 * ledger is the truth (its own integrity is `audit verify`'s); every
 * difference is named.  One pass over the ledger, one over each table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fsck_private.h"
#include "db.h"
#include "store_private.h"
#include "util.h"

struct truth {
	/* run id -> "<sha256 of its (last) run entry's data, canonical> <seq>":
	 * a digest, not the data, so the check's memory is not the ledger's */
	json_t *runs;
	/* "<volume>:<seq>" -> {parent, base, result} ("live:<project>" for a live volume) */
	json_t *commits;
	json_t *initial;    /* "live:<project>" -> head at creation; "<draft id>" -> base */
	json_t *decided;    /* draft id -> "apply" | "reject" */
	json_t *run_drafts; /* draft id -> run id (a run closes its own empty draft) */
};

static void truth_free(struct truth *t)
{
	json_decref(t->runs);
	json_decref(t->commits);
	json_decref(t->initial);
	json_decref(t->decided);
	json_decref(t->run_drafts);
}

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

/* sha256 of v's canonical form (sorted keys, compact), as hex: two values
 * are json_equal exactly when their canonical forms are the same bytes */
static int canon_digest(json_t *v, char out[AL_OID_STRLEN + 1])
{
	char *c = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	if (!c)
		return -1;
	struct al_oid d;
	al_sha256(c, strlen(c), d.b);
	free(c);
	al_oid_fmt(&d, out);
	return 0;
}

static int read_ledger(struct al_db *db, struct truth *t, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(db, "SELECT kind, project, entry, seq FROM ledger ORDER BY seq", &q,
			      err);
	if (r < 0)
		return r;
	int rc;
	while ((rc = al_db_step(q, err)) == AL_DB_ROW) {
		const char *kind = al_db_column_text(q, 0);
		const char *project = al_db_column_text(q, 1);
		json_t *e = json_loadb(al_db_column_blob(q, 2), al_db_column_bytes(q, 2), 0, NULL);
		json_t *d = json_object_get(e, "data");
		char key[256];
		if (!e || !json_is_object(d)) {
			json_decref(e);
			continue; /* unreadable entries are audit verify's to name */
		}
		if (!strcmp(kind, "run") && *str(d, "id")) {
			char fact[AL_OID_STRLEN + 24];
			if (canon_digest(d, fact) < 0) {
				json_decref(e);
				return al_fail(err, AL_ENOMEM, ENOMEM, "fsck");
			}
			snprintf(fact + AL_OID_STRLEN, sizeof(fact) - AL_OID_STRLEN, " %lld",
				 (long long)al_db_column_int64(q, 3));
			json_object_set_new(t->runs, str(d, "id"), json_string(fact));
			if (json_is_string(json_object_get(d, "draft")))
				json_object_set_new(t->run_drafts, str(d, "draft"),
						    json_string(str(d, "id")));
		} else if (!strcmp(kind, "commit") || !strcmp(kind, "apply")) {
			const char *vol = str(d, "volume");
			if (!strcmp(vol, "live"))
				snprintf(key, sizeof(key), "live:%s:%lld", project ? project : "",
					 (long long)json_integer_value(json_object_get(d, "seq")));
			else
				snprintf(key, sizeof(key), "%s:%lld", vol,
					 (long long)json_integer_value(json_object_get(d, "seq")));
			json_object_set_new(t->commits, key,
					    json_pack("{s:s,s:s,s:s}", "parent", str(d, "parent"),
						      "base", str(d, "base"), "result",
						      str(d, "result")));
			if (!strcmp(kind, "apply") && *str(d, "draft"))
				json_object_set_new(t->decided, str(d, "draft"),
						    json_string("apply"));
		} else if (!strcmp(kind, "reject") && *str(d, "draft")) {
			json_object_set_new(t->decided, str(d, "draft"), json_string("reject"));
		} else if (!strcmp(kind, "project_create") && project) {
			snprintf(key, sizeof(key), "live:%s", project);
			json_object_set_new(t->initial, key, json_string(str(d, "head")));
		} else if (!strcmp(kind, "draft_create") && *str(d, "draft")) {
			json_object_set_new(t->initial, str(d, "draft"),
					    json_string(str(d, "base")));
		}
		json_decref(e);
	}
	return rc < 0 ? al_error_prefix(err, "ledger: ") : 0;
}

/* The first key whose value differs between a and b (objects). */
static const char *first_difference(json_t *a, json_t *b)
{
	const char *k;
	json_t *v;
	json_object_foreach(a, k, v) {
		if (!json_equal(v, json_object_get(b, k)))
			return k;
	}
	json_object_foreach(b, k, v) {
		if (!json_object_get(a, k))
			return k;
	}
	return "?";
}

static const struct al_oid zero;

/* Does the record differ from its ledger entry (fact: "<digest> <seq>",
 * read_ledger's)?  1 with the first differing key in what, 0, or an error.
 * Only a difference reads the entry again. */
static int differs(struct al_db *db, json_t *rec, const char *fact, char what[128],
		   struct al_error *err)
{
	char mine[AL_OID_STRLEN + 1];
	if (canon_digest(rec, mine) < 0)
		return al_fail(err, AL_ENOMEM, ENOMEM, "fsck");
	if (!strncmp(mine, fact, AL_OID_STRLEN))
		return 0;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(db, "SELECT entry FROM ledger WHERE seq = ?1", &q, err);
	if (r < 0)
		return r;
	al_db_bind_int64(q, 1, strtoll(fact + AL_OID_STRLEN, NULL, 10));
	if ((r = al_db_step(q, err)) < 0)
		return r;
	json_t *e = r == AL_DB_ROW
			    ? json_loadb(al_db_column_blob(q, 0), al_db_column_bytes(q, 0), 0, NULL)
			    : NULL;
	snprintf(what, 128, "%s", first_difference(rec, json_object_get(e, "data")));
	json_decref(e);
	return 1;
}

static int check_runs(struct al_db *db, struct truth *t, al_fsck_problem_fn problem, void *ctx,
		      struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(db, "SELECT id, record FROM runs ORDER BY created, id", &q, err);
	if (r < 0)
		return r;
	json_t *seen = json_object();
	int rc;
	char what[128];
	while ((rc = al_db_step(q, err)) == AL_DB_ROW) {
		const char *id = al_db_column_text(q, 0);
		json_t *rec = json_loads(al_db_column_text(q, 1), 0, NULL);
		json_t *led = json_object_get(t->runs, id);
		json_object_set_new(seen, id, json_true());
		if (!rec)
			problem(ctx, "ledger", &zero, "run %s: its record is not readable JSON",
				id);
		else if (!strcmp(str(rec, "outcome"), "running"))
			; /* provisional: its entry comes when it ends (or at recovery) */
		else if (!led)
			problem(ctx, "ledger", &zero,
				"run %s: recorded, but no ledger entry says so", id);
		else if ((r = differs(db, rec, json_string_value(led), what, err)) < 0) {
			json_decref(rec);
			return r;
		} else if (r > 0)
			problem(ctx, "ledger", &zero,
				"run %s: its record differs from its ledger entry in '%s'", id,
				what);
		json_decref(rec);
	}
	const char *k;
	json_t *v;
	json_object_foreach(t->runs, k, v) {
		if (!json_object_get(seen, k))
			problem(ctx, "ledger", &zero,
				"run %s: in the ledger, but its record is gone", k);
	}
	json_decref(seen);
	return rc < 0 ? al_error_prefix(err, "runs: ") : 0;
}

static void id_of(const void *blob, int n, char out[AL_OID_STRLEN + 1])
{
	if (n == AL_OID_LEN)
		al_oid_fmt(blob, out);
	else
		snprintf(out, AL_OID_STRLEN + 1, "?");
}

static int check_commits(struct al_db *db, struct truth *t, al_fsck_problem_fn problem, void *ctx,
			 struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(
		db,
		"SELECT v.kind, v.public_id, p.name, c.seq, c.parent, c.base, c.result, c.kind "
		"FROM commits c JOIN volumes v ON v.id = c.volume JOIN projects p ON p.id = "
		"v.project "
		"ORDER BY c.id",
		&q, err);
	if (r < 0)
		return r;
	json_t *seen = json_object();
	int rc;
	while ((rc = al_db_step(q, err)) == AL_DB_ROW) {
		char key[256], parent[AL_OID_STRLEN + 1], base[AL_OID_STRLEN + 1],
			result[AL_OID_STRLEN + 1];
		bool live = !strcmp(al_db_column_text(q, 0), "live");
		const char *pub = al_db_column_text(q, 1), *proj = al_db_column_text(q, 2);
		long long seq = al_db_column_int64(q, 3);
		if (live)
			snprintf(key, sizeof(key), "live:%s:%lld", proj, seq);
		else
			snprintf(key, sizeof(key), "%s:%lld", pub ? pub : "?", seq);
		id_of(al_db_column_blob(q, 4), al_db_column_bytes(q, 4), parent);
		id_of(al_db_column_blob(q, 5), al_db_column_bytes(q, 5), base);
		id_of(al_db_column_blob(q, 6), al_db_column_bytes(q, 6), result);
		const char *what = live ? proj : pub;
		if (!strcmp(al_db_column_text(q, 7), "create")) {
			/* a project's first commit is its project_create entry */
			char ik[256];
			snprintf(ik, sizeof(ik), "live:%s", proj);
			const char *w = json_string_value(json_object_get(t->initial, ik));
			if (!w || strcmp(w, result))
				problem(ctx, "ledger",
					al_db_column_bytes(q, 6) == AL_OID_LEN
						? al_db_column_blob(q, 6)
						: &zero,
					"project %s: created with %s, the ledger says %s", proj,
					result, w ? w : "nothing");
			continue;
		}
		json_object_set_new(seen, key, json_true());
		json_t *led = json_object_get(t->commits, key);
		if (!led)
			problem(ctx, "ledger",
				al_db_column_bytes(q, 6) == AL_OID_LEN ? al_db_column_blob(q, 6)
								       : &zero,
				"commit %lld of %s%s: in the history, but no ledger entry says so",
				seq, live ? "project " : "draft ", what);
		else if (strcmp(str(led, "result"), result) || strcmp(str(led, "parent"), parent) ||
			 strcmp(str(led, "base"), base))
			problem(ctx, "ledger",
				al_db_column_bytes(q, 6) == AL_OID_LEN ? al_db_column_blob(q, 6)
								       : &zero,
				"commit %lld of %s%s: the history says %s, the ledger %s", seq,
				live ? "project " : "draft ", what, result, str(led, "result"));
	}
	const char *k;
	json_t *v;
	json_object_foreach(t->commits, k, v) {
		if (!json_object_get(seen, k))
			problem(ctx, "ledger", &zero,
				"commit %s: in the ledger, but not in the history", k);
	}
	json_decref(seen);
	return rc < 0 ? al_error_prefix(err, "commits: ") : 0;
}

/* A head is the result of its volume's last commit, or what it was made
 * with; a draft that is not open was decided by an apply or a reject (or
 * closed by its run). */
static int check_heads(struct al_db *db, struct truth *t, al_fsck_problem_fn problem, void *ctx,
		       struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(
		db,
		"SELECT v.kind, v.public_id, p.name, v.head, v.state, "
		"(SELECT c.result FROM commits c WHERE c.volume = v.id ORDER BY c.seq DESC LIMIT "
		"1) "
		"FROM volumes v JOIN projects p ON p.id = v.project ORDER BY v.id",
		&q, err);
	if (r < 0)
		return r;
	int rc;
	while ((rc = al_db_step(q, err)) == AL_DB_ROW) {
		bool live = !strcmp(al_db_column_text(q, 0), "live");
		const char *pub = al_db_column_text(q, 1), *proj = al_db_column_text(q, 2);
		const char *state = al_db_column_text(q, 4);
		char head[AL_OID_STRLEN + 1], want[AL_OID_STRLEN + 1], key[256];
		id_of(al_db_column_blob(q, 3), al_db_column_bytes(q, 3), head);
		const struct al_oid *hb =
			al_db_column_bytes(q, 3) == AL_OID_LEN ? al_db_column_blob(q, 3) : &zero;
		if (al_db_column_type(q, 5) != AL_DB_NULL) {
			id_of(al_db_column_blob(q, 5), al_db_column_bytes(q, 5), want);
		} else {
			snprintf(key, sizeof(key), live ? "live:%s" : "%s",
				 live ? proj : (pub ? pub : "?"));
			const char *w = json_string_value(json_object_get(t->initial, key));
			snprintf(want, sizeof(want), "%s", w ? w : "?");
		}
		if (strcmp(head, want))
			problem(ctx, "ledger", hb,
				"%s %s: its head is not what the ledger says (%s)",
				live ? "project" : "draft", live ? proj : pub, want);
		if (!live && pub) {
			const char *d = json_string_value(json_object_get(t->decided, pub));
			bool by_run = json_object_get(t->run_drafts, pub) != NULL;
			if (!strcmp(state, "open") && d)
				problem(ctx, "ledger", hb,
					"draft %s: open, but the ledger has its %s", pub, d);
			else if (strcmp(state, "open") && !d && !by_run)
				problem(ctx, "ledger", hb,
					"draft %s: %s, but no apply or reject in the ledger "
					"decided it",
					pub, state);
		}
	}
	return rc < 0 ? al_error_prefix(err, "volumes: ") : 0;
}

int al_fsck__ledger(struct al_store *st, al_fsck_problem_fn problem, void *ctx,
		    struct al_error *err)
{
	struct al_db *db;
	int r = al_store__meta_db(st, &db, err);
	if (r < 0)
		return r;
	struct truth t = { json_object(), json_object(), json_object(), json_object(),
			   json_object() };
	if (!t.runs || !t.commits || !t.initial || !t.decided || !t.run_drafts) {
		truth_free(&t);
		return al_fail(err, AL_ENOMEM, ENOMEM, "fsck");
	}
	/* one snapshot of the database for the whole comparison */
	_cleanup_db_txn_ struct al_db_txn txn = { 0 };
	if ((r = al_db_begin(db, AL_DB_READ, &txn, err)) < 0) {
		truth_free(&t);
		return r;
	}
	if ((r = read_ledger(db, &t, err)) == 0 &&
	    (r = check_runs(db, &t, problem, ctx, err)) == 0 &&
	    (r = check_commits(db, &t, problem, ctx, err)) == 0)
		r = check_heads(db, &t, problem, ctx, err);
	al_db_rollback(&txn); /* it read only */
	truth_free(&t);
	return r;
}
