/* The namespace sandbox driven directly (al_sandbox_run), for what the
 * CLI cannot show: the caller's work done while the command runs (the
 * spec's meanwhile).  It is called once, while the command is under way,
 * and however long it takes, the command's output is all kept, its
 * timeout counts from before it, and a command that ended meanwhile is
 * neither timed out nor cancelled.  Needs what the integration tests need
 * (user namespaces, overlayfs): without them it skips on a laptop and
 * fails under CI or AIRLOCK_REQUIRE_SANDBOX (tests/lib.sh's rule). */
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/eventfd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixture.h"

#include "airlock/run.h"
#include "airlock/sandbox.h"
#include "util.h"

static char build[PATH_MAX]; /* the build directory: this test is in its tests/ */
static char lowers[] = "/tmp/airlock-sbx-XXXXXX";
#define MINUTE 60000 /* a timeout no test reaches: a hung sandbox fails, not hangs */

/* The lower layers: the built busybox image and an empty workspace, in a
 * directory the sandbox's uid may search. */
static bool sandbox_here; /* user namespaces work: else each test skips or fails */

/* The lower layers: the built busybox image, readable by the sandbox's
 * uid whatever the build's modes, and an empty workspace, in a directory
 * it may search. */
static int setup(void **state)
{
	(void)state;
	sandbox_here = system("unshare -U true 2>/dev/null") == 0;
	if (!mkdtemp(lowers))
		return -1;
	sh("chmod 0711 '%s' && cp -a '%s/image/busybox' '%s/img' && chmod -R a+rX '%s/img' && "
	   "mkdir -m 0755 '%s/ws'",
	   lowers, build, lowers, lowers, lowers);
	return 0;
}

static void need_sandbox(void)
{
	if (sandbox_here)
		return;
	if (getenv("AIRLOCK_REQUIRE_SANDBOX") || getenv("CI"))
		fail_msg("no user namespaces here (AIRLOCK_REQUIRE_SANDBOX or CI is set)");
	skip();
}

static int teardown(void **state)
{
	(void)state;
	sh("rm -rf '%s'", lowers);
	return 0;
}

struct seen {
	int calls;
	unsigned sleep_ms;     /* how long meanwhile takes */
	bool done_when_called; /* the command's last line had come by then */
	char out[64];
	size_t n;
};

static void meanwhile(void *ctx)
{
	struct seen *s = ctx;
	s->calls++;
	s->done_when_called = memmem(s->out, s->n, "done", 4) != NULL;
	if (s->sleep_ms)
		usleep(s->sleep_ms * 1000);
}

static void output(void *ctx, int stream, const void *p, size_t n)
{
	struct seen *s = ctx;
	if (stream == 1 && s->n < sizeof(s->out)) {
		size_t k = n < sizeof(s->out) - s->n ? n : sizeof(s->out) - s->n;
		memcpy(s->out + s->n, p, k);
		s->n += k;
	}
}

