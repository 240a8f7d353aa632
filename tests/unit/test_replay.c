/* replay: the verdict's comparison (replay_private.h) on records built
 * here, over snapshots and outputs in a real store: identical (and, with
 * the same changes on another base, without reading a file whose digest is
 * equal: those are deleted first), each kind of difference, the first
 * differing line of an output, the unified diff and the binary summary,
 * the likely causes, the caps; and the wall-clock times found in text.
 * The sandbox side (al_replay) is the integration tests'. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sqlite3.h>

#include <jansson.h>

#include "fixture.h"

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "replay_private.h"
#include "util.h"

#define T0 1796000000 /* the original ran in [T0, T0+2] */
#define T1 1796000100 /* the replay in [T1, T1+2] */

static char home[] = "/tmp/airlock-replay-XXXXXX";
static struct al_store *st;

static int setup(void **state)
{
	(void)state;
	st = home_store(home);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	home_remove(home, st);
	return 0;
}

/* The snapshot of directory home/name. */
static void snap(const char *name, char out[AL_OID_STRLEN + 1])
{
	struct al_error err = { 0 };
	struct al_import_opts o = { .no_cache = true };
	struct al_import_result r;
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/%s", home, name);
	assert_int_equal(al_manifest_import(st, dir, &o, &r, &err), 0);
	al_oid_fmt(&r.id, out);
}

static void blob(const char *text, char out[AL_OID_STRLEN + 1])
{
	struct al_error err = { 0 };
	struct al_cas *cas = al_store_cas(st);
	struct al_oid id;
	assert_int_equal(al_cas_begin(cas, &err), 0);
	assert_int_equal(al_cas_put(cas, text, strlen(text), &id, &err), 0);
	assert_int_equal(al_cas_commit(cas, &err), 0);
	al_oid_fmt(&id, out);
}

/* A run record: the fields the verdict reads. */
static json_t *record(const char *id, const char *base, const char *result, int exit_code,
		      const char *out, const char *errs, int64_t started)
{
	char bo[AL_OID_STRLEN + 1], be[AL_OID_STRLEN + 1], b[AL_OID_STRLEN + 1],
		r[AL_OID_STRLEN + 1];
	blob(out, bo);
	blob(errs, be);
	snap(base, b);
	json_t *rec = json_pack("{s:s,s:s,s:s,s:i,s:{s:s,s:I},s:{s:s,s:I},s:I,s:I}", "id", id,
				"outcome", "ok", "base", b, "exit_code", exit_code, "stdout",
				"blob", bo, "bytes", (json_int_t)strlen(out), "stderr", "blob", be,
				"bytes", (json_int_t)strlen(errs), "started", (json_int_t)started,
				"finished", (json_int_t)started + 2);
	if (result) {
		snap(result, r);
		json_object_set_new(rec, "result", json_string(r));
	}
	return rec;
}

static json_t *verdict(json_t *orig, json_t *rep, bool on_head, json_t *secrets)
{
	struct al_error err = { 0 };
	json_t *v = NULL;
	assert_int_equal(al_replay__verdict(st, orig, rep, on_head, secrets, &v, &err), 0);
	assert_non_null(v);
	return v;
}

static const char *vs(json_t *v, const char *k)
{
	return json_string_value(json_object_get(v, k));
}

/* The difference about what (or path), NULL if none. */
static json_t *diff_of(json_t *v, const char *what)
{
	size_t i;
	json_t *d;
	json_array_foreach(json_object_get(v, "differences"), i, d) {
		if (!strcmp(vs(d, "what"), what) || (vs(d, "path") && !strcmp(vs(d, "path"), what)))
			return d;
	}
	return NULL;
}

static char *differs(json_t *d)
{
	return json_dumps(json_object_get(d, "differs"), JSON_COMPACT);
}

