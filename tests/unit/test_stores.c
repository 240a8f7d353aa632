/* stores: airlockd's idle tenant stores (src/server/stores.c), shared by
 * its request threads and its runs' threads.  A kept store goes back only
 * to its own tenant, the warmest first; one a failure left in a transaction
 * is closed, not kept; at most SRV_STORES_KEPT are kept, the least recently
 * used closed first; and a store unused for SRV_STORES_IDLE_NS expires. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "fixture.h"

#include "airlock/util.h"
#include "backend/sqlite/db_sqlite.h"
#include "store_private.h"
#include "stores.c"

static char home[] = "/tmp/airlock-stores-XXXXXX";

static struct al_store *take(const char *tenant)
{
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (srv_stores_take(home, tenant, &st, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(al_store_tenant(st), tenant);
	return st;
}

static void test_tenant_and_reuse(void **state)
{
	(void)state;
	struct al_store *a = take("default");
	srv_stores_give(a);
	struct al_store *b = take("acme"); /* default's is kept: acme gets its own */
	assert_ptr_not_equal(b, a);
	assert_ptr_equal(take("default"), a); /* default's comes back */
	srv_stores_give(b);
	srv_stores_give(a);
	assert_int_equal(srv_stores_expire(UINT64_MAX), 2);
	assert_int_equal(srv_stores_expire(UINT64_MAX), 0);
}

static void test_busy_store_not_kept(void **state)
{
	(void)state;
	struct al_error err = { 0 };
	struct al_store *a = take("default");
	assert_int_equal(al_cas_begin(al_store_cas(a), &err), 0); /* a failure left it open */
	srv_stores_give(a);
	assert_int_equal(srv_stores_expire(UINT64_MAX), 0);
	srv_stores_give(NULL); /* nothing */
	assert_int_equal(srv_stores_expire(UINT64_MAX), 0);
}

/* A statement left mid-step holds a read snapshot (and objects.db's or
 * meta.db's connection would pass it on): such a store is closed too. */
static void test_stepping_store_not_kept(void **state)
{
	(void)state;
	struct al_error err = { 0 };
	struct al_store *a = take("default");
	struct al_db *meta = NULL;
	assert_int_equal(al_store__meta_db(a, &meta, &err), 0);
	sqlite3_stmt *q = NULL;
	assert_int_equal(sqlite3_prepare_v2(al_db__sqlite(meta), "SELECT 1 UNION ALL SELECT 2", -1,
					    &q, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW); /* and not reset */
	assert_false(al_store_idle(a));
	sqlite3_reset(q);
	assert_true(al_store_idle(a));
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	srv_stores_give(a); /* closed: its connection goes with q */
	sqlite3_finalize(q);
	assert_int_equal(srv_stores_expire(UINT64_MAX), 0);
	/* the same on objects.db's connection */
	a = take("default");
	sqlite3_stmt *o = NULL;
	assert_int_equal(sqlite3_prepare_v2(al_cas__sqlite(al_store_cas(a)),
					    "SELECT 1 UNION ALL SELECT 2", -1, &o, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(o), SQLITE_ROW);
	assert_false(al_store_idle(a));
	sqlite3_finalize(o);
	assert_true(al_store_idle(a));
	srv_stores_give(a);
	assert_int_equal(srv_stores_expire(UINT64_MAX), 1);
}

static void test_bound_and_warmest(void **state)
{
	(void)state;
	struct al_store *st[SRV_STORES_KEPT + 1];
	for (size_t i = 0; i < SRV_STORES_KEPT + 1; i++)
		st[i] = take("default");
	for (size_t i = 0; i < SRV_STORES_KEPT + 1; i++) {
		srv_stores_give(st[i]); /* the last give closes st[0], the least recently used */
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL); /* each given at a later time */
	}
	for (size_t i = SRV_STORES_KEPT; i > 0; i--) /* the warmest first; st[0] is gone */
		assert_ptr_equal(take("default"), st[i]);
	for (size_t i = 1; i < SRV_STORES_KEPT + 1; i++)
		srv_stores_give(st[i]);
	assert_int_equal(srv_stores_expire(UINT64_MAX), SRV_STORES_KEPT);
}

static void test_idle_expiry(void **state)
{
	(void)state;
	srv_stores_give(take("default"));
	uint64_t now = al_now_ns();
	assert_int_equal(srv_stores_expire(now), 0); /* used within the second */
	assert_int_equal(srv_stores_expire(now + SRV_STORES_IDLE_NS), 1);
	assert_int_equal(srv_stores_expire(UINT64_MAX), 0);
}

static int setup(void **state)
{
	(void)state;
	struct al_error err = { 0 };
	al_store_close(home_store(home));
	assert_int_equal(al_home_tenant_create(home, "acme", "test", &err), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	home_remove(home, NULL);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tenant_and_reuse),
		cmocka_unit_test(test_busy_store_not_kept),
		cmocka_unit_test(test_stepping_store_not_kept),
		cmocka_unit_test(test_bound_and_warmest),
		cmocka_unit_test(test_idle_expiry),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
