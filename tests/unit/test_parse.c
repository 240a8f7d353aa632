/* parse: sizes, counts, decimals, durations and times as every command
 * takes them; a value past its maximum or past 64 bits is an error, never
 * wrapped (serve --upload-max 17179869185G once became 1 GiB). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "airlock/parse.h"

static uint64_t size_ok(const char *s)
{
	uint64_t v = 0;
	struct al_error err = { 0 };
	assert_int_equal(al_parse_size(s, UINT64_MAX, &v, &err), 0);
	return v;
}

static void size_bad(const char *s, uint64_t max)
{
	uint64_t v = 12345;
	struct al_error err = { 0 };
	assert_int_equal(al_parse_size(s, max, &v, &err), AL_EUSAGE);
	assert_true(err.msg[0]);
	assert_int_equal(v, 12345); /* nothing written on failure */
}

static void test_size(void **state)
{
	(void)state;
	assert_int_equal(size_ok("0"), 0);
	assert_int_equal(size_ok("100"), 100);
	assert_int_equal(size_ok("100B"), 100);
	assert_int_equal(size_ok("64K"), 64 << 10);
	assert_int_equal(size_ok("64k"), 64 << 10);
	assert_int_equal(size_ok("64KiB"), 64 << 10);
	assert_int_equal(size_ok("64KB"), 64 << 10);
	assert_int_equal(size_ok("3M"), 3 << 20);
	assert_int_equal(size_ok("2G"), 2ull << 30);
	assert_int_equal(size_ok("1T"), 1ull << 40);
	assert_int_equal(size_ok("1.5G"), 3ull << 29);
	assert_int_equal(size_ok("16777215T"), 16777215ull << 40);
	assert_int_equal(size_ok("18446744073709551615"), UINT64_MAX);
	/* past 64 bits: the wrap that made 17179869185G into 1 GiB */
	size_bad("17179869185G", UINT64_MAX);
	size_bad("17179869185G", 1ull << 40);
	size_bad("16777216T", UINT64_MAX);
	size_bad("18446744073709551616", UINT64_MAX);
	size_bad("99999999999999999999999", UINT64_MAX);
	size_bad("1e30", UINT64_MAX);
	size_bad("1025G", 1ull << 40);
	/* not sizes */
	size_bad("", UINT64_MAX);
	size_bad("K", UINT64_MAX);
	size_bad("-1", UINT64_MAX);
	size_bad(" -1", UINT64_MAX);
	size_bad("1X", UINT64_MAX);
	size_bad("1KK", UINT64_MAX);
	size_bad("1 K", UINT64_MAX);
	size_bad("inf", UINT64_MAX);
	size_bad("nan", UINT64_MAX);
}

static void test_count(void **state)
{
	(void)state;
	uint64_t v;
	struct al_error err = { 0 };
	assert_int_equal(al_parse_count("32", 100, &v, &err), 0);
	assert_int_equal(v, 32);
	assert_int_equal(al_parse_count("1K", 1 << 20, &v, &err), 0);
	assert_int_equal(v, 1024);
	assert_int_equal(al_parse_count("101", 100, &v, &err), AL_EUSAGE);
	assert_int_equal(al_parse_count("1.5", 100, &v, &err), AL_EUSAGE);
	assert_int_equal(al_parse_count("1KB", 1 << 20, &v, &err), AL_EUSAGE);
	assert_int_equal(al_parse_count("17179869185G", UINT64_MAX, &v, &err), AL_EUSAGE);
}

static void test_decimal(void **state)
{
	(void)state;
	double d;
	struct al_error err = { 0 };
	assert_int_equal(al_parse_decimal("0.5", 4096, &d, &err), 0);
	assert_true(d == 0.5);
	assert_int_equal(al_parse_decimal("1e3", 4096, &d, &err), 0);
	assert_true(d == 1000);
	assert_int_equal(al_parse_decimal("4097", 4096, &d, &err), AL_EUSAGE);
	assert_int_equal(al_parse_decimal("-1", 4096, &d, &err), AL_EUSAGE);
	assert_int_equal(al_parse_decimal("1e999", 1e300, &d, &err), AL_EUSAGE);
	assert_int_equal(al_parse_decimal("2x", 4096, &d, &err), AL_EUSAGE);
}

static void test_duration(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		uint64_t ms;
	} good[] = { { "90", 90000 },   { "1.5", 1500 },     { "30s", 30000 },    { "5m", 300000 },
		     { "2h", 7200000 }, { "7d", 604800000 }, { "1.5h", 5400000 }, { "0", 0 } };
	struct al_error err = { 0 };
	uint64_t ms;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(al_parse_duration(good[i].s, UINT64_MAX, &ms, &err), 0);
		assert_int_equal(ms, good[i].ms);
	}
	static const char *const bad[] = { "", "s", "5x", "5 m", "-5", "5ms", "5mm", "1e400" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(al_parse_duration(bad[i], UINT64_MAX, &ms, &err), AL_EUSAGE);
	assert_int_equal(al_parse_duration("101d", 100ull * 86400 * 1000, &ms, &err), AL_EUSAGE);
	assert_int_equal(al_parse_duration("213503982334602d", UINT64_MAX, &ms, &err), AL_EUSAGE);
	assert_int_equal(al_parse_duration("18446744073709551615", UINT64_MAX, &ms, &err),
			 AL_EUSAGE);
}

static void test_time(void **state)
{
	(void)state;
	int64_t t;
	struct al_error err = { 0 };
	assert_int_equal(al_parse_time("1700000000", &t, &err), 0);
	assert_int_equal(t, 1700000000);
	assert_int_equal(al_parse_time("2026-01-31", &t, &err), 0);
	assert_int_equal(t, 1769817600);
	assert_int_equal(al_parse_time("2026-01-31T12:00:00Z", &t, &err), 0);
	assert_int_equal(t, 1769817600 + 12 * 3600);
	assert_int_equal(al_parse_time("2026-01-31 12:00:00", &t, &err), 0);
	assert_int_equal(t, 1769817600 + 12 * 3600);
	assert_int_equal(al_parse_time("yesterday", &t, &err), AL_EUSAGE);
	assert_int_equal(al_parse_time("99999999999999999999", &t, &err), AL_EUSAGE);
	assert_int_equal(al_parse_time("", &t, &err), AL_EUSAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size),    cmocka_unit_test(test_count),
		cmocka_unit_test(test_decimal), cmocka_unit_test(test_duration),
		cmocka_unit_test(test_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
