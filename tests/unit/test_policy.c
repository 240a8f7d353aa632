/* policy: the deployment's document, read through the connection a
 * process keeps to airlock.db (policy.c), is never stale: another
 * connection's or process's change, a home made again at the same path,
 * and readers on several threads each see the document as it is. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <sqlite3.h>

#include "airlock/policy.h"
#include "airlock/store.h"
#include "fixture.h"

/* A VFS over the default one that counts the opens of an airlock.db (the
 * main database file, not its WAL): how often a read opened it. */
static sqlite3_vfs counting, *base;
static int dir_opens;

static int counting_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out)
{
	(void)v;
	size_t n = name ? strlen(name) : 0;
	if ((flags & SQLITE_OPEN_MAIN_DB) && n >= 11 && !strcmp(name + n - 11, "/airlock.db"))
		__atomic_add_fetch(&dir_opens, 1, __ATOMIC_SEQ_CST);
	return base->xOpen(base, name, f, flags, out);
}

static int setup(void **state)
{
	(void)state;
	base = sqlite3_vfs_find(NULL);
	counting = *base;
	counting.zName = "airlock-count-opens";
	counting.xOpen = counting_open;
	return sqlite3_vfs_register(&counting, 1) == SQLITE_OK ? 0 : -1;
}

static void set_max_pids(const char *home, uint32_t pids)
{
	struct al_error err = { 0 };
	struct al_policy p;
	memset(&p, 0, sizeof(p));
	p.max.pids = pids;
	if (al_policy_set(home, NULL, &p, false, false, "test", &err) < 0)
		fail_msg("policy set: %s", err.msg);
}

static uint64_t max_pids(struct al_store *st)
{
	struct al_error err = { 0 };
	struct al_policy p;
	if (al_policy_effective(st, &p, &err) < 0)
		fail_msg("policy: %s", err.msg);
	return p.max.pids;
}

/* Reads do not open airlock.db again, and a change made through another
 * connection is seen by the next read. */
static void test_deployment_read_kept(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-policy-XXXXXX";
	struct al_store *st = home_store(home);
	struct al_policy builtin;
	al_policy_builtin(&builtin);
	assert_int_equal(max_pids(st), builtin.max.pids);
	int before = dir_opens;
	for (int i = 0; i < 50; i++)
		assert_int_equal(max_pids(st), builtin.max.pids);
	assert_int_equal(dir_opens, before); /* was 50 more: one per read */

	set_max_pids(home, 77); /* through its own connection */
	assert_int_equal(max_pids(st), 77);
	struct al_error err = { 0 };
	struct al_policy got;
	assert_int_equal(al_policy_get(home, NULL, &got, &err), 0);
	assert_int_equal(got.max.pids, 77);

	/* and by another process, a child of this one, which reads the
	 * document through a connection of its own, not the one it
	 * inherited: its first change opens airlock.db once more than its
	 * second */
	pid_t pid = fork();
	if (pid == 0) {
		struct al_error e = { 0 };
		struct al_policy p;
		memset(&p, 0, sizeof(p));
		int opens[3] = { dir_opens };
		for (int i = 1; i < 3; i++) {
			p.max.pids = 34 - (uint32_t)i; /* 33, then 32 */
			if (al_policy_set(home, NULL, &p, false, false, "child", &e) < 0)
				_exit(1);
			opens[i] = dir_opens;
		}
		_exit(opens[1] - opens[0] == opens[2] - opens[1] + 1 ? 0 : 3);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(max_pids(st), 32);
	home_remove(home, st);
}

/* A home removed and made again at the same path is another airlock.db:
 * its document, not the removed file's, is read. */
static void test_deployment_home_remade(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-policy-XXXXXX";
	struct al_store *st = home_store(home);
	set_max_pids(home, 55);
	assert_int_equal(max_pids(st), 55);
	home_remove(home, st);

	struct al_error err = { 0 };
	assert_int_equal(al_home_init(home, &err), 0);
	assert_int_equal(al_store_open(home, "default", &st, &err), 0);
	struct al_policy builtin;
	al_policy_builtin(&builtin);
	assert_int_equal(max_pids(st), builtin.max.pids);
	set_max_pids(home, 44);
	assert_int_equal(max_pids(st), 44);
	home_remove(home, st);
}

/* Another home in the same process: each read is of its own home. */
static void test_deployment_two_homes(void **state)
{
	(void)state;
	char h1[] = "/tmp/airlock-policy-XXXXXX", h2[] = "/tmp/airlock-policy-XXXXXX";
	struct al_store *s1 = home_store(h1), *s2 = home_store(h2);
	set_max_pids(h1, 11);
	set_max_pids(h2, 22);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(max_pids(s1), 11);
		assert_int_equal(max_pids(s2), 22);
	}
	home_remove(h1, s1);
	home_remove(h2, s2);
}

struct reader {
	const char *home;
	int bad;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (al_store_open(r->home, "default", &st, &err) < 0) {
		r->bad++;
		return NULL;
	}
	for (int i = 0; i < 300; i++) {
		struct al_policy p;
		if (al_policy_effective(st, &p, &err) < 0 ||
		    (p.max.pids != 100 && p.max.pids != 200))
			r->bad++;
	}
	al_store_close(st);
	return NULL;
}

/* Readers on four threads while the document changes: each read is one
 * of the documents stored, and the last change is read after. */
static void test_deployment_threads(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-policy-XXXXXX";
	struct al_store *st = home_store(home);
	set_max_pids(home, 100);
	struct reader rs[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		rs[i] = (struct reader){ .home = home };
		assert_int_equal(pthread_create(&t[i], NULL, reader_main, &rs[i]), 0);
	}
	for (int i = 0; i < 20; i++)
		set_max_pids(home, i % 2 ? 100 : 200);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(rs[i].bad, 0);
	}
	set_max_pids(home, 200);
	assert_int_equal(max_pids(st), 200);
	home_remove(home, st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deployment_read_kept),
		cmocka_unit_test(test_deployment_home_remade),
		cmocka_unit_test(test_deployment_two_homes),
		cmocka_unit_test(test_deployment_threads),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
