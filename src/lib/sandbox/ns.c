/* The namespace sandbox backend (sandbox.h).
 *
 * The parent prepares everything that allocates (seccomp BPF, option
 * strings, argv, the sealed copy of airlock-init, the cgroups and their
 * files), then clones a child into new user, mount, pid, net, ipc and uts
 * namespaces, born in the run's v2 cgroup where there is one (clone3).
 * The child, without allocating: joins the run's v1 cgroups itself; waits
 * for the parent's first word (its uid/gid maps are written), then
 *
 *   mounts private; a size-capped tmpfs on /tmp holding the upper layers
 *   (its fd goes to the parent, which reads the workspace's upper layer
 *   after the run); overlay / (image) and /workspace (snapshot); /proc; a
 *   minimal /dev; /tmp; hostname; lo up; pivot_root and detach the old
 *   root;
 *
 * waits for the second word (it is in every cgroup of the run: the parent
 * writes the pid of a child the clone did not put in its v2 cgroup while
 * that setup runs), then: cgroup namespace; the secret files; rlimits;
 * stdio; no_new_privs; every capability dropped; seccomp; exec
 * airlock-init.
 *
 * A failing step writes {stage, errno} to a close-on-exec pipe; EOF on that
 * pipe means airlock-init is running.  The child is PID 1 of the sandbox:
 * when it exits the kernel kills everything else in it, so waiting for it
 * waits for the whole sandbox, and killing it (timeout) kills everything. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <netinet/in.h>

#include "airlock/net.h"
#include "integ_private.h"
#include "net_private.h"
#include "sandbox_private.h"
#include "util.h"

enum stage {
	ST_SYNC,
	ST_CGROUP,
	ST_IDS,
	ST_SESSION,
	ST_CGROUPNS,
	ST_TIMENS,
	ST_CPUS,
	ST_PRIVATE,
	ST_TMPFS,
	ST_SEND,
	ST_DIRS,
	ST_ROOT,
	ST_WORKSPACE,
	ST_PROC,
	ST_PROC_MASK,
	ST_DEV,
	ST_TMP,
	ST_HOSTNAME,
	ST_LO,
	ST_PROXY,
	ST_INTEG,
	ST_PIVOT,
	ST_SECRETS,
	ST_CHDIR,
	ST_RLIMIT,
	ST_STDIO,
	ST_NNP,
	ST_CAPS,
	ST_SECCOMP,
	ST_EXEC,
	ST_N
};
static const char *const stage_names[ST_N] = {
	[ST_SYNC] = "waiting for the parent",
	[ST_CGROUP] = "joining the run's cgroups",
	[ST_IDS] = "setting the sandbox's ids",
	[ST_SESSION] = "starting a new session",
	[ST_CGROUPNS] = "cgroup namespace",
	[ST_TIMENS] = "time namespace",
	[ST_CPUS] = "pinning the CPUs",
	[ST_PRIVATE] = "making mounts private",
	[ST_TMPFS] = "mounting the run's tmpfs",
	[ST_SEND] = "handing the upper layer to the parent",
	[ST_DIRS] = "creating the layer directories",
	[ST_ROOT] = "mounting the root overlay",
	[ST_WORKSPACE] = "mounting the /workspace overlay",
	[ST_PROC] = "mounting /proc",
	[ST_PROC_MASK] = "masking /proc",
	[ST_DEV] = "populating /dev",
	[ST_TMP] = "mounting /tmp",
	[ST_HOSTNAME] = "setting the hostname",
	[ST_LO] = "bringing up loopback",
	[ST_PROXY] = "opening the egress proxy's socket",
	[ST_INTEG] = "opening the integrations' socket",
	[ST_PIVOT] = "pivot_root",
	[ST_SECRETS] = "writing /run/airlock/secrets",
	[ST_CHDIR] = "entering /workspace",
	[ST_RLIMIT] = "setting rlimits",
	[ST_STDIO] = "setting up stdio",
	[ST_NNP] = "no_new_privs",
	[ST_CAPS] = "dropping capabilities",
	[ST_SECCOMP] = "loading the seccomp filter",
	[ST_EXEC] = "starting airlock-init",
};

/* Everything the child needs, prepared by the parent. */
struct child {
	int sock, status_w, out_w, err_w, devnull, init_fd;
	int parent_sock; /* the parent's end: closed first, so its death is our EOF */
	int cg_tasks[3]; /* the run's v1 cgroups' "tasks" files, to join (or -1) */
	char tmpfs_opts[96], root_opts[160], ws_opts[160], secrets_opts[96];
	const struct al_sandbox_file *secrets;
	size_t nsecrets;
	const char *const *argv;
	const char *const *envp;
	const struct sock_fprog *prog;
	int last_cap;
	bool drop_groups; /* we may (host root): setgroups(0) once the gid map is written */
	uint64_t fsize, nproc;
	bool timens;   /* a time namespace: the clocks start at AL_SANDBOX_BOOT_S */
	bool egress;   /* listen on 127.0.0.1:AL_NET_PROXY_PORT for the host's proxy */
	bool integ;    /* and on 127.0.0.1:AL_INTEG_PORT for the integrations' relay */
	cpu_set_t cpu; /* the CPUs the sandbox runs on (its count is what nproc says) */
};

static _Noreturn void child_fail(const struct child *c, int stage)
{
	struct al_sandbox__report m = { stage, errno };
	if (write(c->status_w, &m, sizeof(m)) < 0)
		_exit(126);
	_exit(125);
}
#define TRY(cond, stage)                      \
	do {                                  \
		if (!(cond))                  \
			child_fail(c, stage); \
	} while (0)

