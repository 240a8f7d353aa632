/* libairlock: libgit2, loaded on first use (include/airlock/dl.h).  Only
 * review.c calls it (a review's text diff, an apply's hunks, merge_lines'
 * three-way file merge); include this instead of <git2.h>
 * and call the library through the table (dl_git.patch_free(…)), filled by
 * dl_load_git(), which must succeed before the first call.  Types and
 * constants are the library's own. */
#ifndef AL_DL_GIT_H
#define AL_DL_GIT_H

#include <git2.h>

#include "airlock/error.h"

struct dl_git {
	int (*libgit2_init)(void);
	int (*libgit2_shutdown)(void);
	int (*diff_options_init)(git_diff_options *opts, unsigned int version);
	int (*patch_from_buffers)(git_patch **out, const void *old_buffer, size_t old_len,
				  const char *old_as_path, const void *new_buffer, size_t new_len,
				  const char *new_as_path, const git_diff_options *opts);
	const git_error *(*error_last)(void);
	int (*patch_line_stats)(size_t *total_context, size_t *total_additions,
				size_t *total_deletions, const git_patch *patch);
	int (*patch_to_buf)(git_buf *out, git_patch *patch);
	size_t (*patch_num_hunks)(const git_patch *patch);
	int (*patch_num_lines_in_hunk)(const git_patch *patch, size_t hunk_idx);
	int (*patch_get_hunk)(const git_diff_hunk **out, size_t *lines_in_hunk, git_patch *patch,
			      size_t hunk_idx);
	int (*patch_get_line_in_hunk)(const git_diff_line **out, git_patch *patch, size_t hunk_idx,
				      size_t line_of_hunk);
	void (*patch_free)(git_patch *patch);
	void (*buf_dispose)(git_buf *buffer);
	int (*merge_file_input_init)(git_merge_file_input *opts, unsigned int version);
	int (*merge_file_options_init)(git_merge_file_options *opts, unsigned int version);
	int (*merge_file)(git_merge_file_result *out, const git_merge_file_input *ancestor,
			  const git_merge_file_input *ours, const git_merge_file_input *theirs,
			  const git_merge_file_options *opts);
	void (*merge_file_result_free)(git_merge_file_result *result);
};
extern struct dl_git dl_git;
/* Load libgit2 once per process (thread-safe) and initialise it; an error
 * names the library and its Debian package. */
int dl_load_git(struct al_error *err);

#endif
