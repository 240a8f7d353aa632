/* The sandbox's seccomp filter's rules, compiled by libseccomp into BPF at
 * build time (tools/seccomp_gen.c), so a run only copies the program and
 * the child between clone and exec only loads it.
 *
 * Default allow, with a deny list of what a sandboxed command has no use
 * for and what widens the kernel's attack surface: denied calls fail with
 * EPERM (the command sees a clear error rather than dying).  Only the
 * native ABI is allowed: an i386 (int 0x80) or x32 call gets ENOSYS. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/netlink.h>
#include <unistd.h>

#include <seccomp.h>

#include "sandbox_private.h"
#include "util.h"

static void ctx_release(scmp_filter_ctx *c)
{
	if (*c)
		seccomp_release(*c);
}
#define _cleanup_seccomp_ _cleanup_(ctx_release)

static const char *const denied[] = {
	/* mounts and namespaces */
	"mount",
	"umount",
	"umount2",
	"pivot_root",
	"chroot",
	"move_mount",
	"open_tree",
	"fsopen",
	"fsconfig",
	"fsmount",
	"fspick",
	"mount_setattr",
	"unshare",
	"setns",
	/* kernel keyrings, BPF, perf, tracing other processes */
	"keyctl",
	"add_key",
	"request_key",
	"bpf",
	"perf_event_open",
	"ptrace",
	"process_vm_readv",
	"process_vm_writev",
	"pidfd_getfd",
	"kcmp",
	/* attack surface without a use inside */
	"userfaultfd",
	"io_uring_setup",
	"io_uring_enter",
	"io_uring_register",
	"kexec_load",
	"kexec_file_load",
	"init_module",
	"finit_module",
	"delete_module",
	"reboot",
	"swapon",
	"swapoff",
	"acct",
	"quotactl",
	"quotactl_fd",
	"name_to_handle_at",
	"open_by_handle_at",
	"lookup_dcookie",
	"syslog",
	"uselib",
	"vhangup",
	"iopl",
	"ioperm",
	"settimeofday",
	"clock_settime",
	"clock_adjtime",
	"adjtimex",
	"fanotify_init",
};

static int deny_errno(scmp_filter_ctx ctx, int e, int nr, unsigned n,
		      const struct scmp_arg_cmp *cmp, struct al_error *err)
{
	int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(e), nr, n, cmp);
	if (rc < 0)
		return al_fail(err, AL_EIO, -rc, "seccomp: rule for syscall %d", nr);
	return 0;
}

static int deny(scmp_filter_ctx ctx, int nr, unsigned n, const struct scmp_arg_cmp *cmp,
		struct al_error *err)
{
	return deny_errno(ctx, EPERM, nr, n, cmp, err);
}

/* Fail syscall nr with errno e unless its 32-bit argument 0 is one of
 * allowed (sorted).  libseccomp compares an argument once per rule and
 * ORs rules, so the complement is covered by aligned blocks, each one
 * masked comparison (as a CIDR list covers a range); a value with any of
 * the upper 32 bits set is refused whole. */
static int allow_only(scmp_filter_ctx ctx, int nr, int e, const uint32_t *allowed, size_t n,
		      struct al_error *err)
{
	struct scmp_arg_cmp high = SCMP_A0(SCMP_CMP_GE, 1ull << 32);
	int r = deny_errno(ctx, e, nr, 1, &high, err);
	uint64_t lo = 0;
	for (size_t i = 0; r == 0 && i <= n; i++) {
		uint64_t hi = i < n ? (uint64_t)allowed[i] : 1ull << 32; /* the gap is [lo, hi) */
		while (r == 0 && lo < hi) {
			int k = lo ? __builtin_ctzll(lo) : 32;
			while (k > 0 && lo + (1ull << k) > hi)
				k--;
			struct scmp_arg_cmp c =
				SCMP_A0(SCMP_CMP_MASKED_EQ, ~((1ull << k) - 1) & 0xffffffffu, lo);
			r = deny_errno(ctx, e, nr, 1, &c, err);
			lo += 1ull << k;
		}
		lo = i < n ? (uint64_t)allowed[i] + 1 : lo;
	}
	return r;
}

