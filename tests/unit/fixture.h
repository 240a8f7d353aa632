/* What the unit tests share: a shell command that must succeed, and a
 * fresh home whose default tenant's store a test works in. */
#ifndef AL_TEST_FIXTURE_H
#define AL_TEST_FIXTURE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "util.h"

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

/* home: a mkdtemp template ("/tmp/airlock-x-XXXXXX"), made a home. */
static struct al_store *home_store(char *home) __attribute__((unused));
static struct al_store *home_store(char *home)
{
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	assert_non_null(mkdtemp(home));
	assert_int_equal(al_home_init(home, &err), 0);
	assert_int_equal(al_store_open(home, "default", &st, &err), 0);
	return st;
}

static void home_remove(const char *home, struct al_store *st) __attribute__((unused));
static void home_remove(const char *home, struct al_store *st)
{
	al_store_close(st);
	sh("rm -rf '%s'", home);
}

/* A snapshot: base with path set to a file of data (stored). */
static struct al_oid put_file(struct al_store *st, const struct al_oid *base, const char *path,
			      const char *data) __attribute__((unused));
static struct al_oid put_file(struct al_store *st, const struct al_oid *base, const char *path,
			      const char *data)
{
	struct al_error err = { 0 };
	struct al_cas *cas = al_store_cas(st);
	struct al_edit ed = { .path = path,
			      .op = AL_EDIT_SET,
			      .entry = { .type = AL_T_FILE, .mode = 0644, .size = strlen(data) } };
	struct al_oid snap;
	if (al_cas_begin(cas, &err) < 0 ||
	    al_cas_put(cas, data, strlen(data), &ed.entry.digest, &err) < 0 ||
	    al_manifest_edit(cas, base, &ed, 1, &snap, &err) < 0 || al_cas_commit(cas, &err) < 0)
		fail_msg("put %s: %s", path, err.msg);
	return snap;
}

/* A tree of n directories, each holding one file whose digest is
 * file_seed's and i's, put in c's open batch */
static struct al_oid dirs_tree(struct al_cas *c, int n, int file_seed) __attribute__((unused));
static struct al_oid dirs_tree(struct al_cas *c, int n, int file_seed)
{
	struct al_error err = { 0 };
	struct al_entry *root = calloc((size_t)n, sizeof(*root));
	char(*names)[8] = calloc((size_t)n, sizeof(*names));
	assert_non_null(root);
	assert_non_null(names);
	for (int i = 0; i < n; i++) {
		struct al_entry f = {
			.type = AL_T_FILE, .mode = 0644, .size = 1, .name = "f", .namelen = 1
		};
		char body[32];
		int bl = snprintf(body, sizeof(body), "%d %d", file_seed, i);
		al_sha256(body, (size_t)bl, f.digest.b);
		uint8_t *enc;
		size_t len;
		assert_int_equal(al_node_encode(&f, 1, &enc, &len, &err), 0);
		snprintf(names[i], sizeof(names[i]), "d%04d", i);
		root[i] = (struct al_entry){
			.type = AL_T_DIR, .mode = 0755, .size = 1, .name = names[i], .namelen = 5
		};
		assert_int_equal(al_cas_put(c, enc, len, &root[i].digest, &err), 0);
		free(enc);
	}
	uint8_t *enc;
	size_t len;
	struct al_oid id;
	assert_int_equal(al_node_encode(root, (size_t)n, &enc, &len, &err), 0);
	assert_int_equal(al_cas_put(c, enc, len, &id, &err), 0);
	free(enc);
	free(root);
	free(names);
	return id;
}

#endif
