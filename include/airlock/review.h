/* airlock — review: every change between two snapshots, with a unified
 * diff and its hunks for text files (libgit2's xdiff), sizes and digests
 * for binary ones. */
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

#endif
