/* The modules on the metadata seam (src/lib/db.h), through their own
 * public calls, on each engine: a store whose metadata is meta.db, and
 * (when AIRLOCK_TEST_PG names a PostgreSQL migrated by `airlock admin
 * metadata migrate`, as the service role: t0143) a store whose metadata is
 * that database for one tenant.  The same scenario gives the same answers:
 * projects and commits (volume.c: INSERT … RETURNING id, the head's
 * compare-and-swap), integrations (integ.c), images (image.c: unnamed ones,
 * a name imported again keeping its place), snapshots (store.c), and a
 * ledger whose export verifies (ledger.c); on PostgreSQL another tenant's
 * connection sees none of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "airlock/cas.h"
#include "airlock/gc.h"
#include "airlock/image.h"
#include "airlock/integ.h"
#include "airlock/ledger.h"
#include "airlock/manifest.h"
#include "airlock/run.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "db.h"
#include "fixture.h"
#include "store_private.h"
#include "util.h"

struct engine {
	bool pg;
	char home[64];
	char tenant[40];
};

/* A store for e's tenant, its metadata on e's engine. */
static struct al_store *open_store(struct engine *e, const char *tenant)
{
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (al_store_open(e->home, "default", &st, &err) < 0)
		fail_msg("store: %s", err.msg);
	if (e->pg) {
		struct al_db *db = NULL;
		if (al_db_open_postgres(getenv("AIRLOCK_TEST_PG"), tenant, &db, &err) < 0)
			fail_msg("postgres: %s", err.msg);
		al_store__use_meta_db(st, db);
	}
	return st;
}

