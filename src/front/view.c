/* view: the JSON form of every object (view.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/auth.h"
#include "airlock/cas.h"
#include "airlock/image.h"
#include "airlock/ledger.h"
#include "airlock/manifest.h"
#include "airlock/review.h"
#include "airlock/run.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "airlock/util.h"
#include "view.h"

json_t *view_id(const struct al_oid *id)
{
	char s[AL_OID_STRLEN + 1];
	al_oid_fmt(id, s);
	return json_string(s);
}

json_t *view_bytes(const char *s, size_t n)
{
	if (al_utf8_valid((const uint8_t *)s, n) && !memchr(s, 0, n))
		return json_stringn(s, n);
	char q[4 * 4096 + 1];
	al_quote(s, n, q, sizeof(q));
	return json_string(q);
}

json_t *view_entry(const struct al_entry *e, const char *target)
{
	if (!e)
		return json_null();
	char mode[8];
	snprintf(mode, sizeof(mode), "%04o", e->mode);
	json_t *o = json_pack("{s:s,s:s,s:I}", "type", al_entry_type_name(e->type), "mode", mode,
			      "size", (json_int_t)e->size);
	if (!al_oid_is_zero(&e->digest)) /* a bundle's directories carry none */
		json_object_set_new(o, "sha256", view_id(&e->digest));
	if (target)
		json_object_set_new(o, "target", view_bytes(target, strlen(target)));
	return o;
}

json_t *view_conflicts(const struct al_conflict *c, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_pack("{s:s}", "path", c[i].path);
		json_object_set_new(o, "copy_path",
				    c[i].copy_path ? json_string(c[i].copy_path) : json_null());
		json_object_set_new(o, "base", view_entry(c[i].has_base ? &c[i].base : NULL, NULL));
		json_object_set_new(o, "theirs",
				    view_entry(c[i].has_theirs ? &c[i].theirs : NULL, NULL));
		json_object_set_new(o, "ours", view_entry(c[i].has_ours ? &c[i].ours : NULL, NULL));
		json_array_append_new(a, o);
	}
	return a;
}

json_t *view_commit_result(const struct al_commit_result *res)
{
	json_t *o = json_pack("{s:I,s:b}", "seq", (json_int_t)res->seq, "rebased", res->rebased);
	if (res->seq == 0) /* nothing was committed (reject_all): a commit's seq starts at 1 */
		json_object_set_new(o, "seq", json_null());
	json_object_set_new(o, "head", view_id(&res->head));
	json_object_set_new(o, "conflicts", view_conflicts(res->conflicts, res->nconflicts));
	json_t *merged = json_array();
	for (size_t i = 0; i < res->nmerged; i++)
		json_array_append_new(merged, json_string(res->merged[i]));
	json_object_set_new(o, "merged", merged);
	return o;
}

json_t *view_error(const struct al_error *err, const struct al_commit_result *conflict)
{
	json_t *e = json_pack("{s:s,s:s}", "code", al_code_name(err->code), "message", err->msg);
	if (conflict && err->code == AL_ECONFLICT) {
		json_object_set_new(e, "head", view_id(&conflict->head));
		json_t *paths = json_array();
		for (size_t i = 0; i < conflict->nconflicts; i++)
			json_array_append_new(paths, json_string(conflict->conflicts[i].path));
		json_object_set_new(e, "paths", paths);
		json_object_set_new(e, "conflicts",
				    view_conflicts(conflict->conflicts, conflict->nconflicts));
	}
	return json_pack("{s:o}", "error", e);
}

json_t *view_apply(const char *draft, const char *mode, const char *strategy,
		   const struct al_apply_path *paths, size_t n)
{
	json_t *o = json_pack("{s:s,s:s}", "draft", draft, "mode", mode);
	/* reject_all commits nothing: no strategy was used */
	json_object_set_new(o, "strategy",
			    strcmp(mode, "reject_all") ? json_string(strategy) : json_null());
	json_t *pa = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(pa, json_string(paths[i].path));
	json_object_set_new(o, "paths", pa);
	json_object_set_new(o, "hunks", json_object()); /* view_apply_result: what was taken */
	return o;
}

json_t *view_image_import(const struct al_import_result *res, const char *name)
{
	json_t *o = json_pack("{s:I,s:I,s:I}", "files", (json_int_t)res->files, "bytes",
			      (json_int_t)res->bytes, "skipped", (json_int_t)res->skipped);
	json_object_set_new(o, "id", view_id(&res->id));
	json_object_set_new(o, "name", name ? json_string(name) : json_null());
	return o;
}

