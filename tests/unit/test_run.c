/* run: what runs without a sandbox (root and namespaces are the integration
 * tests'): run ids, and an unknown or malformed id is not found. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture.h"

#include "airlock/run.h"
#include "airlock/store.h"

static void test_run_id(void **state)
{
	(void)state;
	assert_true(al_run_id_valid("r0123456789abc"));
	assert_true(al_run_id_valid("rffffffffffff0"));
	assert_false(al_run_id_valid(NULL));
	assert_false(al_run_id_valid(""));
	assert_false(al_run_id_valid("r0123456789ab"));   /* short */
	assert_false(al_run_id_valid("r0123456789abcd")); /* long */
	assert_false(al_run_id_valid("d0123456789abc"));  /* a draft's */
	assert_false(al_run_id_valid("r0123456789ABC"));  /* upper case */
	assert_false(al_run_id_valid("r0123456789ab/"));
	assert_false(al_run_id_valid("r../../../etc0"));
}

static void test_run_get_unknown(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-run-XXXXXX";
	struct al_error err = { 0 };
	struct al_store *st = home_store(home);
	struct al_run_info ri;
	memset(&ri, 0, sizeof(ri));
	assert_int_equal(al_run_get(st, "r0123456789abc", &ri, &err), AL_ENOTFOUND);
	assert_true(al_run_get(st, "../../etc/passwd", &ri, &err) < 0);
	al_store_close(st);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", home);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_id),
		cmocka_unit_test(test_run_get_unknown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
