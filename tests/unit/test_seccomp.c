/* seccomp: the filter compiled at build time is the one libseccomp
 * compiles now from the rules (a stale or wrong build fails here). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "sandbox_private.h"

static void test_build_time_filter_is_current(void **state)
{
	(void)state;
	struct al_error err = { 0 };
	struct sock_fprog built, now;
	assert_int_equal(al_seccomp__build(&built, &err), 0);
	assert_int_equal(al_seccomp__compile(&now, &err), 0);
	assert_true(now.len > 20); /* the deny list, clone flags, ioctls, families */
	assert_int_equal(built.len, now.len);
	assert_memory_equal(built.filter, now.filter, now.len * sizeof(struct sock_filter));
	/* the copy is the caller's: changing it leaves the next one intact */
	built.filter[0].k ^= 1;
	struct sock_fprog again;
	assert_int_equal(al_seccomp__build(&again, &err), 0);
	assert_memory_equal(again.filter, now.filter, now.len * sizeof(struct sock_filter));
	free(built.filter);
	free(again.filter);
	free(now.filter);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_time_filter_is_current),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