json_t *view_project(const struct al_project_info *p)
{
	json_t *o = json_pack("{s:s,s:I,s:I}", "name", p->name, "commits", (json_int_t)p->commits,
			      "created", (json_int_t)p->created);
	json_object_set_new(o, "head", view_id(&p->head));
	return o;
}

/* Names for a sentence: the first few of a list, then how many more. */
static void name_list(json_t *a, char *buf, size_t n)
{
	size_t o = 0, i, total = json_array_size(a);
	json_t *v;
	buf[0] = 0;
	json_array_foreach(a, i, v) {
		if (i == 10 || o + 8 >= n) {
			snprintf(buf + o, n - o, " and %zu more", total - i);
			return;
		}
		int k = snprintf(buf + o, n - o, "%s%s", i ? ", " : "",
				 json_string_value(v) ? json_string_value(v) : "?");
		o = k < 0 ? o : o + (size_t)k >= n ? n - 1 : o + (size_t)k;
	}
}

/* Where a contract's violation is: its path, pattern or stream. */
const char *contract_where(json_t *v)
{
	static const char *const keys[] = { "path", "pattern", "stream" };
	for (size_t i = 0; i < 3; i++)
		if (json_is_string(json_object_get(v, keys[i])))
			return json_string_value(json_object_get(v, keys[i]));
	return "";
}

/* What the run that made a draft says a reviewer must know before taking
 * its content: marks (machine) and warnings (sentences), and the disk
 * limit's cut files (docs/formats.md).  *disk (borrowed by o) is the
 * record's disk_limit object when the limit was hit. */
static void run_marks(struct al_store *st, const char *run, json_t *o, json_t **disk)
{
	if (disk)
		*disk = NULL;
	json_t *marks = json_array(), *warnings = json_array();
	json_object_set_new(o, "run", run && *run ? json_string(run) : json_null());
	json_object_set_new(o, "marks", marks);
	json_object_set_new(o, "warnings", warnings);
	struct al_run_info info;
	if (!run || !*run || al_run_get(st, run, &info, NULL) < 0)
		return;
	json_t *rec = json_loads(info.record, 0, NULL);
	al_run_info_release(&info);
	if (!rec)
		return;
	char w[1400];
	json_t *limits = json_object_get(rec, "limits");
	if (json_is_true(json_object_get(rec, "cancelled"))) {
		json_array_append_new(marks, json_string("cancelled"));
		snprintf(w, sizeof(w),
			 "run %s was cancelled: the draft holds only what it had written by then",
			 run);
		json_array_append_new(warnings, json_string(w));
	}
	if (json_is_true(json_object_get(rec, "timed_out"))) {
		json_array_append_new(marks, json_string("timed_out"));
		snprintf(w, sizeof(w),
			 "run %s hit its time limit (%lld ms): the draft holds only what it had "
			 "written by then",
			 run, (long long)json_integer_value(json_object_get(limits, "timeout_ms")));
		json_array_append_new(warnings, json_string(w));
	}
	if (json_is_true(json_object_get(rec, "oom"))) {
		json_array_append_new(marks, json_string("oom"));
		snprintf(w, sizeof(w),
			 "run %s hit its memory limit (%lld bytes) and was killed: its changes may "
			 "be incomplete",
			 run, (long long)json_integer_value(json_object_get(limits, "memory")));
		json_array_append_new(warnings, json_string(w));
	}
	if (json_is_true(json_object_get(rec, "disk_limit_hit"))) {
		json_t *d = json_object_get(rec, "disk_limit");
		json_array_append_new(marks, json_string("disk_limit"));
		char cut[600] = "", dropped[600] = "";
		name_list(json_object_get(d, "truncated"), cut, sizeof(cut));
		name_list(json_object_get(d, "dropped"), dropped, sizeof(dropped));
		long long ndropped = json_integer_value(json_object_get(rec, "dropped"));
		snprintf(w, sizeof(w), "run %s hit its disk limit (%lld bytes): %s%s%s%s%s", run,
			 (long long)json_integer_value(json_object_get(limits, "disk")),
			 *cut ? "possibly truncated: " : "", cut,
			 *cut && (*dropped || ndropped) ? "; " : "", *dropped ? "not kept: " : "",
			 *dropped ? dropped : "");
		if (!*cut && !*dropped)
			snprintf(w + strlen(w), sizeof(w) - strlen(w), "%lld files not kept",
				 ndropped);
		json_array_append_new(warnings, json_string(w));
		if (disk && json_is_object(d)) {
			json_object_set(o, "disk_limit", d);
			*disk = d;
		}
	}
	json_t *ct = json_object_get(rec, "contract");
	if (json_is_object(ct)) {
		json_object_set(o, "contract", ct);
		json_t *vs = json_object_get(ct, "violations"), *v;
		size_t nv = json_array_size(vs) +
			    (size_t)json_integer_value(json_object_get(ct, "more")),
		       i;
		if (nv) {
			json_array_append_new(marks, json_string("contract_violated"));
			int n = snprintf(w, sizeof(w),
					 "run %s broke its contract (%zu violation%s, %s):", run,
					 nv, nv == 1 ? "" : "s",
					 json_string_value(json_object_get(ct, "on_violation")));
			json_array_foreach(vs, i, v) {
				if (n < 0 || (size_t)n >= sizeof(w) - 80) {
					snprintf(w + n, sizeof(w) - (size_t)n, " …");
					break;
				}
				n += snprintf(w + n, sizeof(w) - (size_t)n, "%s %s %s",
					      i ? ";" : "",
					      json_string_value(json_object_get(v, "kind")),
					      contract_where(v));
			}
			json_array_append_new(warnings, json_string(w));
		}
		json_t *dropped = json_object_get(ct, "dropped");
		if (json_array_size(dropped)) {
			char names[600] = "";
			name_list(dropped, names, sizeof(names));
			snprintf(w, sizeof(w),
				 "run %s's changes outside its contract were not kept: %s", run,
				 names);
			json_array_append_new(warnings, json_string(w));
		}
	}
	static const char *const streams[] = { "stdout", "stderr" };
	for (int i = 0; i < 2; i++) {
		json_t *s = json_object_get(rec, streams[i]);
		if (!json_is_true(json_object_get(s, "truncated")))
			continue;
		snprintf(w, sizeof(w), "%s_truncated", streams[i]);
		json_array_append_new(marks, json_string(w));
		snprintf(w, sizeof(w), "run %s's %s was cut at %lld bytes (its output limit)", run,
			 streams[i], (long long)json_integer_value(json_object_get(s, "kept")));
		json_array_append_new(warnings, json_string(w));
	}
	json_decref(rec);
}

