/* airlock — review: every change between two snapshots, with a unified
 * diff and its hunks for text files (libgit2's xdiff), sizes and digests
 * for binary ones; and the text operations built on the same diff: a
 * file made of some of a change's hunks (hunk-level accept), and the
 * three-way merge of a file both sides changed (merge_lines). */
#ifndef AIRLOCK_REVIEW_H
#define AIRLOCK_REVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/error.h"
#include "airlock/oid.h"
#include "airlock/manifest.h"

struct al_cas;

/* files larger than this are not diffed as text (reported with sizes) */
#define AL_REVIEW_TEXT_MAX (8u << 20)

struct al_review_line {
	char origin;        /* ' ' context, '-' removed, '+' added */
	int old_no, new_no; /* -1 where the line is not on that side */
	const char *text;   /* without the newline */
	size_t len;
	bool no_newline; /* "\ No newline at end of file" follows */
};

struct al_review_hunk {
	unsigned number; /* from 1, in the file's order: what an apply names */
	int old_start, old_lines, new_start, new_lines;
	const char *header; /* "@@ -1,2 +1,3 @@" */
	const struct al_review_line *lines;
	size_t nlines;
};

struct al_review_file {
	char op; /* A M D */
	const char *path;
	bool has_old, has_new;
	struct al_entry old, new; /* names unset */
	bool content_changed, mode_changed, type_changed;
	bool binary;                           /* not diffed as text: binary or too large */
	bool hunks_selectable;                 /* a text file modified on both sides */
	const char *symlink_old, *symlink_new; /* targets, for symlinks */
	int additions, deletions;              /* text lines */
	const char *unified;                   /* the unified diff, NULL if none */
	const struct al_review_hunk *hunks;
	size_t nhunks;
};

typedef int (*al_review_fn)(void *ctx, const struct al_review_file *f, struct al_error *err);
/* with_text false: no diff text or hunks (counts still computed). */
int al_review(struct al_cas *cas, const struct al_oid *base, const struct al_oid *head,
	      bool with_text, al_review_fn fn, void *ctx, struct al_error *err);
/* One path's two versions (a NULL entry: absent), reviewed as one change. */
int al_review_pair(struct al_cas *cas, const char *path, const struct al_entry *a,
		   const struct al_entry *b, bool with_text, al_review_fn fn, void *ctx,
		   struct al_error *err);

/* Text, as review judges it: at most AL_REVIEW_TEXT_MAX bytes and no NUL in
 * the first 8000 (git's rule). */
bool al_review_is_text(const uint8_t *p, size_t n);

/* The file old becomes when only some hunks of the change old -> new are
 * taken: the hunks as al_review numbers them (from 1; the same diff, so the
 * same numbers), in any order, repeats allowed; every line outside the
 * taken hunks is old's.  *nhunks gets how many hunks the change has.  A
 * number it does not have, or a side that is not text, is AL_EINVAL naming
 * path.  *out is malloc'ed (NULL when empty). */
int al_review_take_hunks(const uint8_t *old, size_t oldlen, const uint8_t *new, size_t newlen,
			 const char *path, const unsigned *hunks, size_t n, uint8_t **out,
			 size_t *outlen, size_t *nhunks, struct al_error *err);

/* A three-way merge of a text file (libgit2's git_merge_file: git's xdiff
 * merge).  1 with *out (malloc'ed) when ours' and theirs' changes to base
 * merge without overlapping; 0 when they overlap or a side is not text
 * (nothing out); < 0 on error. */
int al_review_merge_lines(const uint8_t *base, size_t baselen, const uint8_t *ours, size_t ourslen,
			  const uint8_t *theirs, size_t theirslen, uint8_t **out, size_t *outlen,
			  struct al_error *err);

#endif