static void test_identical(void **state)
{
	(void)state;
	sh("mkdir -p %s/i-base %s/i-res && echo keep > %s/i-base/k && cp -a %s/i-base/. %s/i-res/ "
	   "&& "
	   "echo new > %s/i-res/n",
	   home, home, home, home, home, home);
	json_t *a = record("r0000000000001", "i-base", "i-res", 0, "out\n", "", T0);
	json_t *b = record("r0000000000002", "i-base", "i-res", 0, "out\n", "", T1);
	json_t *v = verdict(a, b, false, NULL);
	assert_string_equal(vs(v, "result"), "identical");
	assert_string_equal(vs(v, "original"), "r0000000000001");
	assert_int_equal(json_array_size(json_object_get(v, "differences")), 0);
	assert_int_equal(json_integer_value(json_object_get(v, "paths_differing")), 0);
	assert_int_equal(json_array_size(json_object_get(v, "secrets")), 0);
	json_decref(v);
	json_decref(a);
	json_decref(b);
}

/* The same changes on another base (on the head): identical, compared by
 * the manifests' digests alone.  The changed files' objects are deleted
 * from the store before: reading one would fail the verdict. */
static void test_same_changes_other_base_reads_no_file(void **state)
{
	(void)state;
	sh("mkdir -p %s/h-a %s/h-ra %s/h-b %s/h-rb && echo one > %s/h-a/in && "
	   "cp -a %s/h-a/. %s/h-b/ && echo unrelated > %s/h-b/other && "
	   "cp -a %s/h-a/. %s/h-ra/ && cp -a %s/h-b/. %s/h-rb/ && "
	   "for i in 1 2 3 4 5 6 7 8; do echo \"only-here $i\" > %s/h-ra/w$i; "
	   "cp %s/h-ra/w$i %s/h-rb/w$i; done",
	   home, home, home, home, home, home, home, home, home, home, home, home, home, home,
	   home);
	json_t *a = record("r0000000000001", "h-a", "h-ra", 0, "", "", T0);
	json_t *b = record("r0000000000002", "h-b", "h-rb", 0, "", "", T1);
	char db[700];
	snprintf(db, sizeof(db), "%s/tenants/default/objects.db", home);
	sqlite3 *h;
	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	for (int i = 1; i <= 8; i++) {
		char text[32];
		uint8_t d[AL_DIGEST_LEN];
		snprintf(text, sizeof(text), "only-here %d\n", i);
		al_sha256(text, strlen(text), d);
		sqlite3_stmt *q;
		assert_int_equal(
			sqlite3_prepare_v2(h, "DELETE FROM objects WHERE id = ?", -1, &q, NULL),
			SQLITE_OK);
		sqlite3_bind_blob(q, 1, d, AL_DIGEST_LEN, SQLITE_STATIC);
		assert_int_equal(sqlite3_step(q), SQLITE_DONE);
		assert_int_equal(sqlite3_changes(h), 1);
		sqlite3_finalize(q);
	}
	sqlite3_close(h);
	json_t *v = verdict(a, b, true, NULL);
	assert_string_equal(vs(v, "result"), "identical");
	assert_true(json_is_true(json_object_get(v, "on_head")));
	json_decref(v);
	json_decref(a);
	json_decref(b);
}

static void test_outputs_and_exit(void **state)
{
	(void)state;
	sh("mkdir -p %s/o-base", home);
	json_t *a = record("r0000000000001", "o-base", "o-base", 0, "a\nb\nc\n", "x\n", T0);
	json_t *b = record("r0000000000002", "o-base", "o-base", 3, "a\nB\nc\n", "x\ny\n", T1);
	json_object_set_new(b, "outcome", json_string("timeout"));
	json_t *v = verdict(a, b, false, NULL);
	assert_string_equal(vs(v, "result"), "divergent");
	json_t *d = diff_of(v, "outcome");
	assert_non_null(d);
	assert_string_equal(vs(d, "original"), "ok");
	assert_string_equal(vs(d, "replay"), "timeout");
	assert_non_null(d = diff_of(v, "exit_code"));
	assert_int_equal(json_integer_value(json_object_get(d, "original")), 0);
	assert_int_equal(json_integer_value(json_object_get(d, "replay")), 3);
	assert_non_null(d = diff_of(v, "stdout"));
	assert_int_equal(json_integer_value(json_object_get(d, "line")), 2);
	assert_string_equal(vs(d, "original"), "b");
	assert_string_equal(vs(d, "replay"), "B");
	assert_null(json_object_get(d, "hint")); /* nothing says why */
	assert_non_null(d = diff_of(v, "stderr"));
	assert_int_equal(json_integer_value(json_object_get(d, "line")), 2);
	assert_true(json_is_null(json_object_get(d, "original"))); /* no second line there */
	assert_string_equal(vs(d, "replay"), "y");
	assert_int_equal(json_integer_value(json_object_get(d, "original_bytes")), 2);
	assert_int_equal(json_integer_value(json_object_get(d, "replay_bytes")), 4);
	json_decref(v);
	/* a replay that failed before collecting: its changes are a difference */
	json_object_del(b, "result");
	json_object_set_new(b, "outcome", json_string("failed: collect"));
	v = verdict(a, b, false, NULL);
	assert_non_null(d = diff_of(v, "changes"));
	assert_string_equal(vs(d, "replay"), "none (the attempt failed)");
	json_decref(v);
	json_decref(a);
	json_decref(b);
}

