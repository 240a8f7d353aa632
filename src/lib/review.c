/* review: changes with text diffs.  The diff is libgit2's (git_patch from
 * buffers: the xdiff git uses), not a hand-written one. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "airlock/cas.h"
#include "airlock/review.h"
#include "dl_git.h"
#include "util.h"

static int load_small(struct al_cas *cas, const struct al_entry *e, uint8_t **out, size_t *len,
		      struct al_error *err)
{
	*out = NULL;
	*len = 0;
	if (e->size > AL_REVIEW_TEXT_MAX)
		return 1; /* too large: reported as binary */
	return al_cas_get(cas, &e->digest, out, len, err);
}

static bool looks_binary(const uint8_t *p, size_t n)
{
	/* git's rule: a NUL in the first 8000 bytes */
	return memchr(p, 0, n < 8000 ? n : 8000) != NULL;
}

bool al_review_is_text(const uint8_t *p, size_t n)
{
	if (!p) /* memchr's pointer must not be NULL, even for 0 bytes */
		return n == 0;
	return n <= AL_REVIEW_TEXT_MAX && !looks_binary(p, n);
}

static int git_fail(struct al_error *err, const char *what, const char *path)
{
	const git_error *ge = dl_git.error_last();
	return al_fail(err, AL_EIO, 0, "%s %s: %s", what, path, ge ? ge->message : "libgit2 error");
}

/* The diff review shows and an apply's hunks are numbered by: 3 lines of
 * context, always as text (the caller judged that).  A missing side (NULL)
 * is shown as /dev/null, as git does. */
static int make_patch(git_patch **out, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
		      const char *path, struct al_error *err)
{
	git_diff_options opts;
	dl_git.diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
	opts.context_lines = 3;
	opts.flags = GIT_DIFF_FORCE_TEXT;
	*out = NULL;
	if (dl_git.patch_from_buffers(out, a, alen, a ? path : NULL, b, blen, b ? path : NULL,
				      &opts) < 0)
		return git_fail(err, "diff", path);
	return 0;
}

/* What a file's text diff is made of; the file borrows it until reported. */
struct builder {
	struct al_review_hunk *hunks;
	struct al_review_line *lines;
	size_t nh, nl;
	git_buf unified;
	git_patch *patch; /* the lines' text points into it */
};

/* One side of a diff: has is false for a missing side (shown as /dev/null). */
struct side {
	const uint8_t *p;
	size_t len;
	bool has;
};

static int text_diff(struct al_review_file *f, const struct side *sa, const struct side *sb,
		     bool with_text, struct builder *bd, struct al_error *err)
{
	git_buf *unified = &bd->unified;
	git_patch *patch = NULL;
	int r = make_patch(&patch, sa->has ? sa->p : NULL, sa->len, sb->has ? sb->p : NULL, sb->len,
			   f->path, err);
	if (r < 0)
		return r;
	bd->patch = patch;
	size_t ctx, adds, dels;
	dl_git.patch_line_stats(&ctx, &adds, &dels, patch);
	f->additions = (int)adds;
	f->deletions = (int)dels;
	if (!with_text)
		return 0;
	if (dl_git.patch_to_buf(unified, patch) < 0)
		return al_fail(err, AL_ENOMEM, ENOMEM, "diff");
	f->unified = unified->ptr;
	size_t nh = dl_git.patch_num_hunks(patch), total = 0;
	for (size_t h = 0; h < nh; h++)
		total += (size_t)dl_git.patch_num_lines_in_hunk(patch, h);
	bd->hunks = calloc(nh ? nh : 1, sizeof(*bd->hunks));
	bd->lines = calloc(total ? total : 1, sizeof(*bd->lines));
	if (!bd->hunks || !bd->lines)
		return al_fail(err, AL_ENOMEM, ENOMEM, "diff");
	for (size_t h = 0; h < nh; h++) {
		const git_diff_hunk *gh;
		size_t n;
		dl_git.patch_get_hunk(&gh, &n, patch, h);
		struct al_review_hunk *hk = &bd->hunks[bd->nh++];
		hk->number = (unsigned)h + 1;
		hk->old_start = gh->old_start;
		hk->old_lines = gh->old_lines;
		hk->new_start = gh->new_start;
		hk->new_lines = gh->new_lines;
		hk->header = gh->header;
		hk->lines = &bd->lines[bd->nl];
		for (size_t i = 0; i < n; i++) {
			const git_diff_line *gl;
			dl_git.patch_get_line_in_hunk(&gl, patch, h, i);
			if (gl->origin == GIT_DIFF_LINE_CONTEXT_EOFNL ||
			    gl->origin == GIT_DIFF_LINE_ADD_EOFNL ||
			    gl->origin == GIT_DIFF_LINE_DEL_EOFNL) {
				if (hk->nlines)
					bd->lines[bd->nl - 1].no_newline = true;
				continue;
			}
			struct al_review_line *l = &bd->lines[bd->nl++];
			l->origin = gl->origin == GIT_DIFF_LINE_ADDITION   ? '+'
				    : gl->origin == GIT_DIFF_LINE_DELETION ? '-'
									   : ' ';
			l->old_no = gl->old_lineno;
			l->new_no = gl->new_lineno;
			l->text = gl->content;
			l->len = gl->content_len;
			while (l->len &&
			       (l->text[l->len - 1] == '\n' || l->text[l->len - 1] == '\r'))
				l->len--;
			hk->nlines++;
		}
	}
	f->hunks = bd->hunks;
	f->nhunks = bd->nh;
	return 0;
}

