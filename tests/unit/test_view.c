/* view: the JSON the daemon answers and the CLI prints with --json: ids,
 * bytes that are not UTF-8, entries, errors with their stable code names,
 * and a store's projects.  (view.c is a front-end file, not in libairlock:
 * it is compiled into this test; it is found as view.h's neighbour.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture.h"

#include "view.c"

static char *dump(json_t *j)
{
	assert_non_null(j);
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	json_decref(j);
	assert_non_null(s);
	return s;
}

static void expect(json_t *j, const char *want)
{
	char *s = dump(j);
	assert_string_equal(s, want);
	free(s);
}

static void test_values(void **state)
{
	(void)state;
	struct al_oid id;
	for (int i = 0; i < AL_OID_LEN; i++)
		id.b[i] = (uint8_t)i;
	expect(view_id(&id),
	       "\"sha256:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\"");
	expect(view_bytes("caf\xc3\xa9", 5), "\"caf\xc3\xa9\""); /* valid UTF-8 as is */
	/* not UTF-8, or a NUL: quoted as in messages, never raw */
	char *s = dump(view_bytes("a\xff"
				  "b",
				  3));
	assert_null(strchr(s, '\xff'));
	assert_non_null(strstr(s, "a"));
	free(s);
	s = dump(view_bytes("a\0b", 3));
	assert_string_not_equal(s, "\"a\"");
	free(s);

	struct al_entry e;
	memset(&e, 0, sizeof(e));
	e.type = AL_T_FILE;
	e.mode = 0644;
	e.size = 3;
	e.digest = id;
	expect(view_entry(&e, NULL),
	       "{\"mode\":\"0644\",\"sha256\":\"sha256:"
	       "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\","
	       "\"size\":3,\"type\":\"file\"}");
	expect(view_entry(NULL, NULL), "null");

	struct al_error err = { 0 };
	al_fail(&err, AL_ENOTFOUND, 0, "project 'p' not found");
	expect(view_error(&err, NULL),
	       "{\"error\":{\"code\":\"NotFound\",\"message\":\"project 'p' not found\"}}");
	al_fail(&err, AL_ELIMIT, 0, "too big");
	expect(view_error(&err, NULL),
	       "{\"error\":{\"code\":\"LimitExceeded\",\"message\":\"too big\"}}");
}

static void test_projects(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-view-XXXXXX";
	struct al_error err = { 0 };
	struct al_store *st = home_store(home);
	json_t *arr = json_array();
	assert_int_equal(view_projects(st, arr, &err), 0);
	assert_int_equal(json_array_size(arr), 0);
	struct al_project_info p;
	assert_int_equal(al_project_create(st, "books", NULL, "me", &p, &err), 0);
	assert_int_equal(view_projects(st, arr, &err), 0);
	assert_int_equal(json_array_size(arr), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(arr, 0), "name")),
			    "books");
	json_t *h = json_object_get(json_array_get(arr, 0), "head");
	assert_true(json_is_string(h) && !strncmp(json_string_value(h), "sha256:", 7));
	json_decref(arr);
	al_store_close(st);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", home);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_projects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
