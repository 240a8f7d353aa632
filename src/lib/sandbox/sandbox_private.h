/* Private to the sandbox: the backend table, and what the namespace
 * backend is built from (cgroups, the seccomp filter). */
#ifndef AL_SANDBOX_PRIVATE_H
#define AL_SANDBOX_PRIVATE_H

#include <linux/filter.h>
#include <sys/types.h>
#include <unistd.h>

#include "airlock/sandbox.h"

/* A sandbox backend.  sandbox.c has already checked what every backend
 * shares (the spec's layer names, a known network policy) and cleared res
 * (upper_fd -1, cgroup "none"). */
struct al_sandbox_backend {
	const char *name; /* al_sandbox_spec.backend */
	/* Can it enforce this network policy?  AL_EINVAL with the reason. */
	int (*check)(enum al_network network, struct al_error *err);
	int (*run)(const struct al_sandbox_spec *spec, struct al_sandbox_result *res,
		   struct al_error *err);
};
extern const struct al_sandbox_backend al_sandbox__ns; /* ns.c: Linux namespaces */
extern const struct al_sandbox_backend al_sandbox__vm; /* vm.c: a microVM (hv.h) */

/* One run's cgroup: per controller, the directory that holds its limit
 * (v2: one directory for all; v1: one per hierarchy). */
struct al_cgroup {
	char v2[1024];
	char v1_memory[1024], v1_pids[1024], v1_cpu[1024];
	bool memory, pids, cpu; /* which limits are enforced */
};
/* Create the run's cgroup with the limits (0 = unlimited).  A limit no
 * controller can enforce is an error, unless best_effort. */
int al_cgroup__create(const struct al_limits *l, const char *name, bool best_effort,
		      struct al_cgroup *cg, struct al_error *err);
/* Close *fd if open, and mark it closed. */
static inline void al_sandbox__close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* A setup child's failure, written to a close-on-exec pipe before it
 * exits (ns.c's sandbox, vm.c's jail). */
struct al_sandbox__report {
	int stage, err;
};
/* Read it from fd: the failed stage (names[stage], of n) as an error
 * ("PREFIX%s failed (see 'airlock doctor')"); 0 for nothing (the pipe
 * closed at exec); 1 for something that is not a report. */
int al_sandbox__read_report(int fd, const char *const *names, int n, const char *prefix,
			    struct al_error *err);

/* Move pid into the run's cgroups: v2's, and with v1 the v1 hierarchies'
 * too.  Writing a pid to cgroup.procs takes the kernel's global
 * threadgroup lock for writing, whose first taking after a quiet spell
 * waits for an RCU grace period (8-19 ms here). */
int al_cgroup__attach(const struct al_cgroup *cg, pid_t pid, bool v1, struct al_error *err);
/* The v1 hierarchies' "tasks" files of the run's cgroups, opened for a
 * child to join them itself by writing "0" to each (fds[i] = -1 where that
 * hierarchy is not used).  A single thread moving itself skips the global
 * lock (Linux 6.0 and later), so it does not wait; the permission is
 * checked against the opener's credentials. */
int al_cgroup__v1_tasks(const struct al_cgroup *cg, int fds[3], struct al_error *err);
/* After every process is dead: was one killed for memory, and the peak. */
void al_cgroup__stats(const struct al_cgroup *cg, bool *oom, uint64_t *peak);
void al_cgroup__destroy(struct al_cgroup *cg);
const char *al_cgroup__kind(const struct al_cgroup *cg);

/* The seccomp filter every sandbox loads (docs/threat-model.md), as BPF;
 * out->filter is malloc'ed.  The program is compiled by libseccomp at
 * build time (al_seccomp__compile, run by tools/seccomp_gen.c), since
 * compiling it costs ~5 M instructions, a quarter of a whole `airlock
 * run`; tests/unit/test_seccomp.c checks it equals a fresh compile. */
int al_seccomp__build(struct sock_fprog *out, struct al_error *err);
/* The same program compiled now by libseccomp from the rules in seccomp.c. */
int al_seccomp__compile(struct sock_fprog *out, struct al_error *err);
/* The program compiled at build time ($(BUILD)/gen/seccomp_bpf.c). */
extern const struct sock_filter al_seccomp__bpf[];
extern const unsigned short al_seccomp__bpf_len;

/* airlock-init (the open file src) as the sandbox executes it: a sealed
 * memory file of its own (no write, grow or shrink; mode 0555 and, on
 * Linux 6.3 and later, no chmod of its execute bits), so a sandbox cannot
 * write the host's binary through /proc/1/exe (runc's CVE-2019-5736).  A
 * new copy each call (close-on-exec): runs never share one. */
int al_sandbox__sealed_init(int src, struct al_error *err);

#endif
