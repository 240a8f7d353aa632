/* util: al_stack_release gives back the pages a thread's stack touched
 * below its current frame, and leaves the frame itself intact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "airlock/util.h"

/* pages of the calling thread's stack, below its frame, that are resident */
static size_t resident_below(void)
{
	pthread_attr_t a;
	void *addr;
	size_t size;
	assert_int_equal(pthread_getattr_np(pthread_self(), &a), 0);
	assert_int_equal(pthread_attr_getstack(&a, &addr, &size), 0);
	pthread_attr_destroy(&a);
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)addr;
	uintptr_t hi = ((uintptr_t)__builtin_frame_address(0) - 65536) & ~((uintptr_t)page - 1);
	static unsigned char vec[(8u << 20) / 4096];
	size_t n = (hi - lo) / (size_t)page, count = 0;
	assert_true(n <= sizeof(vec));
	assert_int_equal(mincore((void *)lo, hi - lo, vec), 0);
	for (size_t i = 0; i < n; i++)
		count += vec[i] & 1;
	return count;
}

/* touch about depth * 4 KiB of stack */
static __attribute__((noinline)) int deep(int depth)
{
	volatile char buf[4096];
	memset((char *)buf, depth, sizeof(buf));
	return depth ? deep(depth - 1) + buf[100] : buf[0];
}

static void *thread_main(void *arg)
{
	size_t *out = arg;
	volatile char frame[64] = "this frame stays intact";
	deep(300); /* ~1.2 MiB */
	out[0] = resident_below();
	al_stack_release();
	out[1] = resident_below();
	out[2] = strcmp((const char *)frame, "this frame stays intact") == 0;
	return NULL;
}

static void test_stack_release(void **state)
{
	(void)state;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 4u << 20);
	size_t out[3] = { 0 };
	pthread_t t;
	assert_int_equal(pthread_create(&t, &a, thread_main, out), 0);
	pthread_join(t, NULL);
	pthread_attr_destroy(&a);
	assert_true(out[0] >= 250); /* touched */
	assert_true(out[1] <= 2);   /* given back */
	assert_true(out[2]);        /* the live frame untouched */
}

/* A message cut inside a UTF-8 sequence loses that sequence only; an
 * error's message is never left so (al_fail). */
static void test_utf8_cut(void **state)
{
	(void)state;
	struct {
		const char *in, *want;
	} cases[] = {
		{ "abc", "abc" },
		{ "ab\xc3\xa9", "ab\xc3\xa9" },         /* whole */
		{ "ab\xc3", "ab" },                     /* a lead byte alone */
		{ "ab\xe2\x82", "ab" },                 /* 2 of 3 */
		{ "ab\xe2\x82\xac", "ab\xe2\x82\xac" }, /* whole */
		{ "ab\xf0\x9f\x98", "ab" },             /* 3 of 4 */
		{ "", "" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char b[16];
		snprintf(b, sizeof(b), "%s", cases[i].in);
		al_utf8_cut(b);
		assert_string_equal(b, cases[i].want);
	}
	char path[400] = "a";
	for (int i = 0; i < 150; i++)
		memcpy(path + 1 + 2 * i, "\xc3\xa9", 3);
	struct al_error err;
	for (int pre = 0; pre < 4; pre++) {
		al_fail(&err, AL_EINVAL, 0, "%.*s%s", pre, "xyz", path);
		assert_true(al_utf8_valid((const uint8_t *)err.msg, strlen(err.msg)));
		assert_true(strlen(err.msg) >= sizeof(err.msg) - 2);
		al_error_prefix(&err, "%.*s", pre, "xyz");
		assert_true(al_utf8_valid((const uint8_t *)err.msg, strlen(err.msg)));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stack_release),
		cmocka_unit_test(test_utf8_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