static int run(const char *script, uint64_t timeout_ms, int cancel_fd, struct seen *s,
	       struct al_sandbox_result *res)
{
	need_sandbox();
	const char *const argv[] = { "/bin/sh", "-c", script, NULL };
	static const char *const env[] = { "PATH=/bin", NULL };
	char init[PATH_MAX + 32];
	snprintf(init, sizeof(init), "%s/airlock-init", build);
	struct al_sandbox_spec sp = { .image_dir = "img",
				      .workspace_dir = "ws",
				      .argv = argv,
				      .envp = env,
				      .output = output,
				      .output_ctx = s,
				      .cancel_fd = cancel_fd,
				      .meanwhile = meanwhile,
				      .meanwhile_ctx = s };
	sp.lowers_fd = open(lowers, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	sp.init_fd = open(init, O_RDONLY | O_CLOEXEC);
	assert_true(sp.lowers_fd >= 0 && sp.init_fd >= 0);
	sp.host_uid = geteuid() == 0 ? AL_SANDBOX_UID : geteuid();
	sp.host_gid = geteuid() == 0 ? AL_SANDBOX_UID : getegid();
	al_limits_default(&sp.limits);
	sp.limits.timeout_ms = timeout_ms;
	sp.best_effort_limits = true;
	struct al_error err = { 0 };
	memset(res, 0, sizeof(*res));
	res->upper_fd = -1;
	int r = al_sandbox_run(&sp, res, &err);
	if (r < 0)
		print_error("al_sandbox_run: %s\n", err.msg);
	close(sp.lowers_fd);
	close(sp.init_fd);
	if (res->upper_fd >= 0)
		close(res->upper_fd);
	return r;
}

/* Called once, before the command's output is read: its last line has
 * not come when meanwhile runs, and has after. */
static void test_meanwhile_while_running(void **state)
{
	(void)state;
	struct seen s = { 0 };
	struct al_sandbox_result res;
	assert_int_equal(run("echo done", MINUTE, -1, &s, &res), 0);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(s.calls, 1);
	assert_false(s.done_when_called);
	assert_non_null(memmem(s.out, s.n, "done", 4));
	assert_false(res.timed_out);
}

/* A meanwhile slower than the command: output past a pipe's buffer
 * waits for it and is all kept, and the exit code is the command's. */
static void test_meanwhile_slow_output_kept(void **state)
{
	(void)state;
	struct seen s = { .sleep_ms = 300 };
	struct al_sandbox_result res;
	assert_int_equal(run("head -c 300000 /dev/zero; exit 7", MINUTE, -1, &s, &res), 0);
	assert_int_equal(s.calls, 1);
	assert_int_equal(res.exit_code, 7);
	assert_int_equal(res.stdout_bytes, 300000);
	assert_false(res.timed_out);
}

/* A meanwhile longer than the run's timeout does not make the run last
 * longer: the timeout counts from before it, and the command is killed
 * when it returns (1.5 s, not the 2.5 s of a timeout counted after it). */
static void test_meanwhile_timeout_kept(void **state)
{
	(void)state;
	struct seen s = { .sleep_ms = 1500 };
	struct al_sandbox_result res;
	assert_int_equal(run("sleep 30; echo done", 1000, -1, &s, &res), 0);
	assert_int_equal(s.calls, 1);
	assert_true(res.timed_out);
	assert_int_equal(res.exit_code, 128 + 9);
	assert_null(memmem(s.out, s.n, "done", 4));
	assert_true(res.wall_ms >= 1500 && res.wall_ms < 2300);
}

/* A command that ended in its time while meanwhile ran past the timeout
 * is not timed out, nor cancelled by a cancel already asked: its exit and
 * output are its own.  The same cancel still ends a command that runs on. */
static void test_meanwhile_ended_not_killed(void **state)
{
	(void)state;
	struct seen s = { .sleep_ms = 400 };
	struct al_sandbox_result res;
	assert_int_equal(run("echo done", 200, -1, &s, &res), 0);
	assert_false(res.timed_out);
	assert_int_equal(res.exit_code, 0);
	assert_non_null(memmem(s.out, s.n, "done", 4));

	int cancel = eventfd(1, EFD_CLOEXEC); /* asked before the command starts */
	assert_true(cancel >= 0);
	memset(&s, 0, sizeof(s));
	s.sleep_ms = 400;
	assert_int_equal(run("echo done", MINUTE, cancel, &s, &res), 0);
	assert_false(res.cancelled);
	assert_int_equal(res.exit_code, 0);
	memset(&s, 0, sizeof(s));
	s.sleep_ms = 100;
	assert_int_equal(run("sleep 30", MINUTE, cancel, &s, &res), 0);
	assert_true(res.cancelled);
	assert_int_equal(res.exit_code, 128 + 9);
	close(cancel);
}

int main(int argc, char **argv)
{
	(void)argc;
	snprintf(build, sizeof(build), "%s", argv[0]);
	char *slash = strrchr(build, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(build, sizeof(build), ".");
	size_t n = strlen(build);
	snprintf(build + n, sizeof(build) - n, "/..");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_meanwhile_while_running),
		cmocka_unit_test(test_meanwhile_slow_output_kept),
		cmocka_unit_test(test_meanwhile_timeout_kept),
		cmocka_unit_test(test_meanwhile_ended_not_killed),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