static json_t *hunk_numbers(const unsigned *h, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(h[i]));
	return a;
}

static int outcome_one(void *ctx, const struct al_path_outcome *oc, struct al_error *err)
{
	(void)err;
	json_t *o = json_pack("{s:s,s:s}", "path", oc->path, "outcome", oc->outcome);
	if (oc->hunks)
		json_object_set_new(o, "hunks", hunk_numbers(oc->hunks, oc->nhunks));
	json_array_append_new(ctx, o);
	return 0;
}

static int hunks_one(void *ctx, const struct al_path_outcome *oc, struct al_error *err)
{
	(void)err;
	if (oc->hunks)
		json_object_set_new(ctx, oc->path, hunk_numbers(oc->hunks, oc->nhunks));
	return 0;
}

json_t *view_draft(struct al_store *st, const struct al_draft_info *d)
{
	json_t *o = json_pack("{s:s,s:s}", "id", d->id, "state", d->state);
	json_object_set_new(o, "base", view_id(&d->base));
	json_object_set_new(o, "head", view_id(&d->head));
	json_object_set_new(o, "created", json_integer(d->created));
	json_object_set_new(o, "project", json_string(d->project));
	json_object_set_new(o, "group", json_string(d->group));
	json_object_set_new(o, "applied", json_integer((json_int_t)d->applied));
	json_object_set_new(o, "discarded", json_integer((json_int_t)d->discarded));
	json_object_set_new(o, "partial", json_integer((json_int_t)d->partial));
	json_t *paths = json_array();
	if (st && d->applied + d->discarded)
		al_draft_path_outcomes(st, d->id, outcome_one, paths, NULL);
	json_object_set_new(o, "paths", paths);
	if (st)
		run_marks(st, d->run, o, NULL);
	return o;
}

json_t *view_apply_result(struct al_store *st, const char *draft, json_t *out,
			  const struct al_commit_result *res)
{
	struct al_draft_info d;
	json_object_set_new(out, "applied", json_integer((json_int_t)res->applied));
	json_object_set_new(out, "discarded", json_integer((json_int_t)res->discarded));
	json_object_set_new(out, "partial", json_integer((json_int_t)res->partial));
	json_t *hunks = json_object();
	al_draft_path_outcomes(st, draft, hunks_one, hunks, NULL);
	json_object_set_new(out, "hunks", hunks);
	if (al_draft_get(st, draft, &d, NULL) == 0) {
		json_object_set_new(out, "state", json_string(d.state));
		run_marks(st, d.run, out, NULL);
	}
	return out;
}

