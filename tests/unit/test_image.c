/* image: a directory imported as a named image resolves by name and by id
 * to its snapshot; unknown names, a taken name and a missing source are
 * refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture.h"

#include "airlock/image.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "util.h"

static void test_image(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-image-XXXXXX";
	struct al_error err = { 0 };
	struct al_store *st = home_store(home);
	sh("mkdir -p %s/root/bin %s/root/etc && echo hi > %s/root/etc/motd && ln -s ../etc/motd "
	   "%s/root/bin/m",
	   home, home, home, home);
	char src[600];
	snprintf(src, sizeof(src), "%s/root", home);
	struct al_import_result res;
	if (al_image_import(st, src, "tiny", &res, &err) < 0)
		fail_msg("import: %s", err.msg);
	assert_int_equal(res.files, 1);
	assert_int_equal(res.symlinks, 1);

	struct al_oid id;
	assert_int_equal(al_image_resolve(st, "tiny", &id, &err), 0);
	assert_memory_equal(id.b, res.id.b, AL_OID_LEN);
	char hex[80];
	snprintf(hex, sizeof(hex), "sha256:");
	for (int i = 0; i < AL_OID_LEN; i++)
		snprintf(hex + 7 + 2 * i, 3, "%02x", res.id.b[i]);
	memset(&id, 0, sizeof(id));
	assert_int_equal(al_image_resolve(st, hex, &id, &err), 0);
	assert_memory_equal(id.b, res.id.b, AL_OID_LEN);
	/* the same tree imported again is the same snapshot */
	struct al_import_opts o = { .no_cache = true };
	struct al_import_result again;
	assert_int_equal(al_manifest_import(st, src, &o, &again, &err), 0);
	assert_memory_equal(again.id.b, res.id.b, AL_OID_LEN);

	assert_int_equal(al_image_resolve(st, "nosuch", &id, &err), AL_ENOTFOUND);
	snprintf(src, sizeof(src), "%s/missing", home);
	assert_true(al_image_import(st, src, "other", &res, &err) < 0);
	assert_int_equal(al_image_resolve(st, "other", &id, &err), AL_ENOTFOUND);
	home_remove(home, st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_image),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
