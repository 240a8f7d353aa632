/* review: the per-file changes between two snapshots, with unified text
 * diffs (libgit2 xdiff): a modified text file's hunk and line counts, an
 * added and a deleted file, a binary file not diffed as text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture.h"

#include "airlock/manifest.h"
#include "airlock/review.h"
#include "airlock/store.h"
#include "util.h"

struct seen {
	char ops[128];
	int text_add, text_del, nhunks;
	char header[64], unified[512];
	bool bin_binary;
};

static int on_file(void *ctx, const struct al_review_file *f, struct al_error *err)
{
	(void)err;
	struct seen *s = ctx;
	size_t n = strlen(s->ops);
	snprintf(s->ops + n, sizeof(s->ops) - n, "%c:%s ", f->op, f->path);
	if (!strcmp(f->path, "t.txt")) {
		s->text_add = f->additions, s->text_del = f->deletions, s->nhunks = (int)f->nhunks;
		if (f->nhunks)
			snprintf(s->header, sizeof(s->header), "%s", f->hunks[0].header);
		snprintf(s->unified, sizeof(s->unified), "%s", f->unified ? f->unified : "");
	}
	if (!strcmp(f->path, "bin"))
		s->bin_binary = f->binary;
	return 0;
}

static void test_review(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-review-XXXXXX";
	struct al_error err = { 0 };
	struct al_store *st = home_store(home);
	sh("mkdir -p %s/a && printf '1\\n2\\n3\\n4\\n5\\n' > %s/a/t.txt && echo bye > %s/a/old && "
	   "printf 'x\\0y' > %s/a/bin",
	   home, home, home, home);
	sh("cp -a %s/a %s/b && printf '1\\n2\\nthree\\n4\\n5\\n6\\n' > %s/b/t.txt && rm %s/b/old "
	   "&& echo hi > %s/b/new && "
	   "printf 'x\\0z' > %s/b/bin",
	   home, home, home, home, home, home);
	struct al_import_opts o = { .no_cache = true };
	struct al_import_result ra, rb;
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/a", home);
	assert_int_equal(al_manifest_import(st, dir, &o, &ra, &err), 0);
	snprintf(dir, sizeof(dir), "%s/b", home);
	assert_int_equal(al_manifest_import(st, dir, &o, &rb, &err), 0);

	struct seen s;
	memset(&s, 0, sizeof(s));
	if (al_review(al_store_cas(st), &ra.id, &rb.id, true, on_file, &s, &err) < 0)
		fail_msg("review: %s", err.msg);
	assert_string_equal(s.ops, "M:bin A:new D:old M:t.txt ");
	assert_true(s.bin_binary);
	assert_int_equal(s.text_add, 2);
	assert_int_equal(s.text_del, 1);
	assert_int_equal(s.nhunks, 1);
	assert_string_equal(s.header, "@@ -1,5 +1,6 @@\n"); /* as libgit2 gives it */
	assert_non_null(strstr(s.unified, "-3\n+three\n"));
	assert_non_null(strstr(s.unified, "+6\n"));

	/* the same snapshot on both sides: nothing */
	memset(&s, 0, sizeof(s));
	assert_int_equal(al_review(al_store_cas(st), &ra.id, &ra.id, true, on_file, &s, &err), 0);
	assert_string_equal(s.ops, "");
	/* an unknown snapshot */
	struct al_oid nosuch = { { 1 } };
	assert_true(al_review(al_store_cas(st), &ra.id, &nosuch, true, on_file, &s, &err) < 0);
	home_remove(home, st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_review),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
