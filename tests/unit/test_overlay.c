/* overlay: an upper layer applied to its base gives the run's changes:
 * new and modified files, whiteouts as deletions, copy-ups identical to
 * the base as no change; FIFOs are not kept, setuid bits removed (noted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixture.h"

#include "airlock/manifest.h"
#include "airlock/overlay.h"
#include "airlock/store.h"
#include "util.h"

static void test_overlay(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-overlay-XXXXXX";
	struct al_error err = { 0 };
	struct al_store *st = home_store(home);
	sh("mkdir -p %s/base/d && echo one > %s/base/a && echo same > %s/base/s && echo x > "
	   "%s/base/d/gone",
	   home, home, home, home);
	/* the expected result, made by hand */
	sh("cp -a %s/base %s/want && echo two > %s/want/a && rm %s/want/d/gone && echo new > "
	   "%s/want/n && "
	   "echo run > %s/want/suid && chmod 0755 %s/want/suid",
	   home, home, home, home, home, home, home);
	/* the upper layer a run would leave */
	sh("mkdir -p %s/up/d && echo two > %s/up/a && cp -a %s/base/s %s/up/s && echo new > "
	   "%s/up/n && "
	   "echo run > %s/up/suid && chmod 4755 %s/up/suid && mkfifo %s/up/fifo",
	   home, home, home, home, home, home, home, home);
	char p[600];
	snprintf(p, sizeof(p), "%s/up/d/gone", home);
	bool whiteout = mknod(p, S_IFCHR | 0, makedev(0, 0)) == 0; /* needs CAP_MKNOD */

	struct al_import_opts o = { .no_cache = true };
	struct al_import_result base, want;
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/base", home);
	assert_int_equal(al_manifest_import(st, dir, &o, &base, &err), 0);
	if (!whiteout)
		sh("echo x > %s/want/d/gone", home);
	snprintf(dir, sizeof(dir), "%s/want", home);
	assert_int_equal(al_manifest_import(st, dir, &o, &want, &err), 0);

	struct al_oid got;
	struct al_overlay_report rep;
	memset(&rep, 0, sizeof(rep));
	snprintf(dir, sizeof(dir), "%s/up", home);
	if (al_overlay_apply(st, &base.id, dir, &got, &rep, &err) < 0)
		fail_msg("apply: %s", err.msg);
	assert_memory_equal(got.b, want.id.b, AL_OID_LEN);
	assert_int_equal(rep.deleted, whiteout ? 1 : 0);
	assert_int_equal(rep.unchanged_copyups, 1);
	assert_int_equal(rep.neutralised, 2); /* the FIFO and the setuid bit */
	bool fifo_noted = false, suid_noted = false;
	for (size_t i = 0; i < rep.nnotes; i++) {
		fifo_noted |= !strncmp(rep.notes[i], "fifo", 4);
		suid_noted |= !strncmp(rep.notes[i], "suid", 4);
	}
	assert_true(fifo_noted && suid_noted);
	al_overlay_report_release(&rep);

	/* an empty upper layer: the base itself */
	sh("mkdir -p %s/empty", home);
	snprintf(dir, sizeof(dir), "%s/empty", home);
	memset(&rep, 0, sizeof(rep));
	assert_int_equal(al_overlay_apply(st, &base.id, dir, &got, &rep, &err), 0);
	assert_memory_equal(got.b, base.id.b, AL_OID_LEN);
	al_overlay_report_release(&rep);
	home_remove(home, st);
}

static void count_call(void *ctx)
{
	(*(int *)ctx)++;
}

/* The collection tells its caller, once, at the first path kept that only
 * libarchive writes into a bundle; plain paths and deletions never. */
static void test_unplain_called_once(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-overlay-XXXXXX";
	struct al_error err = { 0 };
	struct al_store *st = home_store(home);
	sh("mkdir -p %s/base %s/plain/sub %s/utf %s/long && echo one > %s/base/a && "
	   "echo a > %s/plain/a && echo b > %s/plain/sub/b && "
	   "echo 1 > '%s/utf/\xc3\xa9t\xc3\xa9' && echo 2 > '%s/utf/na\xc3\xafve' && "
	   "echo 3 > %s/long/$(printf 'x%%.0s' $(seq 94))",
	   home, home, home, home, home, home, home, home, home, home);
	struct al_import_opts o = { .no_cache = true };
	struct al_import_result base;
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/base", home);
	assert_int_equal(al_manifest_import(st, dir, &o, &base, &err), 0);
	static const struct {
		const char *upper;
		int calls;
	} cases[] = { { "plain", 0 }, { "utf", 1 }, { "long", 1 } };
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct al_oid got;
		struct al_overlay_report rep;
		int calls = 0;
		snprintf(dir, sizeof(dir), "%s/%s", home, cases[i].upper);
		if (al_overlay_apply_within(st, &base.id, dir, 0, count_call, &calls, &got, &rep,
					    &err) < 0)
			fail_msg("apply: %s", err.msg);
		assert_int_equal(calls, cases[i].calls);
		al_overlay_report_release(&rep);
	}
	home_remove(home, st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overlay),
		cmocka_unit_test(test_unplain_called_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