static void test_paths(void **state)
{
	(void)state;
	sh("cd %s && mkdir -p p-base && echo one > p-base/f1 && echo m > p-base/f2 && echo m > "
	   "p-base/f3 && "
	   "cp -a p-base p-ra && cp -a p-base p-rb && "
	   "echo two > p-ra/f1 && echo three > p-rb/f1 && "
	   "chmod 755 p-ra/f2 && chmod 700 p-rb/f2 && "
	   "echo mine > p-ra/only_a && echo theirs > p-rb/only_b && "
	   "printf 'x\\0y' > p-ra/bin && printf 'x\\0z' > p-rb/bin && "
	   "mkdir p-ra/d && echo same > p-ra/d/s && mkdir p-rb/d && echo same > p-rb/d/s && "
	   "rm p-ra/f3 && echo changed > p-rb/f3",
	   home);
	json_t *a = record("r0000000000001", "p-base", "p-ra", 0, "", "", T0);
	json_t *b = record("r0000000000002", "p-base", "p-rb", 0, "", "", T1);
	json_t *v = verdict(a, b, false, NULL);
	assert_string_equal(vs(v, "result"), "divergent");
	/* bin, f1, f2, f3, only_a, only_b differ; d and d/s are the same change */
	assert_int_equal(json_integer_value(json_object_get(v, "paths_differing")), 6);
	assert_null(diff_of(v, "d"));
	assert_null(diff_of(v, "d/s"));
	json_t *d = diff_of(v, "f1");
	char *w = differs(d);
	assert_string_equal(w, "[\"content\"]");
	free(w);
	assert_false(json_is_true(json_object_get(d, "binary")));
	assert_non_null(strstr(vs(d, "unified"), "\n-two\n+three\n"));
	assert_string_equal(vs(json_object_get(d, "original"), "op"), "M");
	assert_string_equal(vs(json_object_get(d, "replay"), "mode"), "0644");
	w = differs(d = diff_of(v, "f2"));
	assert_string_equal(w, "[\"mode\"]");
	free(w);
	assert_string_equal(vs(json_object_get(d, "original"), "mode"), "0755");
	assert_string_equal(vs(json_object_get(d, "replay"), "mode"), "0700");
	assert_null(json_object_get(d, "unified")); /* the same content */
	w = differs(d = diff_of(v, "f3"));
	assert_string_equal(w, "[\"kind\"]"); /* deleted by one, modified by the other */
	free(w);
	assert_string_equal(vs(json_object_get(d, "original"), "op"), "D");
	assert_string_equal(vs(json_object_get(d, "replay"), "op"), "M");
	w = differs(d = diff_of(v, "only_a"));
	assert_string_equal(w, "[\"present\"]");
	free(w);
	assert_string_equal(vs(json_object_get(d, "original"), "op"), "A");
	assert_true(json_is_null(json_object_get(d, "replay"))); /* absent there */
	assert_non_null(strstr(vs(d, "unified"), "+++ /dev/null")
				? vs(d, "unified")
				: strstr(vs(d, "unified"), "-mine"));
	w = differs(d = diff_of(v, "only_b"));
	assert_string_equal(w, "[\"present\"]");
	free(w);
	assert_true(json_is_null(json_object_get(d, "original")));
	d = diff_of(v, "bin");
	assert_true(json_is_true(json_object_get(d, "binary")));
	assert_null(json_object_get(d, "unified"));
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(d, "original"), "size")), 3);
	assert_non_null(vs(json_object_get(d, "replay"), "sha256"));
	json_decref(v);
	json_decref(a);
	json_decref(b);
}