/* a + b into buf (no allocation between clone and exec) */
static const char *join(char *buf, size_t n, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la + lb + 1 > n)
		return "";
	memcpy(buf, a, la);
	memcpy(buf + la, b, lb + 1);
	return buf;
}

/* Decimal v at p (no allocation between clone and exec); returns the end. */
static char *put_i64(char *p, int64_t v)
{
	char d[24];
	size_t n = 0;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	do
		d[n++] = (char)('0' + u % 10);
	while ((u /= 10));
	if (v < 0)
		*p++ = '-';
	while (n)
		*p++ = d[--n];
	return p;
}

/* "NAME SECS NSECS\n": the offset that makes clock read AL_SANDBOX_BOOT_S now */
static char *put_offset(char *p, const char *name, clockid_t clock)
{
	struct timespec t;
	clock_gettime(clock, &t);
	int64_t sec = AL_SANDBOX_BOOT_S - (int64_t)t.tv_sec, nsec = -(int64_t)t.tv_nsec;
	if (nsec < 0) {
		nsec += 1000000000;
		sec--;
	}
	size_t n = strlen(name);
	memcpy(p, name, n);
	p += n;
	*p++ = ' ';
	p = put_i64(p, sec);
	*p++ = ' ';
	p = put_i64(p, nsec);
	*p++ = '\n';
	return p;
}

/* A time namespace for the sandbox's processes (they enter it at exec and
 * fork): its monotonic and boot clocks, and so /proc/uptime, read
 * AL_SANDBOX_BOOT_S when it starts, whatever the host's uptime.  The wall
 * clock cannot be offset (time_namespaces(7)). */
static void child_timens(const struct child *c)
{
	char buf[128], *p = buf;
	TRY(unshare(CLONE_NEWTIME) == 0, ST_TIMENS);
	p = put_offset(p, "monotonic", CLOCK_MONOTONIC);
	p = put_offset(p, "boottime", CLOCK_BOOTTIME);
	int fd = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
	TRY(fd >= 0, ST_TIMENS);
	TRY(write(fd, buf, (size_t)(p - buf)) == p - buf, ST_TIMENS);
	close(fd);
}

static bool mkdir_ok(const char *path, mode_t mode)
{
	return mkdir(path, mode) == 0 || errno == EEXIST;
}

/* The run's secret files: a tmpfs of this mount namespace only (it dies
 * with the sandbox), written, then made read-only.  After pivot_root, so an
 * image's /run symlink can only point within the sandbox. */
static void child_secrets(const struct child *c)
{
	static const char dir[] = "/run/airlock/secrets";
	TRY(mkdir_ok("/run", 0755) && mkdir_ok("/run/airlock", 0755) && mkdir_ok(dir, 0700),
	    ST_SECRETS);
	TRY(mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, c->secrets_opts) == 0,
	    ST_SECRETS);
	int d = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	TRY(d >= 0, ST_SECRETS);
	for (size_t i = 0; i < c->nsecrets; i++) {
		int fd = openat(d, c->secrets[i].name,
				O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
		TRY(fd >= 0, ST_SECRETS);
		const char *p = c->secrets[i].data;
		size_t left = c->secrets[i].len;
		while (left) {
			ssize_t w = write(fd, p, left);
			TRY(w > 0 || errno == EINTR, ST_SECRETS);
			if (w > 0) {
				p += w;
				left -= (size_t)w;
			}
		}
		close(fd);
	}
	close(d);
	TRY(mount(NULL, dir, NULL,
		  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0,
	    ST_SECRETS);
}

/* No host terminal exists inside: no /dev/tty (the sandbox is its own
 * session without a controlling terminal anyway), no /dev/console. */
static void child_dev(const struct child *c)
{
	static const char *const nodes[] = { "null", "zero", "full", "random", "urandom" };
	char src[64], dst[64];
	TRY(mkdir_ok("/tmp/new/dev", 0755), ST_DEV);
	TRY(mount("tmpfs", "/tmp/new/dev", "tmpfs", MS_NOSUID | MS_NOEXEC,
		  "mode=0755,size=64k,nr_inodes=64") == 0,
	    ST_DEV);
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		join(src, sizeof(src), "/dev/", nodes[i]);
		join(dst, sizeof(dst), "/tmp/new/dev/", nodes[i]);
		int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		TRY(fd >= 0, ST_DEV);
		close(fd);
		TRY(mount(src, dst, NULL, MS_BIND, NULL) == 0, ST_DEV);
	}
	TRY(mkdir("/tmp/new/dev/pts", 0755) == 0, ST_DEV);
	TRY(mount("devpts", "/tmp/new/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=620") == 0,
	    ST_DEV);
	TRY(symlink("pts/ptmx", "/tmp/new/dev/ptmx") == 0, ST_DEV);
	TRY(symlink("/proc/self/fd", "/tmp/new/dev/fd") == 0, ST_DEV);
	TRY(symlink("/proc/self/fd/0", "/tmp/new/dev/stdin") == 0, ST_DEV);
	TRY(symlink("/proc/self/fd/1", "/tmp/new/dev/stdout") == 0, ST_DEV);
	TRY(symlink("/proc/self/fd/2", "/tmp/new/dev/stderr") == 0, ST_DEV);
	TRY(mkdir("/tmp/new/dev/shm", 01777) == 0, ST_DEV);
}

/* /proc as runc masks it (its default spec's maskedPaths and
 * readonlyPaths), plus cmdline and kallsyms: host-revealing files read as
 * empty, directories as an empty read-only tmpfs; the kernel's tunables
 * are read-only.  An entry this kernel does not have is skipped. */
