/* volume: writers on threads (each with its own store handle) commit
 * disjoint paths at once; every commit lands, none is lost; and the conflict
 * naming rules. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "util.h"

#define THREADS 4
#define COMMITS 15

static char home[64];

static void *writer(void *arg)
{
	int id = (int)(intptr_t)arg;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (al_store_open(home, "default", &st, &err) < 0)
		return (void *)1;
	struct al_cas *cas = al_store_cas(st);
	intptr_t failed = 0;
	for (int k = 0; k < COMMITS; k++) {
		struct al_project_info p;
		char path[32], data[32];
		snprintf(path, sizeof(path), "t%d-%02d", id, k);
		int len = snprintf(data, sizeof(data), "%d %d\n", id, k);
		struct al_edit ed = {
			.path = path,
			.op = AL_EDIT_SET,
			.entry = { .type = AL_T_FILE, .mode = 0644, .size = (uint64_t)len }
		};
		struct al_oid snap;
		struct al_commit_result res = { 0 };
		struct al_commit_opts o = { .strategy = AL_REBASE_IF_DISJOINT,
					    .author = "t",
					    .message = path };
		if (al_project_get(st, "p", &p, &err) < 0 || al_cas_begin(cas, &err) < 0 ||
		    al_cas_put(cas, data, (size_t)len, &ed.entry.digest, &err) < 0 ||
		    al_manifest_edit(cas, &p.head, &ed, 1, &snap, &err) < 0 ||
		    al_cas_commit(cas, &err) < 0 ||
		    al_project_commit(st, "p", &p.head, &snap, &o, &res, &err) < 0) {
			fprintf(stderr, "thread %d: %s\n", id, err.msg);
			failed++;
		}
		al_commit_result_release(&res);
	}
	al_store_close(st);
	return (void *)failed;
}

static int count_commit(void *ctx, const struct al_commit_info *c, struct al_error *err)
{
	(void)c;
	(void)err;
	(*(int *)ctx)++;
	return 0;
}

static void test_threaded_writers(void **state)
{
	(void)state;
	snprintf(home, sizeof(home), "/tmp/airlock-vol-XXXXXX");
	assert_non_null(mkdtemp(home));
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	assert_int_equal(al_home_init(home, &err), 0);
	assert_int_equal(al_store_open(home, "default", &st, &err), 0);
	assert_int_equal(al_project_create(st, "p", NULL, "t", NULL, &err), 0);
	pthread_t th[THREADS];
	for (intptr_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, writer, (void *)i), 0);
	for (int i = 0; i < THREADS; i++) {
		void *failed;
		pthread_join(th[i], &failed);
		assert_int_equal((intptr_t)failed, 0);
	}
	struct al_project_info p;
	assert_int_equal(al_project_get(st, "p", &p, &err), 0);
	for (int i = 0; i < THREADS; i++)
		for (int k = 0; k < COMMITS; k++) {
			char path[32];
			struct al_entry e;
			snprintf(path, sizeof(path), "t%d-%02d", i, k);
			if (al_manifest_lookup(al_store_cas(st), &p.head, path, &e, &err) != 0)
				fail_msg("lost update: %s is not in the head", path);
		}
	int n = 0;
	assert_int_equal(al_project_log(st, "p", count_commit, &n, &err), 0);
	assert_int_equal(n, 1 + THREADS * COMMITS);
	al_store_close(st);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", home);
	assert_int_equal(system(cmd), 0);
}

static void test_conflict_names(void **state)
{
	(void)state;
	struct al_oid id = { { 0xab, 0xcd, 0xef, 0x01 } };
	char out[600];
	struct {
		const char *in, *want;
	} cases[] = {
		{ "report.csv", "report.conflict-abcdef01.csv" },
		{ "dir/report.q3.csv", "dir/report.q3.conflict-abcdef01.csv" },
		{ "Makefile", "Makefile.conflict-abcdef01" },
		{ ".bashrc", ".bashrc.conflict-abcdef01" },
		{ "a/b.conflict-12345678.txt", "a/b.conflict-abcdef01.txt" }, /* never nested */
		{ "x.conflict-12345678-2.txt", "x.conflict-abcdef01.txt" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		assert_int_equal(al_conflict_name(cases[i].in, &id, out, sizeof(out)), 0);
		assert_string_equal(out, cases[i].want);
	}
	char longname[300];
	memset(longname, 'n', 250);
	memcpy(longname + 250, ".txt", 5);
	assert_int_equal(al_conflict_name(longname, &id, out, sizeof(out)), 0);
	assert_true(strlen(out) <= 255);
	assert_non_null(strstr(out, ".conflict-abcdef01.txt"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threaded_writers),
		cmocka_unit_test(test_conflict_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