static void test_hints(void **state)
{
	(void)state;
	/* the file holds each run's own time (ISO 8601, date(1), unix seconds) */
	sh("cd %s && mkdir -p c-base c-ra c-rb && "
	   "printf 'built 2026-11-30T00:53:21Z\\n' > c-ra/iso && printf 'built "
	   "2026-11-30T00:55:01Z\\n' > c-rb/iso && "
	   "printf 'Mon Nov 30 00:53:22 UTC 2026\\n' > c-ra/date && printf 'Mon Nov 30 00:55:02 "
	   "UTC 2026\\n' > c-rb/date && "
	   "printf 'at %d\\n' > c-ra/unix && printf 'at %d\\n' > c-rb/unix && "
	   "printf 'built 2020-01-01T00:00:00Z\\n' > c-ra/old && printf 'built "
	   "2020-01-01T00:00:09Z\\n' > c-rb/old && "
	   "head -c 4096 /dev/urandom > c-ra/noise && head -c 4096 /dev/urandom > c-rb/noise && "
	   "od -An -N32 -tx1 /dev/urandom | tr -d ' ' > c-ra/hex && od -An -N32 -tx1 /dev/urandom "
	   "| tr -d ' ' > c-rb/hex",
	   home, T0 + 1, T1 + 1);
	json_t *a = record("r0000000000001", "c-base", "c-ra", 0, "Mon Nov 30 00:53:20 UTC 2026\n",
			   "", T0);
	json_t *b = record("r0000000000002", "c-base", "c-rb", 0, "Mon Nov 30 00:55:00 UTC 2026\n",
			   "", T1);
	json_t *v = verdict(a, b, false, NULL);
	static const char *const clock[] = { "stdout", "iso", "date", "unix" };
	for (size_t i = 0; i < 4; i++) {
		json_t *d = diff_of(v, clock[i]);
		assert_non_null(d);
		assert_string_equal(vs(d, "hint"), "wall_clock");
	}
	assert_string_equal(vs(diff_of(v, "noise"), "hint"), "random");
	assert_string_equal(vs(diff_of(v, "hex"), "hint"), "random");
	/* times, but not the runs' own: no cause is claimed */
	assert_null(json_object_get(diff_of(v, "old"), "hint"));
	json_decref(v);
	/* a secret that differs is the cause left when the bytes say nothing */
	json_t *sec = json_pack("[{s:s,s:s,s:b}]", "name", "K", "as", "env", "same", 0);
	v = verdict(a, b, false, sec);
	assert_string_equal(vs(diff_of(v, "old"), "hint"), "secret");
	assert_string_equal(vs(diff_of(v, "iso"), "hint"), "wall_clock");
	assert_false(json_is_true(
		json_object_get(json_array_get(json_object_get(v, "secrets"), 0), "same")));
	json_decref(v);
	json_decref(sec);
	json_decref(a);
	json_decref(b);
	/* on the head: a path whose input was different there, or the head */
	sh("cd %s && mkdir -p b-a b-b && echo v1 > b-a/in && echo v2 > b-b/in && "
	   "cp -a b-a b-ra && cp -a b-b b-rb && echo x >> b-ra/in && echo x >> b-rb/in && "
	   "echo 1 > b-ra/count && echo 2 > b-rb/count",
	   home);
	a = record("r0000000000001", "b-a", "b-ra", 0, "", "", T0);
	b = record("r0000000000002", "b-b", "b-rb", 0, "", "", T1);
	v = verdict(a, b, true, NULL);
	assert_string_equal(vs(diff_of(v, "in"), "hint"), "base");
	assert_string_equal(vs(diff_of(v, "count"), "hint"), "head");
	json_decref(v);
	json_decref(a);
	json_decref(b);
}