static void child_proc_masks(const struct child *c)
{
	static const char *const files[] = {
		"kcore",       "keys",          "kallsyms", "timer_list",    "timer_stats",
		"sched_debug", "latency_stats", "cmdline",  "sysrq-trigger", "interrupts",
		"kmsg",        "config.gz",     "modules",  "vmallocinfo",   "slabinfo",
		"buddyinfo",   "pagetypeinfo",  "zoneinfo", "iomem",         "ioports",
		"softirqs",    "consoles",      "devices",  "partitions",    "diskstats",
	};
	static const char *const dirs[] = { "acpi",   "asound", "scsi",
					    "driver", "tty",    "dynamic_debug" };
	static const char *const readonly[] = { "sys", "bus", "fs", "irq" };
	char p[96];
	struct stat s;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		join(p, sizeof(p), "/tmp/new/proc/", files[i]);
		if (lstat(p, &s) < 0)
			continue;
		TRY(mount("/dev/null", p, NULL, MS_BIND, NULL) == 0, ST_PROC_MASK);
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		join(p, sizeof(p), "/tmp/new/proc/", dirs[i]);
		if (lstat(p, &s) < 0 || !S_ISDIR(s.st_mode))
			continue;
		TRY(mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  "size=0,nr_inodes=1") == 0,
		    ST_PROC_MASK);
	}
	for (size_t i = 0; i < sizeof(readonly) / sizeof(readonly[0]); i++) {
		join(p, sizeof(p), "/tmp/new/proc/", readonly[i]);
		if (lstat(p, &s) < 0)
			continue;
		TRY(mount(p, p, NULL, MS_BIND | MS_REC, NULL) == 0, ST_PROC_MASK);
		TRY(mount(NULL, p, NULL,
			  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  NULL) == 0,
		    ST_PROC_MASK);
	}
}

/* The setup's listening sockets come after its tmpfs; a setup that sends
 * nothing for this long is taken as stuck. */
#define SETUP_FD_TIMEOUT_MS (120 * 1000)