static int project_one(void *ctx, const struct al_project_info *p, struct al_error *err)
{
	(void)err;
	json_array_append_new(ctx, view_project(p));
	return 0;
}

int view_projects(struct al_store *st, json_t *arr, struct al_error *err)
{
	return al_project_foreach(st, project_one, arr, err);
}

static int log_one(void *ctx, const struct al_commit_info *c, struct al_error *err)
{
	(void)err;
	json_t *o = json_pack("{s:I,s:s,s:s,s:s,s:s,s:I}", "seq", (json_int_t)c->seq, "kind",
			      c->kind, "strategy", c->strategy, "author", c->author, "message",
			      c->message, "time", (json_int_t)c->time);
	json_object_set_new(o, "result", view_id(&c->result));
	json_object_set_new(o, "base", view_id(&c->base));
	json_object_set_new(o, "parent", view_id(&c->parent));
	json_object_set_new(o, "draft", c->draft ? json_string(c->draft) : json_null());
	json_object_set_new(o, "conflicts", view_conflicts(c->conflicts, c->nconflicts));
	json_array_append_new(ctx, o);
	return 0;
}

int view_log(struct al_store *st, const char *project, json_t *arr, struct al_error *err)
{
	return al_project_log(st, project, log_one, arr, err);
}

struct drafts_ctx {
	struct al_store *st;
	json_t *arr;
};

static int draft_one(void *ctx, const struct al_draft_info *d, struct al_error *err)
{
	(void)err;
	struct drafts_ctx *c = ctx;
	json_array_append_new(c->arr, view_draft(c->st, d));
	return 0;
}

int view_drafts(struct al_store *st, const char *project, json_t *arr, struct al_error *err)
{
	struct drafts_ctx c = { st, arr };
	return al_draft_foreach(st, project, draft_one, &c, err);
}

static int image_one(void *ctx, const struct al_image_info *im, struct al_error *err)
{
	(void)err;
	json_t *o = json_pack("{s:I}", "created", (json_int_t)im->created);
	json_object_set_new(o, "id", view_id(&im->id));
	json_object_set_new(o, "name", im->name[0] ? json_string(im->name) : json_null());
	json_object_set_new(o, "source",
			    im->source ? view_bytes(im->source, strlen(im->source)) : json_null());
	json_array_append_new(ctx, o);
	return 0;
}

int view_images(struct al_store *st, json_t *arr, struct al_error *err)
{
	return al_image_foreach(st, image_one, arr, err);
}

static int run_one(void *ctx, const struct al_run_info *r, struct al_error *err)
{
	json_t *rec = json_loads(r->record, 0, NULL);
	if (!rec)
		return al_fail(err, AL_ECORRUPT, 0, "run %s: unreadable record", r->id);
	json_array_append_new(ctx, rec);
	return 0;
}

int view_runs(struct al_store *st, const char *project, json_t *arr, struct al_error *err)
{
	return al_run_foreach(st, project, run_one, arr, err);
}

/* The first max bytes of an object (the rest read through, so the digest
 * is checked either way); *more if there were more. */
static int read_prefix(struct al_cas *cas, const struct al_oid *id, size_t max, uint8_t **out,
		       size_t *len, bool *more, struct al_error *err)
{
	struct al_cas_reader *r = NULL;
	int rc = al_cas_reader_open(cas, id, &r, err);
	if (rc < 0)
		return rc;
	uint64_t size = al_cas_reader_size(r);
	size_t n = size < max ? (size_t)size : max;
	uint8_t *buf = malloc(n + 1);
	size_t got = 0;
	if (!buf)
		rc = al_fail(err, AL_ENOMEM, ENOMEM, "out of memory");
	while (rc == 0 && got < n) {
		int64_t k = al_cas_reader_read(r, buf + got, n - got, err);
		if (k <= 0)
			rc = k < 0 ? (int)k : al_fail(err, AL_ECORRUPT, 0, "object ended early");
		else
			got += (size_t)k;
	}
	if (rc == 0)
		rc = al_cas_reader_skip(r, size, err);
	if (rc == 0 && got == size)
		rc = (int)al_cas_reader_read(r, NULL, 0, err); /* verified */
	al_cas_reader_close(r);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	buf[got] = 0;
	*out = buf;
	*len = got;
	*more = got < size;
	return 0;
}