struct rev {
	struct al_cas *cas;
	bool with_text;
	al_review_fn fn;
	void *ctx;
};

static int review_one(void *vctx, const struct al_change *c, struct al_error *err)
{
	struct rev *rv = vctx;
	struct al_review_file f = { .op = c->op, .path = c->path };
	if ((f.has_old = c->old != NULL))
		f.old = *c->old;
	if ((f.has_new = c->new != NULL))
		f.new = *c->new;
	f.type_changed = f.has_old && f.has_new && f.old.type != f.new.type;
	f.mode_changed = f.has_old && f.has_new && f.old.mode != f.new.mode;
	f.content_changed = !f.has_old || !f.has_new || !al_oid_eq(&f.old.digest, &f.new.digest);
	uint8_t *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	int r = 0;
	struct builder bd = { 0 };
	char *ta = NULL, *tb = NULL;
	bool a_file = f.has_old && f.old.type == AL_T_FILE,
	     b_file = f.has_new && f.new.type == AL_T_FILE;
	if (f.has_old && f.old.type == AL_T_SYMLINK &&
	    (r = al_cas_get(rv->cas, &f.old.digest, (uint8_t **)&ta, &alen, err)) == 0)
		ta[alen] = 0; /* al_cas_get allocates one spare byte */
	if (r == 0 && f.has_new && f.new.type == AL_T_SYMLINK &&
	    (r = al_cas_get(rv->cas, &f.new.digest, (uint8_t **)&tb, &blen, err)) == 0)
		tb[blen] = 0;
	f.symlink_old = ta;
	f.symlink_new = tb;
	if (r == 0 && (a_file || b_file) && f.content_changed) {
		int ra = a_file ? load_small(rv->cas, &f.old, &a, &alen, err) : 0;
		int rb = b_file && ra >= 0 ? load_small(rv->cas, &f.new, &b, &blen, err) : 0;
		if (ra < 0 || rb < 0)
			r = ra < 0 ? ra : rb;
		else if (ra == 1 || rb == 1 || (a && looks_binary(a, alen)) ||
			 (b && looks_binary(b, blen)))
			f.binary = true;
		else {
			f.hunks_selectable = c->op == 'M' && a_file && b_file;
			r = text_diff(&f,
				      &(struct side){ a ? a : (const uint8_t *)"",
						      a_file ? alen : 0, a_file },
				      &(struct side){ b ? b : (const uint8_t *)"",
						      b_file ? blen : 0, b_file },
				      rv->with_text, &bd, err);
		}
	}
	if (r == 0)
		r = rv->fn(rv->ctx, &f, err);
	dl_git.patch_free(bd.patch);
	dl_git.buf_dispose(&bd.unified);
	free(bd.hunks);
	free(bd.lines);
	free(a);
	free(b);
	free(ta);
	free(tb);
	return r;
}