static _Noreturn void child_main(const struct child *c)
{
	char go;
	close(c->parent_sock);
	/* into the run's v1 cgroups, by our own hand: this thread alone, so
	 * without the global lock a pid written by the parent would take
	 * (al_cgroup__v1_tasks); before anything else */
	for (int i = 0; i < 3; i++)
		if (c->cg_tasks[i] >= 0) {
			TRY(write(c->cg_tasks[i], "0", 1) == 1, ST_CGROUP);
			close(c->cg_tasks[i]);
		}
	/* the first word: the id maps are written */
	TRY(read(c->sock, &go, 1) == 1 && go == 'm', ST_SYNC);
	/* before the ids change: that makes us not dumpable, and our own
	 * /proc/self files then belong to the host's root */
	if (c->timens)
		child_timens(c);
	/* raw syscalls: glibc's setres*id broadcast the change to every thread
	 * it believes the process has, and after clone from a threaded parent
	 * (the daemon) those threads are gone: it would wait forever */
	TRY(syscall(SYS_setresgid, 0, 0, 0) == 0 && syscall(SYS_setresuid, 0, 0, 0) == 0, ST_IDS);
	/* the host's supplementary groups (root, adm, sudo, …) would still
	 * grant access inside, shown as 65534 */
	if (c->drop_groups)
		TRY(syscall(SYS_setgroups, 0, NULL) == 0, ST_IDS);
	/* if airlock dies (even by SIGKILL), so does the sandbox: PID 1 gets
	 * SIGKILL and the kernel the rest.  Set after the ids (a change of
	 * credentials clears it); a parent gone before that is seen as the
	 * socket's hang-up. */
	TRY(prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, ST_SYNC);
	struct pollfd hup = { c->sock, POLLRDHUP, 0 };
	if (poll(&hup, 1, 0) > 0 && (hup.revents & (POLLRDHUP | POLLHUP | POLLERR)))
		_exit(125);
	/* a session of its own: no controlling terminal, so nothing inside
	 * can open the operator's terminal, read what is typed there or
	 * become its foreground process group */
	TRY(setsid() >= 0, ST_SESSION);
	umask(0);
	TRY(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0, ST_PRIVATE);

	/* the run's writable storage: upper layers of / and /workspace, and
	 * /tmp, in one tmpfs whose size and inode caps are the disk limits */
	TRY(mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, c->tmpfs_opts) == 0, ST_TMPFS);
	int t = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
	TRY(t >= 0, ST_TMPFS);
	TRY(al_fd_send(c->sock, t) == 0, ST_SEND);
	TRY(mkdirat(t, "root", 0755) == 0 && mkdirat(t, "root/upper", 0755) == 0 &&
		    mkdirat(t, "root/work", 0700) == 0 && mkdirat(t, "ws", 0755) == 0 &&
		    mkdirat(t, "ws/upper", 0755) == 0 && mkdirat(t, "ws/work", 0700) == 0 &&
		    mkdirat(t, "tmp", 01777) == 0 && mkdirat(t, "new", 0755) == 0,
	    ST_DIRS);
	close(t);

	TRY(mount("overlay", "/tmp/new", "overlay", MS_NOSUID | MS_NODEV, c->root_opts) == 0,
	    ST_ROOT);
	TRY(mkdir_ok("/tmp/new/workspace", 0755), ST_WORKSPACE);
	TRY(mount("overlay", "/tmp/new/workspace", "overlay", MS_NOSUID | MS_NODEV, c->ws_opts) ==
		    0,
	    ST_WORKSPACE);
	TRY(mkdir_ok("/tmp/new/proc", 0555), ST_PROC);
	TRY(mount("proc", "/tmp/new/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0,
	    ST_PROC);
	child_proc_masks(c);
	child_dev(c);
	TRY(mkdir_ok("/tmp/new/tmp", 01777), ST_TMP);
	TRY(mount("/tmp/tmp", "/tmp/new/tmp", NULL, MS_BIND, NULL) == 0, ST_TMP);
	TRY(mkdir_ok("/tmp/new/root", 0700), ST_DIRS);

	TRY(sethostname("airlock", 7) == 0, ST_HOSTNAME);
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	TRY(s >= 0, ST_LO);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	TRY(ioctl(s, SIOCGIFFLAGS, &ifr) == 0, ST_LO);
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	TRY(ioctl(s, SIOCSIFFLAGS, &ifr) == 0, ST_LO);
	close(s);
	if (c->egress) {
		/* the proxy's socket, in this network namespace: the parent
		 * accepts from it, so nothing of the sandbox holds it */
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons(AL_NET_PROXY_PORT),
					  .sin_addr = { htonl(INADDR_LOOPBACK) } };
		int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		TRY(l >= 0, ST_PROXY);
		TRY(bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(l, 512) == 0,
		    ST_PROXY);
		TRY(al_fd_send(c->sock, l) == 0, ST_PROXY);
		close(l);
	}
	if (c->integ) {
		/* the integrations' socket, the same way */
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons(AL_INTEG_PORT),
					  .sin_addr = { htonl(INADDR_LOOPBACK) } };
		int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		TRY(l >= 0, ST_INTEG);
		TRY(bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(l, 64) == 0,
		    ST_INTEG);
		TRY(al_fd_send(c->sock, l) == 0, ST_INTEG);
		close(l);
	}

	TRY(chdir("/tmp/new") == 0, ST_PIVOT);
	TRY(syscall(SYS_pivot_root, ".", ".") == 0, ST_PIVOT);
	TRY(umount2(".", MNT_DETACH) == 0, ST_PIVOT);
	TRY(chdir("/workspace") == 0, ST_CHDIR);
	umask(022);

	/* The second word: this process is in every cgroup of the run.  Where
	 * the clone did not put it in the v2 one (a kernel without
	 * CLONE_INTO_CGROUP), the parent moved it while the setup above ran
	 * (that write may wait for an RCU grace period, 8-19 ms: the two
	 * overlap), and the setup, ours and bounded (a few directories and
	 * mounts), was charged to the caller's v2 cgroup.  Nothing of the
	 * command runs before: its memory, tasks and CPU, and the secret
	 * files, are the run's.  The cgroup namespace is rooted at the run's
	 * cgroups, so it is made after the move. */
	TRY(read(c->sock, &go, 1) == 1 && go == 'g', ST_SYNC);
	TRY(unshare(CLONE_NEWCGROUP) == 0, ST_CGROUPNS);
	/* the secret files' pages are the run's memory: written in its cgroups */
	if (c->nsecrets)
		child_secrets(c);

	struct rlimit core = { 0, 0 }, nofile = { 1024, 1024 };
	TRY(setrlimit(RLIMIT_CORE, &core) == 0 && setrlimit(RLIMIT_NOFILE, &nofile) == 0,
	    ST_RLIMIT);
	if (c->fsize) {
		struct rlimit fs = { c->fsize, c->fsize };
		TRY(setrlimit(RLIMIT_FSIZE, &fs) == 0, ST_RLIMIT);
	}
	if (c->nproc) {
		struct rlimit np = { c->nproc, c->nproc };
		TRY(setrlimit(RLIMIT_NPROC, &np) == 0, ST_RLIMIT);
	}
	TRY(dup2(c->devnull, 0) == 0 && dup2(c->out_w, 1) == 1 && dup2(c->err_w, 2) == 2, ST_STDIO);
	TRY(syscall(SYS_close_range, 3, ~0u, CLOSE_RANGE_CLOEXEC) == 0, ST_STDIO);

	/* last: the setup above may use every CPU (pinned, a busy CPU would
	 * hold it back); airlock-init and the command run on the pinned ones */
	TRY(sched_setaffinity(0, sizeof(c->cpu), &c->cpu) == 0, ST_CPUS);
	TRY(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, ST_NNP);
	for (int cap = 0; cap <= c->last_cap; cap++)
		TRY(prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 || errno == EINVAL, ST_CAPS);
	TRY(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == 0, ST_CAPS);
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct none[2];
	memset(none, 0, sizeof(none));
	TRY(capset(&hdr, none) == 0, ST_CAPS);
	TRY(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, c->prog) == 0, ST_SECCOMP);
	execveat(c->init_fd, "", (char *const *)c->argv, (char *const *)c->envp, AT_EMPTY_PATH);
	child_fail(c, ST_EXEC);
}

/* ---- parent ----------------------------------------------------------------- */

static int write_proc(pid_t pid, const char *file, const char *val)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, file);
	return al_write_string(p, val);
}

/* Linux 6.3: no chmod of the execute bits (older kernels refuse the seal) */
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif
/* Linux 6.3: an executable memory file, asked for; older kernels refuse
 * the flag (EINVAL) and make every memory file executable */
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

/* airlock-init copied into a sealed memory file (sandbox_private.h): the
 * sandbox can see its PID 1's executable through /proc/1/exe, and must
 * never be able to write the host's binary through it.  A copy per run:
 * nothing one sandbox could do to its copy's metadata reaches another. */
