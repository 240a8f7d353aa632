/* doctor: what this host gives the namespace sandbox (sandbox.h).  Each
 * check runs the real thing in a forked child (a user namespace, an
 * overlay with userxattr, /proc in a new PID namespace, the seccomp filter,
 * the i386 entry point) and reports; the cgroup controllers are created
 * and removed as a run's would be. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/seccomp.h>

#include "sandbox_private.h"
#include "util.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

enum probe { P_USERNS, P_OVERLAY, P_PROC, P_SECCOMP, P_I386 };

static int write_self(const char *file, const char *val)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/%s", file);
	return al_write_string(p, val);
}

/* In a child: become root of a new user namespace (and more). */
static int enter_userns(int extra)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER | extra) < 0)
		return -1;
	char map[64];
	snprintf(map, sizeof(map), "0 %u 1\n", uid);
	if (write_self("uid_map", map) < 0)
		return -1;
	write_self("setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1\n", gid);
	return write_self("gid_map", map);
}

static void i386_segv(int sig)
{
	(void)sig;
	_exit(3);
}

static _Noreturn void child(enum probe p, const struct sock_fprog *prog)
{
	switch (p) {
	case P_USERNS: _exit(enter_userns(0) == 0 ? 0 : 1);
	case P_OVERLAY: {
		if (enter_userns(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tmpfs", "/tmp", "tmpfs", 0, "size=1m") < 0)
			_exit(1);
		if (mkdir("/tmp/l", 0755) < 0 || mkdir("/tmp/u", 0755) < 0 ||
		    mkdir("/tmp/w", 0755) < 0 || mkdir("/tmp/m", 0755) < 0)
			_exit(1);
		_exit(mount("overlay", "/tmp/m", "overlay", 0,
			    "lowerdir=/tmp/l,upperdir=/tmp/u,workdir=/tmp/w,userxattr") == 0
			      ? 0
			      : 2);
	}
	case P_PROC: {
		if (enter_userns(CLONE_NEWNS | CLONE_NEWPID) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tmpfs", "/tmp", "tmpfs", 0, "size=1m") < 0 || mkdir("/tmp/p", 0555) < 0)
			_exit(1);
		pid_t c = fork();
		if (c == 0)
			_exit(mount("proc", "/tmp/p", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
				    NULL) == 0
				      ? 0
				      : 2);
		int st = 0;
		waitpid(c, &st, 0);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
	}
	case P_SECCOMP:
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) < 0)
			_exit(1);
		/* the filter is in force: a denied call fails, an allowed one works */
		_exit(syscall(SYS_keyctl, 0, 0, 0) < 0 && errno == EPERM && getpid() > 0 ? 0 : 2);
	case P_I386: {
#if defined(__x86_64__)
		signal(SIGSEGV, i386_segv);
		long rc;
		__asm__ volatile("int $0x80" : "=a"(rc) : "a"(20) : "memory");
		_exit(rc > 0 ? 0 : 4);
#else
		_exit(5);
#endif
	}
	}
	_exit(1);
}

/* The child's exit status, -1 if it could not start or died. */
static int probe(enum probe p, const struct sock_fprog *prog)
{
	fflush(NULL);
	pid_t c = fork();
	if (c < 0)
		return -1;
	if (c == 0)
		child(p, prog);
	int st;
	while (waitpid(c, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static struct al_doctor_item *add(struct al_doctor_item *items, int *n, const char *check, bool ok,
				  bool required, const char *detail, const char *fix)
{
	struct al_doctor_item *it = &items[(*n)++];
	it->check = check;
	it->ok = ok;
	it->required = required;
	snprintf(it->detail, sizeof(it->detail), "%s", detail);
	snprintf(it->fix, sizeof(it->fix), "%s", ok ? "" : fix);
	return it;
}

int al_sandbox_doctor(struct al_doctor_item items[AL_DOCTOR_MAX])
{
	int n = 0;
	bool userns = probe(P_USERNS, NULL) == 0;
	add(items, &n, "user namespaces", userns, true,
	    userns ? "a process can create a user namespace and map its ids"
		   : "unshare(CLONE_NEWUSER) is refused",
	    "enable them: sysctl kernel.unprivileged_userns_clone=1 (Debian), "
	    "user.max_user_namespaces > 0; in a "
	    "container, allow unshare (e.g. a seccomp profile that permits it)");
	int ov = userns ? probe(P_OVERLAY, NULL) : -1;
	add(items, &n, "overlayfs with userxattr", ov == 0, true,
	    ov == 0 ? "overlay mounts in a user namespace with userxattr"
		    : "overlay with userxattr cannot be mounted",
	    "Linux 5.11 or later with overlayfs (modprobe overlay); tmpfs user xattrs need 6.6+");
	int pr = userns ? probe(P_PROC, NULL) : -1;
	add(items, &n, "/proc in a new PID namespace", pr == 0, true,
	    pr == 0 ? "a fresh /proc mounts"
		    : "mounting /proc failed (a masked or read-only /proc above us?)",
	    "in a container, give airlock an unmasked /proc (Docker: --security-opt "
	    "systempaths=unconfined) or run it "
	    "on the host");
	struct sock_fprog prog = { 0 };
	struct al_error err = { 0 };
	int sc = al_seccomp__build(&prog, &err) == 0 ? probe(P_SECCOMP, &prog) : -1;
	free(prog.filter);
	add(items, &n, "seccomp filter", sc == 0, true,
	    sc == 0 ? "the sandbox's filter loads and denies what it must"
		    : "the seccomp filter cannot be loaded",
	    "a kernel with CONFIG_SECCOMP_FILTER and libseccomp 2.5+");

	/* the cgroup controllers, as a run would create them */
	struct al_limits l = { .memory = 64 << 20, .pids = 64, .cpus_milli = 1000 };
	struct al_cgroup cg;
	char name[48];
	snprintf(name, sizeof(name), "doctor-%d", (int)getpid());
	bool made = al_cgroup__create(&l, name, true, &cg, &err) == 0;
	static const char *const ctl[3] = { "memory", "pids", "cpu" };
	static const char *const checks[3] = { "cgroup memory", "cgroup pids", "cgroup cpu" };
	const char *dirs[3] = { cg.v1_memory, cg.v1_pids, cg.v1_cpu };
	bool have[3] = { made && cg.memory, made && cg.pids, made && cg.cpu };
	for (int i = 0; i < 3; i++) {
		char d[160];
		if (have[i])
			snprintf(d, sizeof(d), "the %s limit is enforced (cgroup %s)", ctl[i],
				 dirs[i][0] ? "v1" : "v2");
		else
			snprintf(d, sizeof(d),
				 "no %s controller airlock may write: the %s limit cannot be "
				 "enforced",
				 ctl[i], ctl[i]);
		add(items, &n, checks[i], have[i], false, d,
		    "run airlock as root, or delegate its cgroup (systemd: Delegate=yes; airlock "
		    "must be the only process "
		    "of it); else runs are refused unless the operator sets --best-effort-limits "
		    "on");
	}
	if (made)
		al_cgroup__destroy(&cg);

	int i386 = probe(P_I386, NULL);
	add(items, &n, "IA32 emulation", true, false,
	    i386 == 0   ? "present: the i386 ABI exists; the seccomp filter refuses it (ENOSYS)"
	    : i386 == 3 ? "absent: the kernel has no i386 entry point (nothing to filter)"
			: "not an x86-64 host",
	    "");
	int vs = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool vsock = vs >= 0 || access("/dev/vsock", F_OK) == 0;
	if (vs >= 0)
		close(vs);
	add(items, &n, "vsock", true, false,
	    vsock ? "present (a VM host or guest): network namespaces do not isolate it; the "
		    "filter refuses AF_VSOCK"
		  : "absent",
	    "");
	return n;
}
