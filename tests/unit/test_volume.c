/* volume: writers on threads (each with its own store handle) commit
 * disjoint paths at once; every commit lands, none is lost; and the conflict
 * naming rules. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <cmocka.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "db.h"
#include "sqlite_util.h"
#include "util.h"
#include "volume_private.h"

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

/* n files <prefix>/NNNNN added to from; their bytes added to *bytes */
static struct al_oid add_files(struct al_store *st, const struct al_oid *from, const char *prefix,
			       int n, uint64_t *bytes)
{
	struct al_cas *cas = al_store_cas(st);
	struct al_error err = { 0 };
	struct al_edit *ed = calloc((size_t)n + 1, sizeof(*ed));
	char(*paths)[32] = calloc((size_t)n, sizeof(*paths));
	assert_non_null(ed);
	assert_non_null(paths);
	assert_int_equal(al_cas_begin(cas, &err), 0);
	ed[0] = (struct al_edit){ .path = prefix,
				  .op = AL_EDIT_SET,
				  .entry = { .type = AL_T_DIR, .mode = 0755 } };
	for (int i = 0; i < n; i++) {
		char data[48];
		int len = snprintf(data, sizeof(data), "%s file %d\n", prefix, i);
		snprintf(paths[i], sizeof(paths[i]), "%s/%05d", prefix, i);
		ed[i + 1] = (struct al_edit){
			.path = paths[i],
			.op = AL_EDIT_SET,
			.entry = { .type = AL_T_FILE, .mode = 0644, .size = (uint64_t)len }
		};
		assert_int_equal(al_cas_put(cas, data, (size_t)len, &ed[i + 1].entry.digest, &err),
				 0);
		*bytes += (uint64_t)len;
	}
	struct al_oid out;
	assert_int_equal(al_manifest_edit(cas, from, ed, (size_t)n + 1, &out, &err), 0);
	assert_int_equal(al_cas_commit(cas, &err), 0);
	free(ed);
	free(paths);
	return out;
}

struct snap_counts {
	struct al_oid id;
	bool found;
	uint64_t files, bytes;
};

static int snap_counts(void *ctx, const struct al_snapshot_info *s, struct al_error *err)
{
	(void)err;
	struct snap_counts *c = ctx;
	if (al_oid_eq(&s->id, &c->id)) {
		c->found = true;
		c->files = s->files;
		c->bytes = s->bytes;
	}
	return 0;
}

static void assert_counts(struct al_store *st, const struct al_oid *id, uint64_t files,
			  uint64_t bytes)
{
	struct snap_counts c = { .id = *id };
	struct al_error err = { 0 };
	assert_int_equal(al_store_snapshot_foreach(st, snap_counts, &c, &err), 0);
	assert_true(c.found);
	assert_int_equal(c.files, files);
	assert_int_equal(c.bytes, bytes);
}

static void commit_ok(struct al_store *st, const struct al_oid *base, const struct al_oid *snap,
		      bool rebased)
{
	struct al_commit_opts o = { .strategy = AL_REBASE_IF_DISJOINT, .author = "t" };
	struct al_commit_result res = { 0 };
	struct al_error err = { 0 };
	assert_int_equal(al_project_commit(st, "q", base, snap, &o, &res, &err), 0);
	assert_int_equal(res.rebased, rebased);
	al_commit_result_release(&res);
}

static bool gc_lock_free(struct al_store *st)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/gc.lock", al_store_dir(st));
	int fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	bool is_free = flock(fd, LOCK_EX | LOCK_NB) == 0;
	assert_true(is_free || errno == EWOULDBLOCK);
	close(fd);
	return is_free;
}

/* What a commit computes before meta.db's lock (volume.c precompute): the
 * result's file counts are right whether the changes came from there (a
 * commit onto its base, a rebase) or, past its bound of 4,096 changes,
 * from the locked path; a commit through a handle that stored nothing
 * holds the gc.lock pin from before those reads until it is idle; a bad
 * snapshot or project is refused as before, nothing moved. */
