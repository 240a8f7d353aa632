/* What the unit tests share: a shell command that must succeed, and a
 * fresh home whose default tenant's store a test works in. */
#ifndef AL_TEST_FIXTURE_H
#define AL_TEST_FIXTURE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "airlock/store.h"

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

#endif
