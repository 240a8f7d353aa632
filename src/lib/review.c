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
	const uint8_t *a = sa->p, *b = sb->p;
	size_t alen = sa->len, blen = sb->len;
	bool has_a = sa->has, has_b = sb->has;
	git_buf *unified = &bd->unified;
	git_diff_options opts;
	dl_git.diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
	opts.context_lines = 3;
	opts.flags = GIT_DIFF_FORCE_TEXT;
	git_patch *patch = NULL;
	/* a missing side is shown as /dev/null, as git does */
	if (dl_git.patch_from_buffers(&patch, has_a ? a : NULL, alen, has_a ? f->path : NULL,
				      has_b ? b : NULL, blen, has_b ? f->path : NULL, &opts) < 0) {
		const git_error *ge = dl_git.error_last();
		return al_fail(err, AL_EIO, 0, "diff %s: %s", f->path,
			       ge ? ge->message : "libgit2 error");
	}
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
		else
			r = text_diff(&f,
				      &(struct side){ a ? a : (const uint8_t *)"",
						      a_file ? alen : 0, a_file },
				      &(struct side){ b ? b : (const uint8_t *)"",
						      b_file ? blen : 0, b_file },
				      rv->with_text, &bd, err);
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
