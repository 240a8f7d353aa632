/* manifest edits: applying the edits of diff(A, B) to A gives exactly B,
 * for random pairs of trees (files, symlinks, empty dirs, modes, type
 * changes); and the edit refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixture.h"

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "util.h"

static uint64_t rng = 88172645463325252ull;
static unsigned rnd(unsigned n)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static const char *names[] = { "a", "b", "c.txt", "d", "e.csv", "f" };

/* a random tree: depth <= 3 */
static void make_tree(const char *dir, int depth)
{
	mkdir(dir, 0755);
	for (size_t i = 0; i < 6; i++) {
		if (rnd(3) == 0)
			continue;
		char p[1024];
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unsigned k = rnd(depth < 3 ? 5 : 3);
		if (k == 0) {
			assert_int_equal(symlink(names[rnd(6)], p), 0);
		} else if (k <= 2) {
			FILE *f = fopen(p, "w");
			fprintf(f, "%u\n", rnd(4));
			fclose(f);
			chmod(p, rnd(4) ? 0644 : 0755);
		} else {
			make_tree(p, depth + 1);
		}
	}
}

/* random mutations of a copy */
static void mutate(const char *dir, int depth)
{
	for (size_t i = 0; i < 6; i++) {
		char p[1024];
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		struct stat s;
		bool exists = lstat(p, &s) == 0;
		unsigned k = rnd(10);
		if (exists && S_ISDIR(s.st_mode) && k < 5) {
			mutate(p, depth + 1);
		} else if (k == 5 && exists) {
			sh("rm -rf '%s'", p);
		} else if (k == 6) {
			sh("rm -rf '%s'", p);
			FILE *f = fopen(p, "w");
			fprintf(f, "new %u\n", rnd(100));
			fclose(f);
		} else if (k == 7 && depth < 3) {
			sh("rm -rf '%s'", p);
			make_tree(p, depth + 1);
		} else if (k == 8 && exists && !S_ISLNK(s.st_mode)) {
			chmod(p, S_ISDIR(s.st_mode) ? 0700 : 0600);
		}
	}
}

static void test_edit_roundtrip(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-edit-XXXXXX";
	struct al_error err = { 0 };
	struct al_store *st = home_store(home);
	struct al_cas *cas = al_store_cas(st);
	int changed = 0;
	for (int round = 0; round < 60; round++) {
		char a[600], b[600];
		snprintf(a, sizeof(a), "%s/a%d", home, round);
		snprintf(b, sizeof(b), "%s/b%d", home, round);
		make_tree(a, 0);
		sh("cp -a '%s' '%s'", a, b);
		mutate(b, 0);
		struct al_import_opts o = { .no_cache = true };
		struct al_import_result ra, rb;
		assert_int_equal(al_manifest_import(st, a, &o, &ra, &err), 0);
		assert_int_equal(al_manifest_import(st, b, &o, &rb, &err), 0);
		struct al_changes ch;
		assert_int_equal(al_manifest_changes(cas, &ra.id, &rb.id, &ch, &err), 0);
		changed += ch.n > 0;
		struct al_edit *ed = NULL;
		assert_int_equal(al_changes_edits(&ch, &ed, &err), 0);
		struct al_oid got;
		assert_int_equal(al_cas_begin(cas, &err), 0);
		if (al_manifest_edit(cas, &ra.id, ed, ch.n, &got, &err) < 0)
			fail_msg("round %d: %s", round, err.msg);
		assert_int_equal(al_cas_commit(cas, &err), 0);
		if (!al_oid_eq(&got, &rb.id))
			fail_msg("round %d: edits of diff(A,B) applied to A do not give B", round);
		free(ed);
		al_changes_release(&ch);
	}
	assert_true(changed > 40); /* the mutations really changed things */
	home_remove(home, st);
}

static void test_edit_refusals(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-edit-XXXXXX";
	struct al_error err = { 0 };
	struct al_store *st = home_store(home);
	struct al_cas *cas = al_store_cas(st);
	char src[600];
	snprintf(src, sizeof(src), "%s/src", home);
	sh("mkdir -p %s/dir && echo x > %s/file && echo y > %s/dir/in", src, src, src);
	struct al_import_result res;
	assert_int_equal(al_manifest_import(st, src, NULL, &res, &err), 0);
	struct al_entry f;
	assert_int_equal(al_manifest_lookup(cas, &res.id, "dir/in", &f, &err), 0);
	assert_int_equal(f.type, AL_T_FILE);
	assert_int_equal(f.size, 2);
	assert_int_equal(al_manifest_lookup(cas, &res.id, "dir/nope", &f, &err), AL_ENOTFOUND);
	assert_int_equal(al_manifest_lookup(cas, &res.id, "file/in", &f, &err), AL_ENOTFOUND);
	assert_int_equal(al_manifest_lookup(cas, &res.id, "../x", &f, &err), AL_EINVAL);

	struct al_oid out;
	assert_int_equal(al_cas_begin(cas, &err), 0);
	struct al_edit bad[][1] = {
		{ { .path = "../escape", .op = AL_EDIT_SET, .entry = f } },
		{ { .path = "a//b", .op = AL_EDIT_SET, .entry = f } },
		{ { .path = "/abs", .op = AL_EDIT_SET, .entry = f } },
		{ { .path = "missing/x", .op = AL_EDIT_SET, .entry = f } },
		{ { .path = "file/x", .op = AL_EDIT_SET, .entry = f } },
		{ { .path = "nope", .op = AL_EDIT_DELETE } },
	};
	int want[] = { AL_EINVAL, AL_EINVAL, AL_EINVAL, AL_ENOTFOUND, AL_ENOTFOUND, AL_ENOTFOUND };
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		assert_int_equal(al_manifest_edit(cas, &res.id, bad[i], 1, &out, &err), want[i]);
	struct al_edit twice[2] = { { .path = "new", .op = AL_EDIT_SET, .entry = f },
				    { .path = "new", .op = AL_EDIT_DELETE } };
	assert_int_equal(al_manifest_edit(cas, &res.id, twice, 2, &out, &err), AL_EINVAL);
	/* a good one: a file set under a new directory made in the same call */
	struct al_entry d = { .type = AL_T_DIR, .mode = 0750 };
	struct al_edit good[2] = { { .path = "new/deep", .op = AL_EDIT_SET, .entry = f },
				   { .path = "new", .op = AL_EDIT_SET, .entry = d } };
	assert_int_equal(al_manifest_edit(cas, &res.id, good, 2, &out, &err), 0);
	assert_int_equal(al_cas_commit(cas, &err), 0);
	assert_int_equal(al_manifest_lookup(cas, &out, "new/deep", &f, &err), 0);
	assert_int_equal(al_manifest_lookup(cas, &out, "new", &d, &err), 0);
	assert_int_equal(d.mode, 0750);
	assert_int_equal(d.size, 2);
	home_remove(home, st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edit_roundtrip),
		cmocka_unit_test(test_edit_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