int view_run_output(struct al_store *st, json_t *rec, size_t text_max, struct al_error *err)
{
	static const char *const streams[] = { "stdout", "stderr" };
	for (int i = 0; i < 2; i++) {
		json_t *s = json_object_get(rec, streams[i]);
		struct al_oid id;
		uint8_t *data = NULL;
		size_t len = 0;
		bool more = false;
		if (!json_is_object(s))
			continue; /* a run that failed before it produced output */
		int r = al_oid_parse(json_string_value(json_object_get(s, "blob")), &id, err);
		if (r == 0)
			r = read_prefix(al_store_cas(st), &id, text_max, &data, &len, &more, err);
		if (r < 0)
			return r;
		json_object_set_new(s, "text", view_bytes((const char *)data, len));
		if (more) /* the rest: GET /api/runs/ID/output (streamed) */
			json_object_set_new(s, "text_truncated", json_true());
		free(data);
	}
	return 0;
}

int view_run(struct al_store *st, const char *id, bool with_output, size_t text_max, json_t **out,
	     struct al_error *err)
{
	*out = NULL;
	struct al_run_info info;
	int r = al_run_get(st, id, &info, err);
	if (r < 0)
		return r;
	json_t *rec = json_loads(info.record, 0, NULL);
	al_run_info_release(&info);
	if (!rec)
		return al_fail(err, AL_ECORRUPT, 0, "run %s: unreadable record", id);
	if (with_output && (r = view_run_output(st, rec, text_max, err)) < 0) {
		json_decref(rec);
		return r;
	}
	*out = rec;
	return 0;
}

/* ---- review ---------------------------------------------------------------------- */

struct review_ctx {
	bool stat;
	const char *only; /* one path (the web UI's file view), or NULL: every one */
	json_t *files;
	int nfiles, adds, dels;
	json_t *outcomes;  /* path -> {outcome, hunks?}, for a decided draft */
	json_t *truncated; /* paths the run's disk limit may have cut */
};

static json_t *side(const struct al_review_line *l, bool left)
{
	if (!l)
		return json_null();
	return json_pack("{s:i,s:s%}", "no", left ? l->old_no : l->new_no, "text", l->text, l->len);
}

/* The same hunk as rows of (left, right): context on both sides, a run of
 * removals paired with the run of additions that follows it. */
static json_t *side_by_side(const struct al_review_hunk *h)
{
	json_t *rows = json_array();
	size_t i = 0;
	while (i < h->nlines) {
		const struct al_review_line *l = &h->lines[i];
		if (l->origin == ' ') {
			json_array_append_new(rows, json_pack("{s:o,s:o}", "left", side(l, true),
							      "right", side(l, false)));
			i++;
			continue;
		}
		size_t d0 = i;
		while (i < h->nlines && h->lines[i].origin == '-')
			i++;
		size_t a0 = i;
		while (i < h->nlines && h->lines[i].origin == '+')
			i++;
		size_t nd = a0 - d0, na = i - a0;
		for (size_t k = 0; k < (nd > na ? nd : na); k++)
			json_array_append_new(
				rows,
				json_pack("{s:o,s:o}", "left",
					  side(k < nd ? &h->lines[d0 + k] : NULL, true), "right",
					  side(k < na ? &h->lines[a0 + k] : NULL, false)));
	}
	return rows;
}

static json_t *hunks_json(const struct al_review_file *f)
{
	json_t *hs = json_array();
	for (size_t h = 0; h < f->nhunks; h++) {
		const struct al_review_hunk *hk = &f->hunks[h];
		json_t *lines = json_array();
		for (size_t i = 0; i < hk->nlines; i++) {
			const struct al_review_line *l = &hk->lines[i];
			char og[2] = { l->origin, 0 };
			json_t *lo = json_pack("{s:s,s:s%}", "origin", og, "text", l->text, l->len);
			json_object_set_new(lo, "old",
					    l->old_no > 0 ? json_integer(l->old_no) : json_null());
			json_object_set_new(lo, "new",
					    l->new_no > 0 ? json_integer(l->new_no) : json_null());
			if (l->no_newline)
				json_object_set_new(lo, "no_newline", json_true());
			json_array_append_new(lines, lo);
		}
		json_array_append_new(hs, json_pack("{s:I,s:s,s:i,s:i,s:i,s:i,s:o,s:o}", "number",
						    (json_int_t)hk->number, "header", hk->header,
						    "old_start", hk->old_start, "old_lines",
						    hk->old_lines, "new_start", hk->new_start,
						    "new_lines", hk->new_lines, "lines", lines,
						    "side_by_side", side_by_side(hk)));
	}
	return hs;
}