int al_seccomp__compile(struct sock_fprog *out, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	_cleanup_seccomp_ scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return al_fail(err, AL_ENOMEM, ENOMEM, "seccomp: init");
	/* foreign ABIs (i386 via int 0x80, x32): fail, never reach the kernel */
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS));
	if (rc < 0)
		return al_fail(err, AL_EIO, -rc, "seccomp: bad-arch action");
	int r;
	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
		int nr = seccomp_syscall_resolve_name(denied[i]);
		if (nr == __NR_SCMP_ERROR)
			continue; /* unknown to this libseccomp or this architecture */
		if ((r = deny(ctx, nr, 0, NULL, err)) < 0)
			return r;
	}
	/* clone with any namespace flag; clone3 hides its flags in memory, so
	 * it gets ENOSYS and the C library falls back to clone */
	static const uint64_t nsflags[] = { CLONE_NEWNS,     CLONE_NEWUTS, CLONE_NEWIPC,
					    CLONE_NEWUSER,   CLONE_NEWPID, CLONE_NEWNET,
					    CLONE_NEWCGROUP, CLONE_NEWTIME };
	for (size_t i = 0; i < sizeof(nsflags) / sizeof(nsflags[0]); i++) {
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, nsflags[i], nsflags[i]);
		if ((r = deny(ctx, SCMP_SYS(clone), 1, &c, err)) < 0)
			return r;
	}
	int clone3 = seccomp_syscall_resolve_name("clone3");
	if (clone3 != __NR_SCMP_ERROR &&
	    (rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), clone3, 0)) < 0)
		return al_fail(err, AL_EIO, -rc, "seccomp: clone3");
	/* pushing input into a terminal, the Linux console's ioctls, changing
	 * a terminal's line discipline, redirecting the console */
	static const uint64_t ioctls[] = { TIOCSTI, TIOCLINUX, TIOCSETD, TIOCCONS };
	for (size_t i = 0; i < sizeof(ioctls) / sizeof(ioctls[0]); i++) {
		struct scmp_arg_cmp c = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, ioctls[i]);
		if ((r = deny(ctx, SCMP_SYS(ioctl), 1, &c, err)) < 0)
			return r;
	}
	/* socket families: unix, inet, inet6 and netlink (route only).  vsock
	 * is not isolated by network namespaces (a VM host's hypervisor
	 * ports); packet, bluetooth, can, … have no use here.  As Docker's
	 * default profile: EAFNOSUPPORT, what a kernel without them says. */
	static const uint32_t families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };
	int sockcalls[2] = { SCMP_SYS(socket), SCMP_SYS(socketpair) };
	for (int i = 0; i < 2; i++)
		if ((r = allow_only(ctx, sockcalls[i], EAFNOSUPPORT, families, 4, err)) < 0)
			return r;
	struct scmp_arg_cmp nl[2] = { SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
				      SCMP_A2(SCMP_CMP_NE, NETLINK_ROUTE) };
	if ((r = deny_errno(ctx, EAFNOSUPPORT, SCMP_SYS(socket), 2, nl, err)) < 0)
		return r;
	/* personality: the default persona and Docker's allowed few (UNAME26,
	 * PER_LINUX32, the query 0xffffffff); never READ_IMPLIES_EXEC and
	 * the other flags that weaken a process's own protections */
	static const uint32_t personas[] = { 0x0, 0x8, 0x20000, 0x20008, 0xffffffffu };
	if ((r = allow_only(ctx, SCMP_SYS(personality), EPERM, personas, 5, err)) < 0)
		return r;
	/* export to a memory file, then into our buffer */
	_cleanup_close_ int mfd = memfd_create("airlock-seccomp", MFD_CLOEXEC);
	if (mfd < 0)
		return al_fail(err, AL_EIO, errno, "seccomp: memfd");
	if ((rc = seccomp_export_bpf(ctx, mfd)) < 0)
		return al_fail(err, AL_EIO, -rc, "seccomp: export");
	struct stat s;
	if (fstat(mfd, &s) < 0 || s.st_size <= 0 || s.st_size % sizeof(struct sock_filter) ||
	    s.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS)
		return al_fail(err, AL_EIO, errno, "seccomp: exported filter has a bad size");
	struct sock_filter *f = malloc(s.st_size);
	if (!f)
		return al_fail(err, AL_ENOMEM, ENOMEM, "seccomp");
	if (pread(mfd, f, s.st_size, 0) != s.st_size) {
		free(f);
		return al_fail(err, AL_EIO, errno, "seccomp: read filter");
	}
	out->filter = f;
	out->len = s.st_size / sizeof(struct sock_filter);
	return 0;
}