int al_sandbox__sealed_init(int src, struct al_error *err)
{
	struct stat s;
	if (fstat(src, &s) < 0 || !S_ISREG(s.st_mode))
		return al_fail(err, AL_EINVAL, 0, "sandbox: airlock-init is not a regular file");
	/* vm.memfd_noexec (per PID namespace, inherited) at 1 makes a memory
	 * file not asked to be executable 0666 with its execute bits sealed
	 * already; at 2 it refuses an executable one (EACCES) */
	int m = memfd_create("airlock-init", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
	if (m < 0 && errno == EINVAL)
		m = memfd_create("airlock-init", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (m < 0 && errno == EACCES)
		return al_fail(err, AL_ESANDBOX, errno,
			       "sandbox: this PID namespace's vm.memfd_noexec (2) forbids the "
			       "executable sealed copy of airlock-init every run starts from; "
			       "set it to 0 or 1 where airlock runs");
	if (m < 0)
		return al_fail(err, AL_EIO, errno, "sandbox: memfd");
	off_t off = 0;
	while (off < s.st_size) {
		ssize_t n = sendfile(m, src, &off, s.st_size - off);
		if (n <= 0) {
			close(m);
			return al_fail(err, AL_EIO, n < 0 ? errno : EIO,
				       "sandbox: copy airlock-init");
		}
	}
	const int seals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
	if (fchmod(m, 0555) < 0 || (fcntl(m, F_ADD_SEALS, seals | F_SEAL_EXEC) < 0 &&
				    (errno != EINVAL || fcntl(m, F_ADD_SEALS, seals) < 0))) {
		close(m);
		return al_fail(err, AL_EIO, errno, "sandbox: seal airlock-init");
	}
	return m;
}

/* The CPUs a sandbox runs on: as many as its CPU limit rounds up to (1.5
 * CPUs: 2), at most those this thread may use, starting at the one this
 * thread runs on (no migration; concurrent runs' threads are spread by the
 * scheduler already).  Returns their count. */
static unsigned pick_cpus(uint64_t cpus_milli, cpu_set_t *out)
{
	cpu_set_t allowed;
	CPU_ZERO(out);
	if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
		return 0;
	unsigned have = (unsigned)CPU_COUNT(&allowed), want = have;
	if (cpus_milli && (cpus_milli + 999) / 1000 < have)
		want = (unsigned)((cpus_milli + 999) / 1000);
	int here = sched_getcpu();
	unsigned skip = 0, taken = 0;
	for (int cpu = 0; cpu < here && cpu < CPU_SETSIZE; cpu++)
		skip += CPU_ISSET(cpu, &allowed) != 0;
	/* twice round the allowed set: skip, then take want */
	for (int pass = 0; pass < 2 && taken < want; pass++)
		for (int cpu = 0; cpu < CPU_SETSIZE && taken < want; cpu++) {
			if (!CPU_ISSET(cpu, &allowed) || CPU_ISSET(cpu, out))
				continue;
			if (skip) {
				skip--;
				continue;
			}
			CPU_SET(cpu, out);
			taken++;
		}
	return taken;
}

static int last_cap(void)
{
	char buf[16] = "";
	_cleanup_close_ int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && al_read_full(fd, buf, sizeof(buf) - 1) > 0)
		return atoi(buf);
	return 63;
}

struct pump {
	int fd;
	int stream;
	uint64_t *count;
};

static void pump_read(struct pump *p, const struct al_sandbox_spec *spec)
{
	char buf[65536];
	ssize_t n = read(p->fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close(p->fd);
		p->fd = -1;
		return;
	}
	*p->count += (uint64_t)n;
	if (spec->output)
		spec->output(spec->output_ctx, p->stream, buf, (size_t)n);
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0) {
			close(p[i]);
			p[i] = -1;
		}
}

struct ns_state {
	int out[2], errp[2], status[2], sock[2];
	int devnull, init, pidfd, tmpfs, proxy, integ;
	int cg_tasks[3]; /* until the clone: the child's (struct child) */
	int cg_v2;       /* until the clone: the run's v2 cgroup, to clone into */
	bool in_v2;      /* the clone put the child there */
	pid_t pid;
	struct al_cgroup cg;
	struct sock_fprog prog;
	const char **argv;
	unsigned cpus; /* pinned */
	bool timens;
};

static void ns_release(struct ns_state *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	close_pair(s->out);
	close_pair(s->errp);
	close_pair(s->status);
	close_pair(s->sock);
	int *fds[] = { &s->devnull, &s->init,        &s->pidfd,       &s->tmpfs,       &s->proxy,
		       &s->integ,   &s->cg_tasks[0], &s->cg_tasks[1], &s->cg_tasks[2], &s->cg_v2 };
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		al_sandbox__close(fds[i]);
	al_cgroup__destroy(&s->cg);
	free(s->prog.filter);
	free(s->argv);
}

/* A fork-like clone into new namespaces (flags), born in the cgroup v2
 * directory cgroup_fd when there is one (clone3's CLONE_INTO_CGROUP,
 * Linux 5.7): writing its pid to cgroup.procs afterwards would take the
 * kernel's global threadgroup lock, whose first taking after a quiet spell
 * waits for an RCU grace period.  *joined says whether it was.  A kernel
 * without clone3 or the flag (ENOSYS, E2BIG, EINVAL), or a seccomp profile
 * that denies clone3 (EPERM: older container runtimes), gets the plain
 * clone, and the caller writes the pid; any other error is the cgroup's
 * (*into_cgroup set). */
