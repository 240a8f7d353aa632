/* gc: replay's precondition (al_run_inputs_present) says which input of a
 * run the collector removed; a run record retains its inputs while it is
 * inside the retention period, and not after. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "airlock/gc.h"
#include "airlock/manifest.h"
#include "airlock/run.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "util.h"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A run record as run.c writes it, with only what reading it needs. */
static void insert_run(const char *home, const char *id, const char *base, const char *image,
		       int64_t started)
{
	char path[256], *rec = NULL;
	snprintf(path, sizeof(path), "%s/tenants/default/meta.db", home);
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_true(asprintf(&rec,
			     "{\"id\":\"%s\",\"draft\":\"d0000000000000\",\"group\":"
			     "\"g000000000000000\",\"project\":\"p\","
			     "\"exit_code\":0,\"timed_out\":false,\"oom\":false,\"changes\":{"
			     "\"added\":0,\"modified\":0,"
			     "\"deleted\":0},\"started\":%lld,\"base\":\"%s\",\"image\":\"%s\"}",
			     id, (long long)started, base, image) > 0);
	sqlite3_stmt *st = NULL;
	assert_int_equal(
		sqlite3_prepare_v2(db,
				   "INSERT INTO runs(id, project, grp, draft, created, record) "
				   "VALUES (?, 'p', 'g000000000000000', 'd0000000000000', ?, ?)",
				   -1, &st, NULL),
		SQLITE_OK);
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, started);
	sqlite3_bind_text(st, 3, rec, -1, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	/* an imported snapshot is itself retained while recorded: forget it, so
	 * only the run record holds it */
	assert_int_equal(sqlite3_exec(db, "DELETE FROM snapshots WHERE source LIKE '%/base'", NULL,
				      NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	free(rec);
}

static void test_inputs_present(void **state)
{
	(void)state;
	char home[64] = "/tmp/airlock-gc-unit.XXXXXX", dir[128], path[160];
	assert_non_null(mkdtemp(home));
	struct al_error err = { 0 };
	assert_int_equal(al_home_init(home, &err), 0);
	struct al_store *st = NULL;
	assert_int_equal(al_store_open(home, "default", &st, &err), 0);
	snprintf(dir, sizeof(dir), "%s/base", home);
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/only-in-base", dir);
	write_file(path, "the run's input\n");
	struct al_import_result base = { 0 }, image = { 0 };
	assert_int_equal(al_manifest_import(st, dir, &(struct al_import_opts){ .no_cache = true },
					    &base, &err),
			 0);
	snprintf(dir, sizeof(dir), "%s/image", home);
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/bin", dir);
	write_file(path, "an image\n");
	assert_int_equal(al_manifest_import(st, dir, &(struct al_import_opts){ .no_cache = true },
					    &image, &err),
			 0);
	assert_int_equal(al_project_create(st, "p", NULL, "t", NULL, &err), 0);
	char b[AL_OID_STRLEN + 1], im[AL_OID_STRLEN + 1];
	al_oid_fmt(&base.id, b);
	al_oid_fmt(&image.id, im);
	int64_t now = al_wall_s();
	insert_run(home, "r0000000000001", b, im, now);

	assert_int_equal(al_run_inputs_present(st, "r0000000000001", &err), 0);
	assert_int_equal(al_run_inputs_present(st, "r00000000000ff", &err), AL_ENOTFOUND);

	/* forever (the default): nothing the record names goes, even years on */
	struct al_gc_report rep;
	struct al_gc_opts o = { .now = now + 3650 * 86400ll, .actor = "t" };
	assert_int_equal(al_gc_run(st, &o, &rep, &err), 0);
	assert_int_equal(al_run_inputs_present(st, "r0000000000001", &err), 0);

	/* 30 days: inside them the record retains its base; after, it does not */
	assert_int_equal(al_gc_retention_set(st, 30, "t", &err), 0);
	o.now = now + 29 * 86400ll;
	assert_int_equal(al_gc_run(st, &o, &rep, &err), 0);
	assert_int_equal(al_run_inputs_present(st, "r0000000000001", &err), 0);
	o.now = now + 31 * 86400ll;
	assert_int_equal(al_gc_run(st, &o, &rep, &err), 0);
	assert_true(rep.objects >= 2);
	memset(&err, 0, sizeof(err));
	assert_int_equal(al_run_inputs_present(st, "r0000000000001", &err), AL_ENOTFOUND);
	assert_non_null(strstr(err.msg, "cannot be replayed: its base snapshot"));
	assert_non_null(strstr(err.msg, b));
	assert_non_null(strstr(err.msg, "garbage-collected"));
	assert_int_equal(al_gc_snapshot_complete(st, &base.id, &err), AL_ENOTFOUND);
	/* the image's snapshot row, 31 days old, is outside the retention too */
	assert_int_equal(al_gc_snapshot_complete(st, &image.id, &err), AL_ENOTFOUND);
	al_store_close(st);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", home);
	assert_int_equal(system(cmd), 0);
}

static void test_retention_range(void **state)
{
	(void)state;
	char home[64] = "/tmp/airlock-gc-unit.XXXXXX";
	assert_non_null(mkdtemp(home));
	struct al_error err = { 0 };
	assert_int_equal(al_home_init(home, &err), 0);
	struct al_store *st = NULL;
	assert_int_equal(al_store_open(home, "default", &st, &err), 0);
	int64_t d = 0;
	assert_int_equal(al_gc_retention_get(st, &d, &err), 0);
	assert_int_equal(d, AL_GC_FOREVER);
	assert_int_equal(al_gc_retention_set(st, -2, "t", &err), AL_EINVAL);
	assert_int_equal(al_gc_retention_set(st, AL_GC_RETENTION_MAX_DAYS + 1, "t", &err),
			 AL_EINVAL);
	assert_int_equal(al_gc_retention_get(st, &d, &err), 0);
	assert_int_equal(d, AL_GC_FOREVER);
	assert_int_equal(al_gc_retention_set(st, 7, "t", &err), 0);
	assert_int_equal(al_gc_retention_get(st, &d, &err), 0);
	assert_int_equal(d, 7);
	al_store_close(st);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", home);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inputs_present),
		cmocka_unit_test(test_retention_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