static void test_caps(void **state)
{
	(void)state;
	int n = AL_REPLAY_PATHS_LISTED + 100;
	sh("cd %s && mkdir -p k-base k-ra k-rb && for i in $(seq -w 1 %d); do echo a > k-ra/f$i; "
	   "echo b > k-rb/f$i; done",
	   home, n);
	json_t *a = record("r0000000000001", "k-base", "k-ra", 0, "", "", T0);
	json_t *b = record("r0000000000002", "k-base", "k-rb", 0, "", "", T1);
	json_t *v = verdict(a, b, false, NULL);
	json_t *diffs = json_object_get(v, "differences");
	assert_int_equal(json_integer_value(json_object_get(v, "paths_differing")), n);
	assert_int_equal(json_integer_value(json_object_get(v, "paths_unlisted")), 100);
	assert_int_equal(json_array_size(diffs), AL_REPLAY_PATHS_LISTED);
	assert_non_null(
		json_object_get(json_array_get(diffs, AL_REPLAY_PATHS_DETAILED - 1), "unified"));
	assert_null(json_object_get(json_array_get(diffs, AL_REPLAY_PATHS_DETAILED), "unified"));
	assert_non_null(json_object_get(json_array_get(diffs, AL_REPLAY_PATHS_LISTED - 1), "path"));
	json_decref(v);
	json_decref(a);
	json_decref(b);
	/* a long text diff is cut at a line's end, and says so */
	sh("cd %s && mkdir -p u-base u-ra u-rb && seq 1 20000 > u-ra/long && seq 1 20000 | sed "
	   "s/$/x/ > u-rb/long",
	   home);
	a = record("r0000000000001", "u-base", "u-ra", 0, "", "", T0);
	b = record("r0000000000002", "u-base", "u-rb", 0, "", "", T1);
	v = verdict(a, b, false, NULL);
	json_t *d = diff_of(v, "long");
	const char *u = vs(d, "unified");
	assert_true(strlen(u) <= AL_REPLAY_UNIFIED_MAX);
	assert_true(strlen(u) > AL_REPLAY_UNIFIED_MAX / 2);
	assert_int_equal(u[strlen(u) - 1], '\n');
	assert_true(json_is_true(json_object_get(d, "unified_truncated")));
	json_decref(v);
	json_decref(a);
	json_decref(b);
}

static void test_times(void **state)
{
	(void)state;
	int64_t t[8];
	const char *s =
		"Mon Nov 30 00:53:21 UTC 2026 and 2026-11-30T00:53:21Z, 2026-11-30 00:53:21 "
		"or 1796000001; Mon Dec  7 01:02:03 UTC 2026";
	assert_int_equal(al_replay__times(s, strlen(s), t, 8), 5);
	assert_int_equal(t[0], 1796000001); /* date -u -d 2026-11-30T00:53:21Z +%s */
	assert_int_equal(t[1], 1796000001);
	assert_int_equal(t[2], 1796000001);
	assert_int_equal(t[3], 1796000001);
	assert_int_equal(t[4], 1796605323);
	/* not times: 11 digits, 9 digits, a zone whose offset is unknown, a bad month */
	const char *no = "17960000011 179600000 Sun Nov 29 20:53:21 CET 2026 2026-13-01T00:00:00";
	assert_int_equal(al_replay__times(no, strlen(no), t, 8), 0);
	/* at most max */
	assert_int_equal(al_replay__times(s, strlen(s), t, 2), 2);
	/* bytes that are not text, and a cut-off time, are no trouble */
	const char cut[] = "2026-11-29T20:5\xff\x00 Nov 29 20:53";
	assert_int_equal(al_replay__times(cut, sizeof(cut) - 1, t, 8), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_identical),
		cmocka_unit_test(test_same_changes_other_base_reads_no_file),
		cmocka_unit_test(test_outputs_and_exit),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_hints),
		cmocka_unit_test(test_caps),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
