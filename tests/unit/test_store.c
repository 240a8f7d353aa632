/* store: the home layout keeps tenants in separate files; one tenant's
 * objects and snapshots do not exist for another. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "util.h"

static int count_snapshots(void *ctx, const struct al_snapshot_info *info, struct al_error *err)
{
	(void)info;
	(void)err;
	(*(int *)ctx)++;
	return 0;
}

static void test_tenants_are_separate(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-store-XXXXXX";
	assert_non_null(mkdtemp(home));
	struct al_error err = { 0 };
	assert_int_equal(al_home_init(home, &err), 0);
	assert_int_equal(al_home_tenant_create(home, "acme", "test", &err), 0);
	assert_int_equal(al_home_tenant_create(home, "acme", "test", &err), AL_EEXIST);
	assert_int_equal(al_home_tenant_create(home, "../evil", "test", &err), AL_EINVAL);
	assert_int_equal(al_home_tenant_create(home, "UPPER", "test", &err), AL_EINVAL);

	char src[600];
	snprintf(src, sizeof(src), "%s/src", home);
	mkdir(src, 0755);
	char f[700];
	snprintf(f, sizeof(f), "%s/secret.txt", src);
	FILE *fp = fopen(f, "w");
	fputs("acme's secret\n", fp);
	fclose(fp);

	struct al_store *a = NULL, *d = NULL, *x = NULL;
	assert_int_equal(al_store_open(home, "acme", &a, &err), 0);
	assert_int_equal(al_store_open(home, "default", &d, &err), 0);
	assert_int_equal(al_store_open(home, "nobody", &x, &err), AL_ENOTFOUND);
	assert_int_equal(al_store_open(home, "../default", &x, &err), AL_EINVAL);

	struct al_import_result res;
	assert_int_equal(al_manifest_import(a, src, NULL, &res, &err), 0);
	struct al_oid blob;
	al_sha256("acme's secret\n", 14, blob.b);

	/* acme has it; default does not, neither the snapshot nor the blob */
	assert_int_equal(al_cas_has(al_store_cas(a), &blob, &err), 1);
	assert_int_equal(al_cas_has(al_store_cas(d), &blob, &err), 0);
	struct al_node *node = NULL;
	assert_int_equal(al_node_load(al_store_cas(d), &res.id, &node, &err), AL_ENOTFOUND);
	int na = 0, nd = 0;
	assert_int_equal(al_store_snapshot_foreach(a, count_snapshots, &na, &err), 0);
	assert_int_equal(al_store_snapshot_foreach(d, count_snapshots, &nd, &err), 0);
	assert_int_equal(na, 1);
	assert_int_equal(nd, 0);
	/* and the tenants' stores are different files */
	assert_string_not_equal(al_store_dir(a), al_store_dir(d));
	al_store_close(a);
	al_store_close(d);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "grep -rqa \"acme's secret\" %s/tenants/default", home);
	assert_int_not_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", home);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tenants_are_separate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