static void test_precomputed(void **state)
{
	(void)state;
	char dir[] = "/tmp/airlock-pre-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct al_error err = { 0 };
	struct al_store *st = NULL, *st2 = NULL;
	assert_int_equal(al_home_init(dir, &err), 0);
	assert_int_equal(al_store_open(dir, "default", &st, &err), 0);
	assert_int_equal(al_project_create(st, "q", NULL, "t", NULL, &err), 0);
	struct al_project_info p;
	assert_int_equal(al_project_get(st, "q", &p, &err), 0);
	uint64_t bytes = 0, b1 = 0, b2 = 0;
	/* onto its base: 3 changes, then 5,001 (past the bound) */
	struct al_oid a = add_files(st, &p.head, "a", 3, &bytes);
	commit_ok(st, &p.head, &a, false);
	assert_counts(st, &a, 3, bytes);
	struct al_oid b = add_files(st, &a, "b", 5000, &bytes);
	commit_ok(st, &a, &b, false);
	assert_counts(st, &b, 5003, bytes);
	/* rebased: theirs from before the lock (2 changes + a directory) */
	struct al_oid c = add_files(st, &b, "c", 2, &b1), d = add_files(st, &b, "d", 4, &b2);
	commit_ok(st, &b, &c, false);
	commit_ok(st, &b, &d, true);
	assert_int_equal(al_project_get(st, "q", &p, &err), 0);
	assert_counts(st, &p.head, 5009, bytes + b1 + b2);
	/* rebased, theirs past the bound: computed under the lock */
	struct al_oid base = p.head;
	uint64_t b3 = 0, b4 = 0;
	struct al_oid e = add_files(st, &base, "e", 4100, &b3),
		      f = add_files(st, &base, "f", 1, &b4);
	commit_ok(st, &base, &f, false);
	commit_ok(st, &base, &e, true);
	assert_int_equal(al_project_get(st, "q", &p, &err), 0);
	assert_counts(st, &p.head, 5009 + 4101, bytes + b1 + b2 + b3 + b4);

	/* a handle that stored nothing: pinned by the commit, from its reads */
	struct al_oid g = add_files(st, &p.head, "g", 1, &b4);
	al_store_release_memory(st);
	assert_true(gc_lock_free(st));
	assert_int_equal(al_store_open(dir, "default", &st2, &err), 0);
	commit_ok(st2, &p.head, &g, false);
	assert_false(gc_lock_free(st));
	al_store_release_memory(st2);
	assert_true(gc_lock_free(st));

	/* refusals as before: the project first, then the snapshot */
	struct al_oid bogus;
	memset(bogus.b, 0x5a, sizeof(bogus.b));
	struct al_commit_result res = { 0 };
	assert_int_equal(al_project_commit(st, "nope", &g, &bogus, NULL, &res, &err), AL_ENOTFOUND);
	assert_non_null(strstr(err.msg, "no project"));
	al_commit_result_release(&res);
	int r = al_project_commit(st, "q", &g, &bogus, NULL, &res, &err);
	assert_true(r < 0 && r != AL_ECONFLICT);
	assert_null(strstr(err.msg, "no project"));
	al_commit_result_release(&res);
	struct al_project_info p2;
	assert_int_equal(al_project_get(st, "q", &p2, &err), 0);
	assert_true(al_oid_eq(&p2.head, &g));
	al_store_close(st2);
	al_store_close(st);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* Where SQLite makes its temporary files (SQLITE_TMPDIR, read once when
 * SQLite starts: main sets it before any test opens a database). */
static char sqltmp[] = "/tmp/airlock-sqltmp-XXXXXX";

/* A file made in sqltmp since the watch in began (IN_CREATE). */
static bool made_temp_file(int in)
{
	char ev[4096];
	return read(in, ev, sizeof(ev)) > 0;
}

/* The draft's hook changes 40 pages that existed before the transaction,
 * one row (one 4 KiB page) per statement. */
static int change_pages(void *ctx, struct al_db *db, const struct al_draft_info *d,
			struct al_error *err)
{
	(void)ctx;
	(void)d;
	for (int i = 1; i <= 40; i++) {
		char sql[128];
		snprintf(sql, sizeof(sql),
			 "UPDATE scratch SET v = substr(v, 2) || 'x' WHERE rowid = %d", i);
		if (al_db_exec(db, sql, err) < 0)
			return -1;
	}
	return 0;
}

/* An INSERT ... RETURNING id is ended once its id is read: while it ran
 * (until the commit), SQLite journaled every page the later statements of
 * the transaction changed, to undo that one statement alone, and past
 * 64 KiB in memory wrote the journal to a new file in /var/tmp: in every
 * run's draft (the run's record and ledger entry come after the draft's
 * row).  Here a hook changes 160 KiB of pages after the draft's row: no
 * temporary file.  The same pages changed by one statement do make one,
 * so the watch sees SQLite's files. */
static void test_returning_ended(void **state)
{
	(void)state;
	char dir[] = "/tmp/airlock-ret-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	assert_int_equal(al_home_init(dir, &err), 0);
	assert_int_equal(al_store_open(dir, "default", &st, &err), 0);
	assert_int_equal(al_project_create(st, "p", NULL, "t", NULL, &err), 0);
	char meta[200];
	snprintf(meta, sizeof(meta), "%s/tenants/default/meta.db", dir);
	sqlite3 *db = NULL;
	assert_int_equal(al_sqlite_open(meta, NULL, &db, &err), 0);
	assert_int_equal(al_sqlite_exec(db, "CREATE TABLE scratch(v TEXT)", &err), 0);
	for (int i = 0; i < 40; i++)
		assert_int_equal(
			al_sqlite_exec(db, "INSERT INTO scratch VALUES (printf('%3000s', 'a'))",
				       &err),
			0);

	int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	assert_true(in >= 0);
	assert_true(inotify_add_watch(in, sqltmp, IN_CREATE) >= 0);
	struct al_draft_opts o = { .author = "t" };
	struct al_draft_info d, got;
	if (al_volume__draft_create(st, "p", &o, change_pages, NULL, &d, &err) < 0)
		fail_msg("%s", err.msg);
	assert_false(made_temp_file(in));
	assert_int_equal(al_draft_get(st, d.id, &got, &err), 0); /* the row is kept */
	assert_string_equal(got.state, AL_DRAFT_OPEN);
	/* a draft with content: its commit (its own row, head and ledger
	 * entry) comes between the draft's row and the hook */
	struct al_project_info p;
	assert_int_equal(al_project_get(st, "p", &p, &err), 0);
	struct al_edit ed = { .path = "f",
			      .op = AL_EDIT_SET,
			      .entry = { .type = AL_T_FILE, .mode = 0644, .size = 3 } };
	struct al_cas *cas = al_store_cas(st);
	struct al_oid snap;
	assert_int_equal(al_cas_begin(cas, &err), 0);
	assert_int_equal(al_cas_put(cas, "hi\n", 3, &ed.entry.digest, &err), 0);
	assert_int_equal(al_manifest_edit(cas, &p.head, &ed, 1, &snap, &err), 0);
	assert_int_equal(al_cas_commit(cas, &err), 0);
	o.content = &snap;
	if (al_volume__draft_create(st, "p", &o, change_pages, NULL, &d, &err) < 0)
		fail_msg("%s", err.msg);
	assert_false(made_temp_file(in));
	assert_int_equal(al_draft_get(st, d.id, &got, &err), 0);
	assert_memory_equal(got.head.b, snap.b, AL_OID_LEN);
	/* the same pages, one statement inside a transaction: a file */
	assert_int_equal(al_sqlite_exec(db,
					"BEGIN IMMEDIATE; INSERT INTO scratch VALUES ('x'); "
					"UPDATE scratch SET v = substr(v, 2) || 'y'; COMMIT",
					&err),
			 0);
	assert_true(made_temp_file(in));
	close(in);
	sqlite3_close(db);
	al_store_close(st);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	assert_non_null(mkdtemp(sqltmp));
	setenv("SQLITE_TMPDIR", sqltmp, 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threaded_writers),
		cmocka_unit_test(test_conflict_names),
		cmocka_unit_test(test_precomputed),
		cmocka_unit_test(test_returning_ended),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(sqltmp);
	return failed;
}