static int review_one(void *ctx, const struct al_review_file *f, struct al_error *err)
{
	(void)err;
	struct review_ctx *r = ctx;
	if (r->only && strcmp(f->path, r->only) != 0)
		return 0;
	r->nfiles++;
	r->adds += f->additions;
	r->dels += f->deletions;
	char op[2] = { f->op, 0 };
	json_t *o = json_pack("{s:s,s:s,s:b,s:b,s:b,s:b,s:i,s:i,s:b}", "op", op, "path", f->path,
			      "binary", f->binary, "content_changed", f->content_changed,
			      "mode_changed", f->mode_changed, "type_changed", f->type_changed,
			      "additions", f->additions, "deletions", f->deletions,
			      "hunks_selectable", f->hunks_selectable);
	json_object_set_new(o, "old", view_entry(f->has_old ? &f->old : NULL, f->symlink_old));
	json_object_set_new(o, "new", view_entry(f->has_new ? &f->new : NULL, f->symlink_new));
	json_t *oc = json_object_get(r->outcomes, f->path);
	json_t *ocv = json_object_get(oc, "outcome"), *och = json_object_get(oc, "hunks");
	json_object_set_new(o, "outcome", ocv ? json_incref(ocv) : json_null());
	if (och)
		json_object_set(o, "applied_hunks", och);
	size_t i;
	json_t *t;
	json_array_foreach(r->truncated, i, t)
		if (json_is_string(t) && strcmp(json_string_value(t), f->path) == 0)
			json_object_set_new(o, "cut", json_string("truncated"));
	if (!r->stat && f->unified) {
		json_object_set_new(o, "unified", json_string(f->unified));
		json_object_set_new(o, "hunks", hunks_json(f));
	}
	json_array_append_new(r->files, o);
	return 0;
}

static int review_of(struct al_store *st, const char *draft, bool stat, const char *only,
		     json_t **out, struct al_error *err)
{
	*out = NULL;
	struct al_draft_info d;
	int r = al_draft_get(st, draft, &d, err);
	if (r < 0)
		return r;
	json_t *o =
		json_pack("{s:s,s:s,s:s}", "draft", d.id, "project", d.project, "state", d.state);
	json_t *paths = json_array(), *outcomes = json_object(), *disk = NULL, *p;
	size_t i;
	if ((r = al_draft_path_outcomes(st, d.id, outcome_one, paths, err)) < 0) {
		json_decref(paths);
		json_decref(outcomes);
		json_decref(o);
		return r;
	}
	json_array_foreach(paths, i, p)
		json_object_set(outcomes, json_string_value(json_object_get(p, "path")), p);
	json_decref(paths);
	run_marks(st, d.run, o, &disk);
	struct review_ctx c = { .stat = stat,
				.only = only,
				.files = json_array(),
				.outcomes = outcomes,
				.truncated = json_object_get(disk, "truncated") };
	r = al_review(al_store_cas(st), &d.base, &d.head, !stat, review_one, &c, err);
	json_decref(outcomes);
	if (r < 0) {
		json_decref(c.files);
		json_decref(o);
		return r;
	}
	if (only && !c.nfiles) {
		json_decref(c.files);
		json_decref(o);
		char q[300];
		al_quote(only, strnlen(only, 256), q, sizeof(q));
		return al_fail(err, AL_ENOTFOUND, 0, "draft %s changes no path '%s'", d.id, q);
	}
	json_object_set_new(o, "files", c.files);
	json_object_set_new(o, "applied", json_integer((json_int_t)d.applied));
	json_object_set_new(o, "discarded", json_integer((json_int_t)d.discarded));
	json_object_set_new(o, "partial", json_integer((json_int_t)d.partial));
	json_object_set_new(o, "base", view_id(&d.base));
	json_object_set_new(o, "head", view_id(&d.head));
	json_object_set_new(o, "stat",
			    json_pack("{s:i,s:i,s:i}", "files", c.nfiles, "additions", c.adds,
				      "deletions", c.dels));
	*out = o;
	return 0;
}

int view_review(struct al_store *st, const char *draft, bool stat, json_t **out,
		struct al_error *err)
{
	return review_of(st, draft, stat, NULL, out, err);
}

int view_review_path(struct al_store *st, const char *draft, const char *path, json_t **out,
		     struct al_error *err)
{
	return review_of(st, draft, false, path, out, err);
}

/* ---- the ledger ---------------------------------------------------------------- */

static int ledger_one(void *ctx, const struct al_ledger_entry *e, struct al_error *err)
{
	(void)err;
	json_t *j = json_loadb(e->json, e->len, 0, NULL);
	json_array_append_new(ctx, j ? j : json_null());
	return 0;
}