static int setup(void **state, bool pg)
{
	struct engine *e = calloc(1, sizeof(*e));
	e->pg = pg;
	snprintf(e->home, sizeof(e->home), "/tmp/airlock-engines-XXXXXX");
	if (!mkdtemp(e->home))
		return -1;
	/* a tenant of its own on the shared database, each run */
	snprintf(e->tenant, sizeof(e->tenant), "t%d-%s", (int)getpid(), strrchr(e->home, '-') + 1);
	for (char *c = e->tenant; *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
	struct al_error err = { 0 };
	if (al_home_init(e->home, &err) < 0)
		return -1;
	*state = e;
	return 0;
}
static int setup_sqlite(void **state)
{
	return setup(state, false);
}
static int setup_pg(void **state)
{
	return setup(state, true);
}
static int teardown(void **state)
{
	struct engine *e = *state;
	al_rm_tree(e->home);
	free(e);
	return 0;
}

/* a call that must succeed, failing the test with its error's words */
#define OK(call)                                            \
	do {                                                \
		if ((call) < 0)                             \
			fail_msg("%s: %s", #call, err.msg); \
	} while (0)

static int count_commit(void *ctx, const struct al_commit_info *c, struct al_error *err)
{
	(void)c;
	(void)err;
	(*(int *)ctx)++;
	return 0;
}

struct names {
	char s[256];
	int64_t first, last; /* created */
};
static int image_name(void *ctx, const struct al_image_info *im, struct al_error *err)
{
	(void)err;
	struct names *n = ctx;
	size_t l = strlen(n->s);
	snprintf(n->s + l, sizeof(n->s) - l, "%s,", *im->name ? im->name : "-");
	if (!l)
		n->first = im->created;
	n->last = im->created;
	return 0;
}

static int count_snap(void *ctx, const struct al_snapshot_info *s, struct al_error *err)
{
	(void)s;
	(void)err;
	(*(int *)ctx)++;
	return 0;
}

static int count_entry(void *ctx, const struct al_ledger_entry *en, struct al_error *err)
{
	(void)en;
	(void)err;
	(*(int *)ctx)++;
	return 0;
}

static void scenario(void **state)
{
	struct engine *e = *state;
	struct al_error err = { 0 };
	struct al_store *st = open_store(e, e->tenant);

	/* volume.c: a project, two commits, a stale one refused */
	OK(al_project_create(st, "p", NULL, "t", NULL, &err));
	struct al_project_info p;
	OK(al_project_get(st, "p", &p, &err));
	assert_true(p.volume > 0);
	struct al_oid base = p.head, s1 = put_file(st, &base, "a.txt", "one\n");
	struct al_commit_opts o = { .strategy = AL_STRICT, .author = "t", .message = "m1" };
	struct al_commit_result res = { 0 };
	OK(al_project_commit(st, "p", &base, &s1, &o, &res, &err));
	al_commit_result_release(&res);
	struct al_oid s2 = put_file(st, &s1, "b.txt", "two\n");
	memset(&res, 0, sizeof(res));
	OK(al_project_commit(st, "p", &s1, &s2, &o, &res, &err));
	al_commit_result_release(&res);
	struct al_oid s3 = put_file(st, &s1, "a.txt", "stale\n");
	memset(&res, 0, sizeof(res));
	assert_true(al_project_commit(st, "p", &s1, &s3, &o, &res, &err) < 0); /* base moved */
	al_commit_result_release(&res);
	OK(al_project_get(st, "p", &p, &err));
	assert_memory_equal(p.head.b, s2.b, AL_OID_LEN);
	int n = 0;
	OK(al_project_log(st, "p", count_commit, &n, &err));
	assert_int_equal(n, 3); /* the first, and two */
	assert_int_equal(al_project_create(st, "p", NULL, "t", NULL, &err), AL_EEXIST);

	/* integ.c: created, granted twice (once kept), listed, deleted */
	struct al_integ_spec spec = { .name = "gh",
				      .base_url = "https://api.example.com/",
				      .header = "Authorization: Bearer @secret",
				      .secret = "s3cret",
				      .actor = "t" };
	OK(al_integ_create(st, &spec, &err));
	assert_int_equal(al_integ_create(st, &spec, &err), AL_EEXIST);
	OK(al_integ_grant(st, "gh", "p", NULL, "t", &err));
	OK(al_integ_grant(st, "gh", "p", NULL, "t", &err));
	json_t *list = NULL;
	OK(al_integ_list(st, &list, &err));
	char *text = json_dumps(list, JSON_COMPACT | JSON_SORT_KEYS);
	assert_non_null(strstr(text, "\"base_url\":\"https://api.example.com\""));
	assert_non_null(strstr(text, "\"projects\":[\"p\"]"));
	assert_null(strstr(text, "s3cret"));
	free(text);
	json_decref(list);
	assert_int_equal(al_integ_usable(st, (const char *const[]){ "gh", NULL }, "p", NULL, &err),
			 0);
	assert_int_equal(al_integ_usable(st, (const char *const[]){ "gh", NULL }, "q", NULL, &err),
			 AL_EDENIED);
	/* rotated: the secret alone (the header kept), then with a header;
	 * the grant kept; an unknown one and a bad header change nothing */
	assert_int_equal(al_integ_rotate(st, "nope", NULL, "x", "t", &err), AL_ENOTFOUND);
	assert_int_equal(al_integ_rotate(st, "gh", "Host: @secret", "x", "t", &err), AL_EINVAL);
	OK(al_integ_rotate(st, "gh", NULL, "n3w", "t", &err));
	OK(al_integ_rotate(st, "gh", "X-Key: @secret", "n3wer", "t", &err));
	OK(al_integ_list(st, &list, &err));
	text = json_dumps(list, JSON_COMPACT | JSON_SORT_KEYS);
	assert_non_null(strstr(text, "\"header\":\"X-Key\""));
	assert_non_null(strstr(text, "\"projects\":[\"p\"]"));
	free(text);
	json_decref(list);
	assert_int_equal(al_integ_usable(st, (const char *const[]){ "gh", NULL }, "p", NULL, &err),
			 0);
	OK(al_integ_delete(st, "gh", "t", &err));
	assert_int_equal(al_integ_delete(st, "gh", "t", &err), AL_ENOTFOUND);

	/* image.c: two unnamed, a name imported again keeps its place */
	char dir[128];
	snprintf(dir, sizeof(dir), "%s/img", e->home);
	OK(al_mkdir_p(dir, 0700, &err));
	struct al_import_result ir;
	const char *names[] = { "base", NULL, "zz", NULL, "base" };
	for (size_t i = 0; i < 5; i++) {
		memset(&ir, 0, sizeof(ir));
		OK(al_image_import_as(st, dir, names[i], "test", "t", &ir, &err));
	}
	struct names nm = { "", 0, 0 };
	OK(al_image_foreach(st, image_name, &nm, &err));
	/* four rows; within one second the order is seq's, base first (a
	 * second apart, base imported again is last by its new created) */
	if (nm.first == nm.last)
		assert_string_equal(nm.s, "base,-,zz,-,");
	else
		assert_int_equal(strlen(nm.s), strlen("base,-,zz,-,"));
	struct al_oid img;
	OK(al_image_resolve(st, "base", &img, &err));
	assert_int_equal(al_image_resolve(st, "nope", &img, &err), AL_ENOTFOUND);

	/* store.c: the snapshots recorded */
	n = 0;
	OK(al_store_snapshot_foreach(st, count_snap, &n, &err));
	assert_true(n >= 3);

	/* ledger.c: every act has its entry, and the export verifies */
	n = 0;
	OK(al_ledger_foreach(st, &(struct al_ledger_query){ 0 }, count_entry, &n, &err));
	/* project_create, 2 commits, a conflict, integration create, grant x2,
	 * rotate x2, delete, 5 image imports */
	assert_true(n >= 14);
	char path[128];
	snprintf(path, sizeof(path), "%s/export.jsonl", e->home);
	uint64_t entries = 0;
	OK(al_ledger_export(st, 0, path, &entries, &err));
	assert_int_equal(entries, (uint64_t)n);
	struct al_verify_report rep = { 0 };
	OK(al_ledger_verify_file(path, NULL, NULL, &rep, &err));
	assert_int_equal(rep.entries, (uint64_t)n);

	/* gc.c: retention read and written, then a pass whose two marks and
	 * sweep read and write the metadata: the stale commit's tree goes, the
	 * head stays whole, and the pass is in the ledger */
	int64_t days = 7;
	OK(al_gc_retention_get(st, &days, &err));
	assert_int_equal(days, AL_GC_FOREVER);
	OK(al_gc_retention_set(st, 0, "t", &err));
	OK(al_gc_retention_get(st, &days, &err));
	assert_int_equal(days, 0);
	struct al_gc_report gr;
	OK(al_gc_run(st, &(struct al_gc_opts){ .now = al_wall_s() + 2 * 86400, .wait_ms = 2000 },
		     &gr, &err));
	assert_false(gr.objects_skipped);
	assert_true(gr.objects >= 1);
	assert_true(gr.seq > 0);
	OK(al_project_get(st, "p", &p, &err));
	OK(al_gc_snapshot_complete(st, &p.head, &err));
	int m = 0;
	OK(al_ledger_foreach(st, &(struct al_ledger_query){ 0 }, count_entry, &m, &err));
	assert_int_equal(m, n + 2); /* gc_retention, gc */

	if (e->pg) {
		/* another tenant on the same database sees none of it */
		char other[48];
		snprintf(other, sizeof(other), "%s-x", e->tenant);
		struct al_store *o2 = open_store(e, other);
		assert_int_equal(al_project_get(o2, "p", &p, &err), AL_ENOTFOUND);
		struct names none = { "", 0, 0 };
		OK(al_image_foreach(o2, image_name, &none, &err));
		assert_string_equal(none.s, "");
		n = 0;
		assert_int_equal(al_ledger_foreach(o2, &(struct al_ledger_query){ 0 }, count_entry,
						   &n, &err),
				 0);
		assert_int_equal(n, 0);
		al_store_close(o2);
	}
	al_store_close(st);
}

int main(void)
{
	const struct CMUnitTest sqlite[] = {
		cmocka_unit_test_setup_teardown(scenario, setup_sqlite, teardown),
	};
	const struct CMUnitTest pg[] = {
		cmocka_unit_test_setup_teardown(scenario, setup_pg, teardown),
	};
	int r = cmocka_run_group_tests_name("sqlite", sqlite, NULL, NULL);
	if (getenv("AIRLOCK_TEST_PG"))
		r |= cmocka_run_group_tests_name("postgres", pg, NULL, NULL);
	return r;
}
