/* libairlock: libgit2, loaded on first use (dl_git.h). */
#include <pthread.h>

#include "airlock/dl.h"
#include "dl_git.h"
#include "util.h"

struct dl_git dl_git;

static struct al_error load_err;
static int load_rc;

static void load(void)
{
#define S(f)                                  \
	{                                     \
		"git_" #f, DL_SLOT(dl_git, f) \
	}
	static const struct dl_sym syms[] = {
		S(libgit2_init),
		S(libgit2_shutdown),
		S(diff_options_init),
		S(patch_from_buffers),
		S(error_last),
		S(patch_line_stats),
		S(patch_to_buf),
		S(patch_num_hunks),
		S(patch_num_lines_in_hunk),
		S(patch_get_hunk),
		S(patch_get_line_in_hunk),
		S(patch_free),
		S(buf_dispose),
		S(merge_file_input_init),
		S(merge_file_options_init),
		S(merge_file),
		S(merge_file_result_free),
	};
#undef S
	load_rc = dl_load("libgit2.so.1.5", "libgit2-1.5", syms, ARRAY_SIZE(syms), &load_err);
	if (load_rc == 0)
		dl_git.libgit2_init(); /* once, for the process's life */
}

int dl_load_git(struct al_error *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, load);
	if (load_rc < 0 && err)
		*err = load_err;
	return load_rc;
}