int view_ledger(struct al_store *st, const struct al_ledger_query *q, json_t *arr,
		struct al_error *err)
{
	return al_ledger_foreach(st, q, ledger_one, arr, err);
}

struct show_ctx {
	json_t *entry;
	json_t *text; /* the entry's exact bytes, the leaf's */
	uint8_t leaf[AL_DIGEST_LEN];
};

static int keep_entry(void *ctx, const struct al_ledger_entry *e, struct al_error *err)
{
	(void)err;
	struct show_ctx *s = ctx;
	s->entry = json_loadb(e->json, e->len, 0, NULL);
	s->text = json_stringn(e->json, e->len);
	al_merkle_leaf(e->json, e->len, s->leaf);
	return 0;
}

static int count_change(void *ctx, const struct al_change *c, struct al_error *err)
{
	(void)err;
	json_t *d = ctx;
	const char *k = c->op == 'A' ? "added" : c->op == 'M' ? "modified" : "deleted";
	json_object_set_new(d, k, json_integer(json_integer_value(json_object_get(d, k)) + 1));
	json_t *paths = json_object_get(d, "paths");
	if (json_array_size(paths) < 50) {
		char line[AL_PATH_MAX + 4];
		snprintf(line, sizeof(line), "%c %s", c->op, c->path);
		json_array_append_new(paths, json_string(line));
	}
	return 0;
}

json_t *view_proof(uint8_t (*p)[AL_DIGEST_LEN], size_t n)
{
	json_t *a = json_array();
	char hex[65];
	for (size_t i = 0; i < n; i++) {
		al_hex(p[i], AL_DIGEST_LEN, hex);
		json_array_append_new(a, json_string(hex));
	}
	return a;
}

/* An entry and its inclusion proof in the latest checkpoint, checked. */
struct inclusion {
	json_t *entry, *text;
	uint8_t leaf[AL_DIGEST_LEN];
	struct al_checkpoint cp;
	uint8_t (*proof)[AL_DIGEST_LEN];
	size_t n;
	bool valid;
	char leaf_hex[65], root_hex[65];
};

static void inclusion_release(struct inclusion *in)
{
	json_decref(in->entry);
	json_decref(in->text);
	free(in->proof);
}

static int inclusion(struct al_store *st, uint64_t seq, struct inclusion *in, struct al_error *err)
{
	memset(in, 0, sizeof(*in));
	struct show_ctx s = { 0 };
	int r = al_ledger_get(st, seq, keep_entry, &s, err);
	in->entry = s.entry;
	in->text = s.text;
	memcpy(in->leaf, s.leaf, AL_DIGEST_LEN);
	if (r == 0)
		r = al_ledger_checkpoint(st, &in->cp, err);
	if (r == 0)
		r = al_ledger_inclusion(st, seq, in->cp.size, &in->proof, &in->n, err);
	if (r < 0)
		return r;
	in->valid = al_merkle_verify_inclusion(seq, in->cp.size, in->leaf,
					       (const uint8_t(*)[AL_DIGEST_LEN])in->proof, in->n,
					       in->cp.root);
	al_hex(in->leaf, AL_DIGEST_LEN, in->leaf_hex);
	al_hex(in->cp.root, AL_DIGEST_LEN, in->root_hex);
	return 0;
}

int view_inclusion(struct al_store *st, uint64_t seq, json_t **out, struct al_error *err)
{
	*out = NULL;
	struct inclusion in;
	int r = inclusion(st, seq, &in, err);
	if (r == 0)
		*out = json_pack("{s:I,s:I,s:s,s:s,s:o,s:b}", "entry", (json_int_t)seq, "size",
				 (json_int_t)in.cp.size, "leaf", in.leaf_hex, "root", in.root_hex,
				 "proof", view_proof(in.proof, in.n), "valid", in.valid);
	inclusion_release(&in);
	return r;
}