static pid_t sandbox_clone(uint64_t flags, int cgroup_fd, bool *joined, bool *into_cgroup)
{
	*joined = *into_cgroup = false;
	if (cgroup_fd >= 0) {
		struct clone_args a = { .flags = flags | CLONE_INTO_CGROUP,
					.exit_signal = SIGCHLD,
					.cgroup = (uint64_t)cgroup_fd };
		pid_t pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
		if (pid >= 0) {
			*joined = true;
			return pid;
		}
		if (errno != ENOSYS && errno != E2BIG && errno != EINVAL && errno != EPERM) {
			*into_cgroup = true;
			return -1;
		}
	}
	return (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
}

/* What the setup said when it ended (its end of the status pipe closes at
 * exec): a failed stage, as an error; 0 for nothing, 1 for something that
 * is not a report. */
static int setup_report(struct ns_state *s, struct al_error *err)
{
	return al_sandbox__read_report(s->status[0], stage_names, ST_N, "sandbox: ", err);
}

/* A step of the parent failed (r, err): when the child's setup failed
 * first, its report is the error that says why.  A report is written
 * before the child exits, so one that is coming arrives within moments. */
static int child_first(struct ns_state *s, int r, struct al_error *err)
{
	struct pollfd p = { s->status[0], POLLIN, 0 };
	struct al_error why = { 0 };
	if (poll(&p, 1, 200) == 1 && setup_report(s, &why) < 0) {
		*err = why;
		return why.code;
	}
	return r;
}

static int ns_start(const struct al_sandbox_spec *spec, struct ns_state *s, struct al_error *err)
{
	int r = al_seccomp__build(&s->prog, err);
	if (r < 0)
		return r;
	uint8_t rnd[6];
	char hex[13], name[40];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return al_fail(err, AL_EIO, errno, "sandbox: random");
	al_hex(rnd, sizeof(rnd), hex);
	snprintf(name, sizeof(name), "run-%s", hex);
	if ((r = al_cgroup__create(&spec->limits, name, spec->best_effort_limits, &s->cg, err)) < 0)
		return r;
	if ((s->init = al_sandbox__sealed_init(spec->init_fd, err)) < 0)
		return s->init;
	size_t argc = 0;
	while (spec->argv[argc])
		argc++;
	if (!argc)
		return al_fail(err, AL_EUSAGE, 0, "sandbox: no command");
	if (!(s->argv = calloc(argc + 3, sizeof(char *))))
		return al_fail(err, AL_ENOMEM, ENOMEM, "sandbox");
	s->argv[0] = "airlock-init";
	s->argv[1] = "--";
	memcpy(s->argv + 2, spec->argv, argc * sizeof(char *));

	struct child c = { .argv = s->argv,
			   .envp = spec->envp,
			   .prog = &s->prog,
			   .last_cap = last_cap(),
			   .drop_groups = geteuid() == 0 };
	const struct al_limits *l = &spec->limits;
	snprintf(c.tmpfs_opts, sizeof(c.tmpfs_opts), "mode=0700,size=%llu,nr_inodes=%llu",
		 (unsigned long long)(l->disk ? l->disk : 1ull << 40),
		 (unsigned long long)(l->files ? l->files + 16 : 1ull << 24));
	snprintf(c.root_opts, sizeof(c.root_opts),
		 "lowerdir=%s,upperdir=/tmp/root/upper,workdir=/tmp/root/work,userxattr",
		 spec->image_dir);
	snprintf(c.ws_opts, sizeof(c.ws_opts),
		 "lowerdir=%s,upperdir=/tmp/ws/upper,workdir=/tmp/ws/work,userxattr",
		 spec->workspace_dir);
	c.fsize = l->disk;
	c.nproc = s->cg.pids ? 0 : l->pids;
	c.timens = access("/proc/self/ns/time", F_OK) == 0;
	c.egress = spec->network == AL_NET_EGRESS;
	if (c.egress && !spec->egress)
		return al_fail(err, AL_EUSAGE, 0, "sandbox: network egress without a proxy");
	c.integ = spec->integ != NULL;
	if (!(s->cpus = pick_cpus(l->cpus_milli, &c.cpu)))
		return al_fail(err, AL_ESANDBOX, errno, "sandbox: the CPUs this thread may use");
	s->timens = c.timens;
	if (spec->nsecret_files) {
		size_t total = 0;
		if (spec->nsecret_files > AL_SECRET_FILES_MAX)
			return al_fail(err, AL_ELIMIT, 0, "sandbox: more than %d secret files",
				       AL_SECRET_FILES_MAX);
		for (size_t i = 0; i < spec->nsecret_files; i++) {
			const char *n = spec->secret_files[i].name;
			bool ok = n && *n && strlen(n) <= 64 && !(n[0] >= '0' && n[0] <= '9');
			for (const char *q = n; ok && *q; q++)
				ok = *q == '_' || (*q >= 'A' && *q <= 'Z') ||
				     (*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9');
			if (!ok)
				return al_fail(err, AL_EINVAL, 0,
					       "sandbox: bad secret file name (expected "
					       "[A-Za-z_][A-Za-z0-9_]*)");
			total += spec->secret_files[i].len;
			if (total > AL_SECRET_BYTES_MAX)
				return al_fail(err, AL_ELIMIT, 0,
					       "sandbox: secret files larger than %u bytes",
					       AL_SECRET_BYTES_MAX);
		}
		/* a page per file at least: tmpfs rounds each up */
		snprintf(c.secrets_opts, sizeof(c.secrets_opts), "mode=0700,size=%zu,nr_inodes=%zu",
			 total + (spec->nsecret_files + 1) * 4096, spec->nsecret_files + 8);
		c.secrets = spec->secret_files;
		c.nsecrets = spec->nsecret_files;
	}

	if (pipe2(s->out, O_CLOEXEC) < 0 || pipe2(s->errp, O_CLOEXEC) < 0 ||
	    pipe2(s->status, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s->sock) < 0 ||
	    (s->devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
		return al_fail(err, AL_EIO, errno, "sandbox: pipes");
	c.sock = s->sock[1];
	c.parent_sock = s->sock[0];
	c.status_w = s->status[1];
	c.out_w = s->out[1];
	c.err_w = s->errp[1];
	c.devnull = s->devnull;
	c.init_fd = s->init;
	if ((r = al_cgroup__v1_tasks(&s->cg, s->cg_tasks, err)) < 0)
		return r;
	memcpy(c.cg_tasks, s->cg_tasks, sizeof(c.cg_tasks));
	if (s->cg.v2[0] && (s->cg_v2 = open(s->cg.v2, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return al_fail(err, AL_EIO, errno, "sandbox: join cgroup %s", s->cg.v2);

	/* Overlay takes lower layers only from the mounter's own mount
	 * namespace, so an fd opened here (a mount of ours) will not do, and
	 * the sandbox's uid may not search the host path down to them.  The
	 * kernel moves the working directory into the new namespace at clone:
	 * clone from inside lowers_fd and the child resolves the layers by
	 * name, relative.  This thread's working directory is made private
	 * first, so other threads never see it move. */
	_cleanup_close_ int saved = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (saved < 0 || unshare(CLONE_FS) < 0 || fchdir(spec->lowers_fd) < 0)
		return al_fail(err, AL_ESANDBOX, errno,
			       "sandbox: enter the lower layers' directory");
	fflush(NULL);
	bool cgroup_failed;
	pid_t pid = sandbox_clone(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
					  CLONE_NEWIPC | CLONE_NEWUTS,
				  s->cg_v2, &s->in_v2, &cgroup_failed);
	int clone_errno = errno;
	if (pid != 0 && fchdir(saved) < 0)
		abort(); /* cannot happen: saved is an open directory */
	errno = clone_errno;
	if (pid < 0 && cgroup_failed)
		return al_fail(err, AL_EIO, errno, "sandbox: clone into cgroup %s", s->cg.v2);
	if (pid < 0)
		return al_fail(err, AL_ESANDBOX, errno,
			       "sandbox: cannot create namespaces (are unprivileged user "
			       "namespaces enabled? see 'airlock doctor')");
	if (pid == 0)
		child_main(&c);
	s->pid = pid;
	for (int i = 0; i < 3; i++)
		al_sandbox__close(&s->cg_tasks[i]);
	al_sandbox__close(&s->cg_v2);
	close(s->sock[1]);
	close(s->status[1]);
	close(s->out[1]);
	close(s->errp[1]);
	s->sock[1] = s->status[1] = s->out[1] = s->errp[1] = -1;
	if ((s->pidfd = syscall(SYS_pidfd_open, pid, 0)) < 0)
		return al_fail(err, AL_ESANDBOX, errno, "sandbox: pidfd_open");

	/* From here the child may fail first (joining its v1 cgroups, or its
	 * setup): each failure of ours takes its report when it has one. */
	char map[64];
	snprintf(map, sizeof(map), "0 %u 1\n", spec->host_uid);
	if (write_proc(pid, "uid_map", map) < 0)
		return child_first(s,
				   al_fail(err, AL_ESANDBOX, errno,
					   "sandbox: write uid_map (host uid %u)", spec->host_uid),
				   err);
	/* As root the child drops every supplementary group itself (setgroups
	 * needs the gid map, and is not denied); anyone else cannot drop them
	 * and must deny setgroups before mapping (user_namespaces(7)). */
	if (!c.drop_groups && write_proc(pid, "setgroups", "deny") < 0 && errno != ENOENT)
		return child_first(s, al_fail(err, AL_ESANDBOX, errno, "sandbox: write setgroups"),
				   err);
	snprintf(map, sizeof(map), "0 %u 1\n", spec->host_gid);
	if (write_proc(pid, "gid_map", map) < 0)
		return child_first(s,
				   al_fail(err, AL_ESANDBOX, errno,
					   "sandbox: write gid_map (host gid %u)", spec->host_gid),
				   err);
	/* the setup may start now; the command only once the child is in the
	 * run's cgroups (child_main) */
	if (send(s->sock[0], "m", 1, MSG_NOSIGNAL) != 1)
		return child_first(
			s, al_fail(err, AL_ESANDBOX, errno, "sandbox: the child is gone"), err);
	if (!s->in_v2 && (r = al_cgroup__attach(&s->cg, pid, false, err)) < 0)
		return child_first(s, r, err);
	(void)send(s->sock[0], "g", 1, MSG_NOSIGNAL);
	s->tmpfs = al_fd_recv(s->sock[0], SETUP_FD_TIMEOUT_MS);
	/* the listening sockets: made by the setup in the sandbox's network
	 * namespace; checked as hostile (a pipe or any other fd, or more than
	 * one, would otherwise become the proxy's) */
	if (c.egress && s->tmpfs >= 0 &&
	    (s->proxy = al_fd_recv(s->sock[0], SETUP_FD_TIMEOUT_MS)) >= 0 &&
	    al_fd_is_listener(s->proxy, AF_INET) < 0)
		return al_fail(err, AL_ESANDBOX, errno,
			       "sandbox: the egress socket handed over is not a listening TCP "
			       "socket");
	if (c.integ && s->tmpfs >= 0 && (!c.egress || s->proxy >= 0) &&
	    (s->integ = al_fd_recv(s->sock[0], SETUP_FD_TIMEOUT_MS)) >= 0 &&
	    al_fd_is_listener(s->integ, AF_INET) < 0)
		return al_fail(err, AL_ESANDBOX, errno,
			       "sandbox: the integrations' socket handed over is not a listening "
			       "TCP socket");
	if ((r = setup_report(s, err)) < 0)
		return r;
	if (r != 0 || s->tmpfs < 0 || (c.egress && s->proxy < 0) || (c.integ && s->integ < 0))
		return al_fail(err, AL_ESANDBOX, 0, "sandbox: setup ended without a report");
	if (c.egress) {
		int fd = s->proxy;
		s->proxy = -1; /* the proxy's from here, even on failure */
		if ((r = al_net__proxy_start(spec->egress, fd, err)) < 0)
			return r;
	}
	if (c.integ) {
		int fd = s->integ;
		s->integ = -1; /* the relay's from here, even on failure */
		if ((r = al_integ__relay_start(spec->integ, fd, err)) < 0)
			return r;
	}
	return 0;
}

static void ns_wait(const struct al_sandbox_spec *spec, struct ns_state *s,
		    struct al_sandbox_result *res)
{
	uint64_t start = al_now_ns();
	uint64_t deadline =
		spec->limits.timeout_ms ? start + spec->limits.timeout_ms * 1000000ull : 0;
	struct pump pumps[2] = { { s->out[0], 1, &res->stdout_bytes },
				 { s->errp[0], 2, &res->stderr_bytes } };
	s->out[0] = s->errp[0] = -1; /* owned by the pumps now */
	/* airlock-init is exec'd (the setup's report ended): the child shares
	 * no page with us any more, so what meanwhile writes costs no copy (it
	 * did, called right after the go, and the run was slower).  The
	 * command may end, or its time run out, meanwhile: below, a command
	 * that had ended is neither timed out nor cancelled. */
	if (spec->meanwhile)
		spec->meanwhile(spec->meanwhile_ctx);
	bool exited = false;
	int status = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	while (!exited || pumps[0].fd >= 0 || pumps[1].fd >= 0) {
		int tmo = -1;
		if (deadline && !res->timed_out && !exited) {
			uint64_t now = al_now_ns();
			struct pollfd q = { s->pidfd, POLLIN, 0 };
			if (now < deadline)
				tmo = (int)((deadline - now + 999999) / 1000000);
			else if (poll(&q, 1, 0) == 1)
				tmo = 0; /* it ended before we looked: reaped below */
			else {
				kill(s->pid, SIGKILL); /* PID 1: the kernel kills the rest */
				res->timed_out = true;
			}
		}
		int cancel =
			spec->cancel_fd > 0 && !exited && !res->cancelled ? spec->cancel_fd : -1;
		struct pollfd p[4] = { { pumps[0].fd, POLLIN, 0 },
				       { pumps[1].fd, POLLIN, 0 },
				       { exited ? -1 : s->pidfd, POLLIN, 0 },
				       { cancel, POLLIN, 0 } };
		int k = poll(p, 4, tmo);
		if (p[3].fd >= 0 && p[3].revents && !p[2].revents) {
			kill(s->pid, SIGKILL); /* PID 1: the kernel kills the rest */
			res->cancelled = true;
		}
		if (k < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2; i++)
			if (p[i].fd >= 0 && p[i].revents)
				pump_read(&pumps[i], spec);
		if (p[2].fd >= 0 && p[2].revents) {
			pid_t w;
			while ((w = wait4(s->pid, &status, 0, &ru)) < 0 && errno == EINTR)
				;
			exited = true;
			s->pid = 0;
		}
	}
	res->wall_ms = (al_now_ns() - start) / 1000000;
	if (WIFEXITED(status))
		res->exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		res->exit_code = 128 + WTERMSIG(status);
	res->cpu_user_ms = (uint64_t)ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000;
	res->cpu_sys_ms = (uint64_t)ru.ru_stime.tv_sec * 1000 + ru.ru_stime.tv_usec / 1000;
	res->max_rss_kb = (uint64_t)ru.ru_maxrss;
	al_cgroup__stats(&s->cg, &res->oom, &res->peak_memory);
	res->cgroup = al_cgroup__kind(&s->cg);
	res->memory_enforced = s->cg.memory;
	res->pids_enforced = s->cg.pids;
	res->cpu_enforced = s->cg.cpu;
	res->cpus = s->cpus;
	res->time_namespace = s->timens;
}

static int ns_run(const struct al_sandbox_spec *spec, struct al_sandbox_result *res,
		  struct al_error *err)
{
	struct ns_state s = { .out = { -1, -1 },
			      .errp = { -1, -1 },
			      .status = { -1, -1 },
			      .sock = { -1, -1 },
			      .devnull = -1,
			      .init = -1,
			      .pidfd = -1,
			      .tmpfs = -1,
			      .proxy = -1,
			      .integ = -1,
			      .cg_tasks = { -1, -1, -1 },
			      .cg_v2 = -1 };
	int r = ns_start(spec, &s, err);
	if (r == 0) {
		ns_wait(spec, &s, res);
		/* every process of the sandbox is dead: its connections end */
		if (spec->egress)
			al_net__proxy_stop(spec->egress);
		if (spec->integ)
			al_integ__relay_stop(spec->integ);
		struct statfs fs;
		if (fstatfs(s.tmpfs, &fs) == 0) {
			/* within a few blocks of full: a write failed for room */
			res->disk_full = fs.f_bavail <= 4;
			res->files_full = fs.f_ffree == 0;
		}
		res->upper_fd =
			openat(s.tmpfs, "ws/upper", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (res->upper_fd < 0)
			r = al_fail(err, AL_EIO, errno,
				    "sandbox: open the workspace's upper layer");
	}
	ns_release(&s);
	return r;
}

static int ns_check(enum al_network network, struct al_error *err)
{
	(void)network; /* none, and egress through the host's proxy */
	(void)err;
	return 0;
}

const struct al_sandbox_backend al_sandbox__ns = {
	.name = "ns",
	.check = ns_check,
	.run = ns_run,
};
