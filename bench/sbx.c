/* The namespace sandbox alone, in-process: median wall time of N runs of
 * /bin/true (al_sandbox_run: clone, mounts, seccomp, airlock-init, wait),
 * without the CLI's process start or the run's draft and ledger work.
 *   sbx LOWERS IMAGE_DIR WORKSPACE_DIR AIRLOCK_INIT N */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "airlock/run.h"
#include "airlock/sandbox.h"
#include "util.h"

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: sbx LOWERS IMAGE_DIR WORKSPACE_DIR AIRLOCK_INIT N\n");
		return 2;
	}
	int n = atoi(argv[5]);
	if (n < 1 || n > 1000)
		return 2;
	static const char *const cmd[] = { "/bin/true", NULL };
	static const char *const env[] = { "PATH=/bin", NULL };
	struct al_sandbox_spec sp = {
		.image_dir = argv[2], .workspace_dir = argv[3], .argv = cmd, .envp = env
	};
	sp.lowers_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	sp.init_fd = open(argv[4], O_RDONLY | O_CLOEXEC);
	sp.host_uid = geteuid() == 0 ? AL_SANDBOX_UID : geteuid();
	sp.host_gid = geteuid() == 0 ? AL_SANDBOX_UID : getegid();
	al_limits_default(&sp.limits);
	sp.best_effort_limits = true;
	uint64_t *t = calloc((size_t)n, sizeof(*t));
	for (int i = 0; i < n; i++) {
		struct al_sandbox_result r;
		struct al_error err = { 0 };
		uint64_t s = al_now_ns();
		if (al_sandbox_run(&sp, &r, &err) < 0 || r.exit_code != 0) {
			fprintf(stderr, "sbx: %s (exit %d)\n", err.msg, r.exit_code);
			return 1;
		}
		t[i] = al_now_ns() - s;
		close(r.upper_fd);
	}
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("%llu\n", (unsigned long long)(t[n / 2] / 1000));
	return 0;
}