int view_ledger_entry(struct al_store *st, uint64_t seq, json_t **out, struct al_error *err)
{
	*out = NULL;
	struct inclusion in;
	int r = inclusion(st, seq, &in, err);
	if (r == 0) {
		/* what a verifier needs besides the entry: its exact bytes, and the
		 * checkpoint's signed note, signature and public key (the web UI
		 * checks all of it in the browser) */
		char note[512], sig[2 * AL_ED25519_SIG_LEN + 1], key[2 * AL_ED25519_KEY_LEN + 1];
		uint8_t raw[AL_ED25519_KEY_LEN];
		int nl = al_checkpoint_note(&in.cp, note, sizeof(note));
		al_hex(in.cp.sig, AL_ED25519_SIG_LEN, sig);
		if (al_ledger_pubkey(st, raw, NULL, 0, err) < 0) {
			inclusion_release(&in);
			return -1;
		}
		al_hex(raw, AL_ED25519_KEY_LEN, key);
		json_t *o = json_pack(
			"{s:O,s:O,s:s,s:{s:I,s:s,s:s,s:I,s:s%,s:s,s:s},s:o,s:b}", "entry", in.entry,
			"entry_text", in.text, "leaf", in.leaf_hex, "checkpoint", "size",
			(json_int_t)in.cp.size, "root", in.root_hex, "origin", in.cp.origin, "time",
			(json_int_t)in.cp.time, "note", note, (size_t)(nl > 0 ? nl : 0),
			"signature", sig, "key", key, "inclusion_proof", view_proof(in.proof, in.n),
			"included", in.valid);
		json_t *data = json_object_get(in.entry, "data");
		const char *parent = json_string_value(json_object_get(data, "parent"));
		const char *result = json_string_value(json_object_get(data, "result"));
		struct al_oid a, b;
		if (parent && result && al_oid_parse(parent, &a, NULL) == 0 &&
		    al_oid_parse(result, &b, NULL) == 0) {
			json_t *delta = json_pack("{s:i,s:i,s:i,s:[]}", "added", 0, "modified", 0,
						  "deleted", 0, "paths");
			if (al_manifest_diff(al_store_cas(st), &a, &b, count_change, delta, NULL) ==
			    0)
				json_object_set_new(o, "delta", delta);
			else
				json_decref(delta);
		}
		json_t *content = json_object_get(data, "content"), *c;
		size_t i;
		json_t *texts = json_object();
		json_array_foreach(content, i, c) {
			const char *name = json_string_value(json_object_get(c, "name"));
			const char *id = json_string_value(json_object_get(c, "sha256"));
			struct al_oid d;
			uint8_t *bytes = NULL;
			size_t len = 0;
			bool more = false;
			if (name && id && al_oid_parse(id, &d, NULL) == 0 &&
			    read_prefix(al_store_cas(st), &d, VIEW_TEXT_MAX, &bytes, &len, &more,
					NULL) == 0 &&
			    !more)
				json_object_set_new(texts, name, view_bytes((char *)bytes, len));
			free(bytes);
		}
		json_object_set_new(o, "content", texts);
		*out = o;
	}
	inclusion_release(&in);
	return r;
}

int view_checkpoint(struct al_store *st, json_t **out, struct al_error *err)
{
	*out = NULL;
	struct al_checkpoint cp;
	int r = al_ledger_checkpoint(st, &cp, err);
	if (r < 0)
		return r;
	char line[400], root[65], sig[129];
	al_checkpoint_format(&cp, line, sizeof(line));
	al_hex(cp.root, AL_DIGEST_LEN, root);
	al_hex(cp.sig, 64, sig);
	*out = json_pack("{s:s,s:I,s:s,s:I,s:s,s:s}", "origin", cp.origin, "size",
			 (json_int_t)cp.size, "root", root, "time", (json_int_t)cp.time,
			 "signature", sig, "line", line);
	return 0;
}

/* ---- principals and tokens ------------------------------------------------------ */

static json_t *roles_json(unsigned roles)
{
	static const char *const names[] = { "admin", "author", "reviewer", "agent" };
	json_t *a = json_array();
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (roles & (1u << i))
			json_array_append_new(a, json_string(names[i]));
	return a;
}

static int grant_one(void *ctx, const char *project, struct al_error *err)
{
	(void)err;
	json_array_append_new(ctx, json_string(project));
	return 0;
}

json_t *view_principal(struct al_auth *a, const struct al_principal *p)
{
	json_t *o = json_pack("{s:s,s:s,s:o,s:I}", "tenant", p->tenant, "name", p->name, "roles",
			      roles_json(p->roles), "created", (json_int_t)p->created);
	json_t *grants = json_array();
	struct al_error err;
	al_auth_grant_foreach(a, p->tenant, p->name, grant_one, grants, &err);
	json_object_set_new(o, "projects", grants);
	return o;
}

json_t *view_token(const struct al_token_info *t)
{
	json_t *o = json_pack("{s:s,s:s,s:I,s:b}", "id", t->id, "principal", t->principal,
			      "created", (json_int_t)t->created, "revoked", t->revoked);
	json_object_set_new(o, "expires", t->expires ? json_integer(t->expires) : json_null());
	return o;
}