int al_review(struct al_cas *cas, const struct al_oid *base, const struct al_oid *head,
	      bool with_text, al_review_fn fn, void *ctx, struct al_error *err)
{
	int r = dl_load_git(err);
	if (r < 0)
		return r;
	struct rev rv = { cas, with_text, fn, ctx };
	return al_manifest_diff(cas, base, head, review_one, &rv, err);
}

int al_review_pair(struct al_cas *cas, const char *path, const struct al_entry *a,
		   const struct al_entry *b, bool with_text, al_review_fn fn, void *ctx,
		   struct al_error *err)
{
	int r = dl_load_git(err);
	if (r < 0)
		return r;
	struct rev rv = { cas, with_text, fn, ctx };
	struct al_change c = { a && b ? 'M' : a ? 'D' : 'A', path, a, b };
	return review_one(&rv, &c, err);
}

/* ---- text built from a diff ------------------------------------------------- */

/* Where each line of a text starts: line i is [at[i], at[i + 1]); a last
 * line without a newline is a line (xdiff splits at '\n' only, so a CR
 * stays in its line). */
struct lines {
	size_t *at;
	size_t n;
};

static int split_lines(const uint8_t *p, size_t len, struct lines *l, struct al_error *err)
{
	size_t n = 0;
	for (const uint8_t *q = p; (q = memchr(q, '\n', len - (size_t)(q - p))); q++)
		n++;
	if (len && p[len - 1] != '\n')
		n++;
	l->n = n;
	if (!(l->at = malloc((n + 1) * sizeof(*l->at))))
		return al_fail(err, AL_ENOMEM, ENOMEM, "hunks");
	size_t k = 0;
	l->at[k++] = 0;
	for (const uint8_t *q = p; k < n && (q = memchr(q, '\n', len - (size_t)(q - p))); q++)
		l->at[k++] = (size_t)(q - p) + 1;
	l->at[n] = len;
	return 0;
}

/* Append lines [from, to) of text p. */
static int put_lines(uint8_t *out, size_t *o, const uint8_t *p, const struct lines *l, size_t from,
		     size_t to)
{
	if (from > to || to > l->n)
		return -1;
	size_t a = l->at[from], b = l->at[to];
	memcpy(out + *o, p + a, b - a);
	*o += b - a;
	return 0;
}

int al_review_take_hunks(const uint8_t *old, size_t oldlen, const uint8_t *new, size_t newlen,
			 const char *path, const unsigned *hunks, size_t n, uint8_t **out,
			 size_t *outlen, size_t *nhunks, struct al_error *err)
{
	*out = NULL;
	*outlen = 0;
	*nhunks = 0;
	if (!al_review_is_text(old, oldlen) || !al_review_is_text(new, newlen))
		return al_fail(err, AL_EINVAL, 0,
			       "%s is binary (or over %u MiB): only its whole change can be taken",
			       path, AL_REVIEW_TEXT_MAX >> 20);
	int r = dl_load_git(err);
	if (r < 0)
		return r;
	git_patch *patch = NULL;
	struct lines lo = { 0 }, ln = { 0 };
	bool *take = NULL;
	uint8_t *buf = NULL;
	/* what the buffers hold ("" for an empty file: libgit2 wants a side) */
	const uint8_t *a = old ? old : (const uint8_t *)"", *b = new ? new : (const uint8_t *)"";
	if ((r = make_patch(&patch, a, oldlen, b, newlen, path, err)) < 0)
		goto out;
	size_t nh = dl_git.patch_num_hunks(patch);
	*nhunks = nh;
	for (size_t i = 0; i < n; i++)
		if (hunks[i] < 1 || hunks[i] > nh) {
			r = al_fail(err, AL_EINVAL, 0, "%s has %zu hunk%s: no hunk %u", path, nh,
				    nh == 1 ? "" : "s", hunks[i]);
			goto out;
		}
	if (!(take = calloc(nh ? nh : 1, sizeof(*take))) || !(buf = malloc(oldlen + newlen + 1))) {
		r = al_fail(err, AL_ENOMEM, ENOMEM, "hunks of %s", path);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		take[hunks[i] - 1] = true;
	if ((r = split_lines(a, oldlen, &lo, err)) < 0 ||
	    (r = split_lines(b, newlen, &ln, err)) < 0)
		goto out;
	size_t o = 0, next = 0; /* bytes written; old's first line not yet written */
	bool all = true;
	for (size_t h = 0; h < nh; h++) {
		const git_diff_hunk *gh;
		size_t nl;
		if (dl_git.patch_get_hunk(&gh, &nl, patch, h) < 0) {
			r = git_fail(err, "hunks of", path);
			goto out;
		}
		/* a range of 0 lines starts after its start line */
		size_t o0 = (size_t)(gh->old_lines ? gh->old_start - 1 : gh->old_start),
		       n0 = (size_t)(gh->new_lines ? gh->new_start - 1 : gh->new_start);
		size_t o1 = o0 + (size_t)gh->old_lines, n1 = n0 + (size_t)gh->new_lines;
		all = all && take[h];
		if (o0 < next || put_lines(buf, &o, a, &lo, next, o0) < 0 ||
		    (take[h] ? put_lines(buf, &o, b, &ln, n0, n1)
			     : put_lines(buf, &o, a, &lo, o0, o1)) < 0) {
			r = al_fail(err, AL_EIO, 0, "hunks of %s: hunk %zu does not fit the file",
				    path, h + 1);
			goto out;
		}
		next = o1;
	}
	if (put_lines(buf, &o, a, &lo, next, lo.n) < 0 ||
	    (all && (o != newlen || memcmp(buf, b, o) != 0))) {
		/* every hunk taken must give the new file: else the lines were
		 * not split as xdiff splits them */
		r = al_fail(err, AL_EIO, 0, "hunks of %s: the hunks do not rebuild the file", path);
		goto out;
	}
	*outlen = o;
	if (o)
		*out = steal_ptr(buf);
out:
	free(buf);
	free(take);
	free(lo.at);
	free(ln.at);
	dl_git.patch_free(patch);
	return r;
}

int al_review_merge_lines(const uint8_t *base, size_t baselen, const uint8_t *ours, size_t ourslen,
			  const uint8_t *theirs, size_t theirslen, uint8_t **out, size_t *outlen,
			  struct al_error *err)
{
	*out = NULL;
	*outlen = 0;
	if (!al_review_is_text(base, baselen) || !al_review_is_text(ours, ourslen) ||
	    !al_review_is_text(theirs, theirslen))
		return 0;
	int r = dl_load_git(err);
	if (r < 0)
		return r;
	git_merge_file_input in[3];
	const uint8_t *p[3] = { base, ours, theirs };
	size_t len[3] = { baselen, ourslen, theirslen };
	for (int i = 0; i < 3; i++) {
		dl_git.merge_file_input_init(&in[i], GIT_MERGE_FILE_INPUT_VERSION);
		in[i].ptr = p[i] ? (const char *)p[i] : "";
		in[i].size = len[i];
		/* path NULL, mode 0: the caller merges names and modes */
	}
	git_merge_file_options opts;
	dl_git.merge_file_options_init(&opts, GIT_MERGE_FILE_OPTIONS_VERSION);
	git_merge_file_result res = { 0 };
	if (dl_git.merge_file(&res, &in[0], &in[1], &in[2], &opts) < 0)
		return git_fail(err, "merge", "file");
	if (res.automergeable) {
		if (res.len && !(*out = malloc(res.len)))
			r = al_fail(err, AL_ENOMEM, ENOMEM, "merge");
		else {
			if (res.len)
				memcpy(*out, res.ptr, res.len);
			*outlen = res.len;
			r = 1;
		}
	}
	dl_git.merge_file_result_free(&res);
	return r;
}
