/* The microVM sandbox backend (sandbox.h): each run on its own kernel.
 *
 * The parent prepares the VM's inputs as byte streams: the image and the
 * workspace as raw tar streams (read-only disks), the run (argv, env,
 * secret files, limits) as the control disk (a sealed memfd), an empty
 * sparse result disk; stdout, stderr and the control port are sockets.
 * The VMM (hv.h; QEMU's microvm) is then started in a jail: new user,
 * mount, pid, net, ipc and uts namespaces, its root a tmpfs holding only
 * /usr (read-only), /proc and a few /dev nodes, the uid the sandbox would
 * have, every capability dropped, no_new_privs, the sandbox's seccomp
 * filter, its own cgroup; QEMU adds its own -sandbox.  No host directory
 * is shared with the guest: the VMM reaches its inputs only through the
 * descriptors it inherits.
 *
 * The guest agent (src/agent/guest.c) runs the command and writes the
 * workspace's upper layer as a tar stream to the result disk and one
 * status line to the control port.  After the VMM has exited the host
 * parses both strictly (vm_result.c), unpacking the stream in a child
 * into a tmpfs of the child's own mount namespace, capped by the run's
 * disk and file limits; that tmpfs's upper directory is the result's
 * upper_fd, read by the same code as the namespace backend's. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/seccomp.h>

#include "airlock/dl_archive.h"
#include "airlock/manifest.h"
#include "hv.h"
#include "integ_private.h"
#include "net_private.h"
#include "sandbox_private.h"
#include "util.h"
#include "vm_private.h"

static const struct al_hv_driver *const driver = &al_hv__qemu;

/* the descriptors the VMM inherits, at these numbers */
enum {
	FD_KERNEL = 3,
	FD_INITRD,
	FD_IMAGE,
	FD_WS,
	FD_CONTROL,
	FD_RESULT,
	FD_OUT,
	FD_ERR,
	FD_CTL,
	FD_RELAY, /* the relay's port: egress and integrations (-1: none) */
	FD_N
};

#define GUEST_BASE_MIB 160 /* kernel, initramfs and agent beside the command */
#define VMM_OVERHEAD (384ull << 20)
#define GRACE_MS 10000 /* after the guest's own deadline, for its result */
/* The guest agent's first words on the control port, as soon as it has
 * opened it: its kernel booted.  It then waits for the host's 'g' (go),
 * sent only within the boot timeout, before it reads the run; so a guest
 * killed for not coming up in time has started nothing of the run, and
 * one more VM is booted (docs/architecture.md, "Sandbox (microVM
 * backend)"). */
#define UP_LINE "airlock-up 1\n"
#define UP_LEN (sizeof(UP_LINE) - 1)
#define BOOTS_MAX 2

/* How long a guest may take to come up: AIRLOCK_VM_BOOT_TIMEOUT seconds
 * (1 to 3600), else 30 s with KVM and 120 s under TCG, where a boot takes
 * 2-3 s on an idle host (bench/vm.sh).  Another value is AL_EUSAGE. */
static int boot_timeout_ms(bool kvm, uint64_t *out, struct al_error *err)
{
	const char *v = getenv("AIRLOCK_VM_BOOT_TIMEOUT");
	*out = kvm ? 30000 : 120000;
	if (!v || !*v)
		return 0;
	char *end;
	errno = 0;
	unsigned long s = strtoul(v, &end, 10);
	if (errno || *end || *v == '-' || s < 1 || s > 3600)
		return al_fail(err, AL_EUSAGE, 0,
			       "AIRLOCK_VM_BOOT_TIMEOUT: expected whole seconds from 1 to 3600");
	*out = s * 1000;
	return 0;
}

/* ---- the input streams --------------------------------------------------------------- */

static void archive_write_freep(struct archive **a)
{
	if (*a)
		dl_archive.write_free(*a);
}

static int tar_dir(struct archive *w, int dfd, char *path, size_t plen, unsigned depth,
		   struct al_error *err)
{
	if (depth > AL_DEPTH_MAX)
		return al_fail(err, AL_EINVAL, 0, "vm: the layer is too deep");
	DIR *d = al_opendir_fd(dfd);
	if (!d)
		return al_fail(err, AL_EIO, errno, "vm: read the layer");
	struct dirent *de;
	int r = 0;
	struct archive_entry *e = dl_archive_entry_new();
	while (r == 0 && e && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		size_t nl = strlen(de->d_name);
		if (plen + nl + 2 > 8192) {
			r = al_fail(err, AL_EINVAL, 0, "vm: a path of the layer is too long");
			break;
		}
		size_t np = plen;
		if (plen)
			path[np++] = '/';
		memcpy(path + np, de->d_name, nl + 1);
		np += nl;
		struct stat s;
		if (fstatat(dfd, de->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0) {
			r = al_fail(err, AL_EIO, errno, "vm: stat in the layer");
			break;
		}
		dl_archive.entry_clear(e);
		dl_archive.entry_copy_pathname(e, path);
		dl_archive.entry_copy_stat(e, &s);
		dl_archive.entry_set_uid(e, 0);
		dl_archive.entry_set_gid(e, 0);
		dl_archive.entry_set_nlink(e, 1);
		dl_archive.entry_set_ino(e, 0);
		dl_archive.entry_set_dev(e, 0);
		char target[4200];
		_cleanup_close_ int fd = -1;
		if (S_ISLNK(s.st_mode)) {
			ssize_t n = readlinkat(dfd, de->d_name, target, sizeof(target) - 1);
			if (n < 0) {
				r = al_fail(err, AL_EIO, errno, "vm: readlink in the layer");
				break;
			}
			target[n] = 0;
			dl_archive.entry_copy_symlink(e, target);
		} else if (S_ISREG(s.st_mode)) {
			fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0) {
				r = al_fail(err, AL_EIO, errno, "vm: open in the layer");
				break;
			}
		} else if (!S_ISDIR(s.st_mode)) {
			continue; /* a materialised layer holds nothing else */
		}
		if (!al_archive_written_ok(w, dl_archive.write_header(w, e))) {
			r = al_fail(err, AL_EIO, 0, "vm: tar: %s", dl_archive.error_string(w));
			break;
		}
		if (fd >= 0) {
			char buf[65536];
			ssize_t n;
			while ((n = read(fd, buf, sizeof(buf))) > 0)
				if (dl_archive.write_data(w, buf, (size_t)n) != n) {
					r = al_fail(err, AL_EIO, 0, "vm: tar: %s",
						    dl_archive.error_string(w));
					break;
				}
		}
		if (r == 0 && S_ISDIR(s.st_mode)) {
			_cleanup_close_ int sub = openat(
				dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			r = sub < 0 ? al_fail(err, AL_EIO, errno, "vm: open in the layer")
				    : tar_dir(w, sub, path, np, depth + 1, err);
		}
		path[plen] = 0;
	}
	dl_archive.entry_free(e);
	closedir(d);
	return r;
}

/* A raw tar stream of the layer lowers_fd/name in an unnamed file. */
static int layer_tar(int lowers_fd, const char *name, int *out, uint64_t *size,
		     struct al_error *err)
{
	_cleanup_locale_ locale_t prev = al_c_locale_enter();
	_cleanup_close_ int dir =
		openat(lowers_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int fd = openat(lowers_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (dir < 0 || fd < 0)
		return al_fail(err, AL_ESANDBOX, errno, "vm: the %s layer's stream", name);
	if (dl_load_archive(err) < 0)
		return err->code;
	_cleanup_(archive_write_freep) struct archive *w = dl_archive_write_new();
	_cleanup_free_ char *path = calloc(1, 8200);
	if (!w || !path || dl_archive.write_set_format_pax_restricted(w) != ARCHIVE_OK ||
	    dl_archive.write_open_fd(w, fd) != ARCHIVE_OK)
		return al_fail(err, AL_ENOMEM, ENOMEM, "vm: tar");
	int r = tar_dir(w, dir, path, 0, 0, err);
	if (r == 0 && dl_archive.write_close(w) != ARCHIVE_OK)
		r = al_fail(err, AL_EIO, 0, "vm: tar: %s", dl_archive.error_string(w));
	if (r < 0)
		return r;
	off_t end = lseek(fd, 0, SEEK_END);
	if (end < 0)
		return al_fail(err, AL_EIO, errno, "vm: tar");
	*size = (uint64_t)end;
	*out = take_fd(fd);
	return 0;
}

/* ---- the control disk -------------------------------------------------------------- */

static int put_str(struct al_buf *b, const char *s)
{
	return al_buf_put(b, s, strlen(s) + 1);
}

static int put_dec(struct al_buf *b, uint64_t v)
{
	char n[32];
	snprintf(n, sizeof(n), "%llu", (unsigned long long)v);
	return put_str(b, n);
}

static int put_num(struct al_buf *b, const char *tag, uint64_t v)
{
	return put_str(b, tag) < 0 || put_dec(b, v) < 0 ? -1 : 0;
}

static int control_disk(const struct al_sandbox_spec *spec, struct al_error *err)
{
	struct al_buf b = { 0 };
	int r = put_str(&b, "airlock-vm-control 1");
	for (size_t i = 0; r == 0 && spec->argv[i]; i++)
		r = put_str(&b, "arg") < 0 || put_str(&b, spec->argv[i]) < 0 ? -1 : 0;
	for (size_t i = 0; r == 0 && spec->envp && spec->envp[i]; i++)
		r = put_str(&b, "env") < 0 || put_str(&b, spec->envp[i]) < 0 ? -1 : 0;
	for (size_t i = 0; r == 0 && i < spec->nsecret_files; i++) {
		const struct al_sandbox_file *f = &spec->secret_files[i];
		r = put_str(&b, "file") < 0 || put_str(&b, f->name) < 0 ||
				    put_dec(&b, f->len) < 0 || al_buf_put(&b, f->data, f->len) < 0
			    ? -1
			    : 0;
	}
	const struct al_limits *l = &spec->limits;
	if (r == 0)
		r = put_num(&b, "timeout_ms", l->timeout_ms) < 0 ||
				    put_num(&b, "disk", l->disk) < 0 ||
				    put_num(&b, "files", l->files) < 0 ||
				    put_num(&b, "pids", l->pids) < 0 ||
				    put_num(&b, "memory", l->memory) < 0 ||
				    put_num(&b, "cpus_milli", l->cpus_milli) < 0 ||
				    put_num(&b, "relay",
					    (spec->egress ? 1u : 0u) | (spec->integ ? 2u : 0u)) <
					    0 ||
				    put_str(&b, "end") < 0
			    ? -1
			    : 0;
	/* a disk is whole sectors */
	static const char zero[512];
	if (r == 0 && b.len % 512)
		r = al_buf_put(&b, zero, 512 - b.len % 512);
	if (r < 0) {
		explicit_bzero(b.p, b.len);
		al_buf_release(&b);
		return al_fail(err, AL_ENOMEM, ENOMEM, "vm: control disk");
	}
	/* in memory only: it holds the secrets */
	int fd = memfd_create("airlock-vm-control", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || al_write_full(fd, b.p, b.len) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		explicit_bzero(b.p, b.len);
		al_buf_release(&b);
		return al_fail(err, AL_ESANDBOX, e, "vm: control disk");
	}
	explicit_bzero(b.p, b.len);
	al_buf_release(&b);
	return fd;
}

/* ---- the jail ---------------------------------------------------------------------- */

enum stage {
	ST_SYNC,
	ST_IDS,
	ST_SESSION,
	ST_PRIVATE,
	ST_ROOT,
	ST_USR,
	ST_PROC,
	ST_DEV,
	ST_PIVOT,
	ST_FDS,
	ST_RLIMIT,
	ST_NNP,
	ST_CAPS,
	ST_SECCOMP,
	ST_EXEC,
	ST_N
};
static const char *const stage_names[ST_N] = {
	[ST_SYNC] = "waiting for the parent",
	[ST_IDS] = "setting the jail's ids",
	[ST_SESSION] = "starting a new session",
	[ST_PRIVATE] = "making mounts private",
	[ST_ROOT] = "mounting the jail's root",
	[ST_USR] = "mounting /usr read-only",
	[ST_PROC] = "mounting /proc",
	[ST_DEV] = "populating /dev",
	[ST_PIVOT] = "pivot_root",
	[ST_FDS] = "arranging the VMM's descriptors",
	[ST_RLIMIT] = "setting rlimits",
	[ST_NNP] = "no_new_privs",
	[ST_CAPS] = "dropping capabilities",
	[ST_SECCOMP] = "loading the seccomp filter",
	[ST_EXEC] = "starting the VMM",
};

struct jail {
	int sock, parent_sock, status_w;
	int fds[FD_N]; /* source descriptor for each target number (3..) */
	bool kvm, drop_groups;
	int last_cap;
	char *const *argv;
	const struct sock_fprog *prog;
};

static _Noreturn void jail_fail(const struct jail *j, int stage)
{
	struct al_sandbox__report m = { stage, errno };
	if (write(j->status_w, &m, sizeof(m)) < 0)
		_exit(126);
	_exit(125);
}
#define TRY(cond, stage)                     \
	do {                                 \
		if (!(cond))                 \
			jail_fail(j, stage); \
	} while (0)

static bool bind_node(const char *src, const char *dst)
{
	int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd < 0)
		return false;
	close(fd);
	return mount(src, dst, NULL, MS_BIND, NULL) == 0;
}

static _Noreturn void jail_main(struct jail *j)
{
	char go;
	close(j->parent_sock);
	TRY(read(j->sock, &go, 1) == 1, ST_SYNC);
	TRY(syscall(SYS_setresgid, 0, 0, 0) == 0 && syscall(SYS_setresuid, 0, 0, 0) == 0, ST_IDS);
	if (j->drop_groups)
		TRY(syscall(SYS_setgroups, 0, NULL) == 0, ST_IDS);
	TRY(prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, ST_SYNC);
	struct pollfd hup = { j->sock, POLLRDHUP, 0 };
	if (poll(&hup, 1, 0) > 0 && (hup.revents & (POLLRDHUP | POLLHUP | POLLERR)))
		_exit(125);
	TRY(setsid() >= 0, ST_SESSION);
	TRY(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0, ST_PRIVATE);
	TRY(mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
		  "mode=0755,size=1m,nr_inodes=64") == 0,
	    ST_ROOT);
	TRY(mkdir("/tmp/usr", 0755) == 0 &&
		    mount("/usr", "/tmp/usr", NULL, MS_BIND | MS_REC, NULL) == 0,
	    ST_USR);
	TRY(mount(NULL, "/tmp/usr", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
		  NULL) == 0,
	    ST_USR);
	TRY(symlink("usr/lib", "/tmp/lib") == 0 && symlink("usr/lib64", "/tmp/lib64") == 0 &&
		    symlink("usr/bin", "/tmp/bin") == 0,
	    ST_USR);
	TRY(mkdir("/tmp/proc", 0555) == 0 &&
		    mount("proc", "/tmp/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0,
	    ST_PROC);
	TRY(mkdir("/tmp/dev", 0755) == 0 && bind_node("/dev/null", "/tmp/dev/null") &&
		    bind_node("/dev/zero", "/tmp/dev/zero") &&
		    bind_node("/dev/urandom", "/tmp/dev/urandom"),
	    ST_DEV);
	if (j->kvm)
		TRY(bind_node("/dev/kvm", "/tmp/dev/kvm"), ST_DEV);
	TRY(chdir("/tmp") == 0 && syscall(SYS_pivot_root, ".", ".") == 0 &&
		    umount2(".", MNT_DETACH) == 0 && chdir("/") == 0,
	    ST_PIVOT);
	TRY(mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) == 0,
	    ST_PIVOT);
	/* the status pipe, then each source, above the targets; then each to
	 * its number */
	int w = fcntl(j->status_w, F_DUPFD_CLOEXEC, 200);
	TRY(w >= 0, ST_FDS);
	j->status_w = w;
	int high[FD_N];
	for (int t = FD_KERNEL; t < FD_N; t++)
		TRY(j->fds[t] < 0 || (high[t] = fcntl(j->fds[t], F_DUPFD_CLOEXEC, 100)) >= 0,
		    ST_FDS);
	for (int t = FD_KERNEL; t < FD_N; t++)
		TRY(j->fds[t] < 0 || dup2(high[t], t) == t, ST_FDS);
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	TRY(devnull >= 0 && dup2(devnull, 0) == 0 && dup2(devnull, 1) == 1, ST_FDS);
	/* stderr stays: QEMU's own errors reach the parent's log */
	struct rlimit core = { 0, 0 };
	TRY(setrlimit(RLIMIT_CORE, &core) == 0, ST_RLIMIT);
	TRY(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, ST_NNP);
	for (int cap = 0; cap <= j->last_cap; cap++)
		TRY(prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 || errno == EINVAL, ST_CAPS);
	TRY(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == 0, ST_CAPS);
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct none[2];
	memset(none, 0, sizeof(none));
	TRY(capset(&hdr, none) == 0, ST_CAPS);
	TRY(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, j->prog) == 0, ST_SECCOMP);
	/* the status pipe is close-on-exec: its EOF is the exec */
	static char *const envp[] = { "PATH=/usr/bin", NULL };
	execve(j->argv[0], j->argv, envp);
	jail_fail(j, ST_EXEC);
}

/* ---- the run ------------------------------------------------------------------------ */

struct vm_state {
	unsigned vcpus;
	uint64_t memory_mib;
	int fds[FD_N];     /* ours: closed at the end */
	int out, err, ctl; /* our ends of the ports */
	int relay;         /* and of the relay's, when the run has one */
	int status[2], sock[2];
	int pidfd;
	pid_t pid;
	struct al_cgroup cg;
	struct sock_fprog prog;
	char **argv;
	uint64_t result_size;
};

static void vm_release(struct vm_state *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	for (int i = 0; i < FD_N; i++)
		al_sandbox__close(&s->fds[i]);
	al_sandbox__close(&s->out);
	al_sandbox__close(&s->err);
	al_sandbox__close(&s->ctl);
	al_sandbox__close(&s->relay);
	al_sandbox__close(&s->pidfd);
	for (int i = 0; i < 2; i++) {
		al_sandbox__close(&s->status[i]);
		al_sandbox__close(&s->sock[i]);
	}
	al_cgroup__destroy(&s->cg);
	free(s->prog.filter);
	free(s->argv);
}

static int last_cap(void)
{
	char buf[16] = "";
	_cleanup_close_ int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && al_read_full(fd, buf, sizeof(buf) - 1) > 0)
		return atoi(buf);
	return 63;
}

static int write_proc(pid_t pid, const char *file, const char *val)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, file);
	return al_write_string(p, val);
}

static int open_guest(const char *dir, const char *name, struct al_error *err)
{
	char p[4300];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return al_fail(err, AL_ESANDBOX, errno,
			       "vm: the guest's %s (%s; built by make: scripts/mkguest.sh; see "
			       "'airlock doctor')",
			       name, p);
	return fd;
}

static uint64_t result_cap(const struct al_limits *l)
{
	uint64_t disk = l->disk ? l->disk : 1ull << 30;
	uint64_t files = l->files ? l->files : 100000;
	/* every member: a header, a pax header and its block, padding */
	uint64_t size = disk + (files + 64) * 2048 + (1u << 20);
	return (size + 511) / 512 * 512;
}

static int vm_start(const struct al_sandbox_spec *spec, struct vm_state *s,
		    const struct al_hv_probe *hp, struct al_error *err)
{
	if (!spec->guest_dir)
		return al_fail(err, AL_ESANDBOX, 0, "vm: no guest directory");
	int r = al_seccomp__build(&s->prog, err);
	if (r < 0)
		return r;
	uint64_t img_size = 0, ws_size = 0;
	if ((s->fds[FD_KERNEL] = open_guest(spec->guest_dir, "vmlinux", err)) < 0 ||
	    (s->fds[FD_INITRD] = open_guest(spec->guest_dir, "initramfs.cpio", err)) < 0)
		return err->code;
	if ((r = layer_tar(spec->lowers_fd, spec->image_dir, &s->fds[FD_IMAGE], &img_size, err)) <
		    0 ||
	    (r = layer_tar(spec->lowers_fd, spec->workspace_dir, &s->fds[FD_WS], &ws_size, err)) <
		    0)
		return r;
	if ((s->fds[FD_CONTROL] = control_disk(spec, err)) < 0)
		return s->fds[FD_CONTROL];
	s->result_size = result_cap(&spec->limits);
	s->fds[FD_RESULT] = openat(spec->lowers_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (s->fds[FD_RESULT] < 0 || ftruncate(s->fds[FD_RESULT], (off_t)s->result_size) < 0)
		return al_fail(err, AL_ESANDBOX, errno, "vm: the result disk");
	/* the VMM reopens its disks through /proc/self/fd as the jail's uid */
	for (int t = FD_IMAGE; t <= FD_RESULT; t++)
		if (fchown(s->fds[t], spec->host_uid, spec->host_gid) < 0)
			return al_fail(err, AL_ESANDBOX, errno, "vm: hand the disks to the jail");
	int *ours[3] = { &s->out, &s->err, &s->ctl }, theirs[3] = { FD_OUT, FD_ERR, FD_CTL };
	for (int i = 0; i < 3; i++) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
			return al_fail(err, AL_ESANDBOX, errno, "vm: ports");
		*ours[i] = sv[0];
		s->fds[theirs[i]] = sv[1];
	}
	bool relay = spec->egress || spec->integ;
	if (relay) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
			return al_fail(err, AL_ESANDBOX, errno, "vm: the relay's port");
		s->relay = sv[0];
		s->fds[FD_RELAY] = sv[1];
	}

	const struct al_limits *l = &spec->limits;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned vcpus = l->cpus_milli ? (unsigned)((l->cpus_milli + 999) / 1000) : 1;
	if (ncpu > 0 && vcpus > (unsigned)ncpu)
		vcpus = (unsigned)ncpu;
	uint64_t mem = l->memory ? l->memory : 2ull << 30;
	uint64_t mib = (mem + img_size + ws_size + (1u << 20) - 1) / (1u << 20) + GUEST_BASE_MIB;
	char cmdline[256];
	snprintf(cmdline, sizeof(cmdline), "quiet loglevel=0 panic=-1 pci=off %s",
		 hp->kvm ? "" : "tsc_early_khz=2000000 tsc=reliable no_timer_check");
	struct al_hv_vm vm = {
		.kernel_fd = FD_KERNEL,
		.initrd_fd = FD_INITRD,
		.cmdline = cmdline,
		.vcpus = vcpus,
		.memory_mib = mib,
		.kvm = hp->kvm,
		.disks = { { FD_IMAGE, "image", true },
			   { FD_WS, "workspace", true },
			   { FD_CONTROL, "control", true },
			   { FD_RESULT, "result", false } },
		.ndisks = 4,
		.ports = { { FD_OUT, "stdout" },
			   { FD_ERR, "stderr" },
			   { FD_CTL, "ctl" },
			   { FD_RELAY, "relay" } },
		.nports = relay ? 4 : 3,
	};
	s->vcpus = vcpus;
	s->memory_mib = mib;
	if ((r = driver->argv(&vm, hp->binary, &s->argv, err)) < 0)
		return r;

	/* the VMM's cgroup: the guest's memory and its own, its threads, the
	 * guest's CPUs */
	struct al_limits vl = { .memory = (mib << 20) + VMM_OVERHEAD,
				.pids = 64 + vcpus,
				.cpus_milli = l->cpus_milli };
	uint8_t rnd[6];
	char hex[13], name[40];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return al_fail(err, AL_EIO, errno, "vm: random");
	al_hex(rnd, sizeof(rnd), hex);
	snprintf(name, sizeof(name), "run-%s", hex);
	if ((r = al_cgroup__create(&vl, name, spec->best_effort_limits, &s->cg, err)) < 0)
		return r;

	if (pipe2(s->status, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s->sock) < 0)
		return al_fail(err, AL_ESANDBOX, errno, "vm: pipes");
	struct jail j = { .sock = s->sock[1],
			  .parent_sock = s->sock[0],
			  .status_w = s->status[1],
			  .kvm = hp->kvm,
			  .drop_groups = geteuid() == 0,
			  .last_cap = last_cap(),
			  .argv = s->argv,
			  .prog = &s->prog };
	memcpy(j.fds, s->fds, sizeof(j.fds));
	fflush(NULL);
	pid_t pid = syscall(SYS_clone,
			    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
				    CLONE_NEWIPC | CLONE_NEWUTS | SIGCHLD,
			    NULL, NULL, NULL, NULL);
	if (pid < 0)
		return al_fail(err, AL_ESANDBOX, errno,
			       "vm: cannot create the VMM's namespaces (see 'airlock doctor')");
	if (pid == 0)
		jail_main(&j);
	s->pid = pid;
	al_sandbox__close(&s->sock[1]);
	al_sandbox__close(&s->status[1]);
	if ((s->pidfd = syscall(SYS_pidfd_open, pid, 0)) < 0)
		return al_fail(err, AL_ESANDBOX, errno, "vm: pidfd_open");
	char map[64];
	snprintf(map, sizeof(map), "0 %u 1\n", spec->host_uid);
	if (write_proc(pid, "uid_map", map) < 0)
		return al_fail(err, AL_ESANDBOX, errno, "vm: write uid_map (host uid %u)",
			       spec->host_uid);
	if (!j.drop_groups && write_proc(pid, "setgroups", "deny") < 0 && errno != ENOENT)
		return al_fail(err, AL_ESANDBOX, errno, "vm: write setgroups");
	snprintf(map, sizeof(map), "0 %u 1\n", spec->host_gid);
	if (write_proc(pid, "gid_map", map) < 0)
		return al_fail(err, AL_ESANDBOX, errno, "vm: write gid_map (host gid %u)",
			       spec->host_gid);
	if ((r = al_cgroup__attach(&s->cg, pid, true, err)) < 0)
		return r;
	if (write(s->sock[0], "g", 1) != 1)
		return al_fail(err, AL_ESANDBOX, errno, "vm: the jail is gone");
	if ((r = al_sandbox__read_report(s->status[0], stage_names, ST_N, "vm: jail: ", err)) < 0)
		return r;
	if (r != 0)
		return al_fail(err, AL_ESANDBOX, 0, "vm: jail setup ended without a report");
	/* the VMM holds its ends now */
	for (int t = FD_IMAGE; t < FD_N; t++)
		if (t != FD_RESULT)
			al_sandbox__close(&s->fds[t]);
	return 0;
}

struct vm_pump {
	int fd, stream;
	uint64_t *count;
};

static void vm_pump_read(struct vm_pump *p, const struct al_sandbox_spec *spec)
{
	char buf[65536];
	ssize_t n = read(p->fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		al_sandbox__close(&p->fd);
		return;
	}
	*p->count += (uint64_t)n;
	if (spec->output)
		spec->output(spec->output_ctx, p->stream, buf, (size_t)n);
}

/* Wait for the VMM, pumping the ports; the status line into line.  start is
 * the run's (its first boot's, for wall_ms); boot_ms how long this guest has
 * to come up.  The guest waits for the host's go ('g' on ctl) after its
 * first words, and gets it only within that time: a guest killed for being
 * late (*no_boot) has started nothing of the run. */
static void vm_wait(const struct al_sandbox_spec *spec, struct vm_state *s,
		    struct al_sandbox_result *res, uint64_t start, uint64_t boot_ms, char *line,
		    size_t *linelen, bool *killed, bool *no_boot)
{
	uint64_t booted = al_now_ns();
	/* the guest keeps the command's wall-clock limit itself, from its
	 * command's start; this one is the backstop against a guest that does
	 * not, from this VM's start */
	uint64_t hard = spec->limits.timeout_ms ? booted + (spec->limits.timeout_ms + GRACE_MS +
							    spec->limits.disk / (64u << 10)) *
								   1000000ull
						: 0;
	uint64_t boot_by = booted + boot_ms * 1000000ull;
	size_t uplen = 0; /* of UP_LINE, matched so far */
	bool go = false;  /* the guest was told to go on */
	uint64_t cancel_by = 0;
	struct vm_pump pumps[2] = { { s->out, 1, &res->stdout_bytes },
				    { s->err, 2, &res->stderr_bytes } };
	s->out = s->err = -1;
	bool exited = false;
	while (!exited || pumps[0].fd >= 0 || pumps[1].fd >= 0 || s->ctl >= 0) {
		int tmo = -1;
		uint64_t now = al_now_ns();
		uint64_t dl = hard;
		if (cancel_by && (!dl || cancel_by < dl))
			dl = cancel_by;
		if (!go && boot_by && (!dl || boot_by < dl))
			dl = boot_by;
		if (dl && !exited) {
			if (now >= dl) {
				kill(s->pid, SIGKILL); /* PID 1 of its namespace: all of it */
				*killed = true;
				if (dl == hard)
					res->timed_out = true;
				else if (dl == boot_by && !go && !res->cancelled)
					*no_boot = true;
				hard = cancel_by = boot_by = 0;
			} else {
				tmo = (int)((dl - now + 999999) / 1000000);
			}
		}
		if (exited)
			tmo = 0; /* drain what is there, then stop */
		int cancel = spec->cancel_fd > 0 && !exited && !res->cancelled && !*no_boot
				     ? spec->cancel_fd
				     : -1;
		struct pollfd p[5] = { { pumps[0].fd, POLLIN, 0 },
				       { pumps[1].fd, POLLIN, 0 },
				       { s->ctl, POLLIN, 0 },
				       { exited ? -1 : s->pidfd, POLLIN, 0 },
				       { cancel, POLLIN, 0 } };
		int k = poll(p, 5, tmo);
		if (k < 0 && errno != EINTR)
			break;
		if (k == 0 && exited)
			break;
		if (p[4].fd >= 0 && p[4].revents) {
			res->cancelled = true;
			/* the guest stops the command and still hands back its
			 * changes, as a cancelled namespace run does; one not yet
			 * told to go has nothing to hand back */
			if (!go || s->ctl < 0 || write(s->ctl, "c", 1) != 1)
				cancel_by = al_now_ns();
			else
				cancel_by = al_now_ns() + GRACE_MS * 1000000ull;
		}
		for (int i = 0; i < 2; i++)
			if (p[i].fd >= 0 && p[i].revents)
				vm_pump_read(&pumps[i], spec);
		if (p[2].fd >= 0 && p[2].revents) {
			char buf[512];
			ssize_t n = read(s->ctl, buf, sizeof(buf));
			if (n <= 0 && !(n < 0 && (errno == EINTR || errno == EAGAIN)))
				al_sandbox__close(&s->ctl);
			for (ssize_t i = 0; i < n; i++) {
				/* the first words must be UP_LINE: anything else
				 * is refused at the end, as a bad status line */
				if (uplen < UP_LEN) {
					if (buf[i] == UP_LINE[uplen]) {
						uplen++;
						continue;
					}
					uplen = UP_LEN + 1; /* never up: no go */
					*linelen = 513;
				}
				if (*linelen < 512)
					line[(*linelen)++] = buf[i];
				else
					*linelen = 513; /* too long: refused */
			}
			/* up: go on, if it still may (the kill above would
			 * otherwise race a guest that had already started) */
			if (uplen == UP_LEN && !go && !*killed && !res->cancelled &&
			    al_now_ns() < boot_by && s->ctl >= 0 && write(s->ctl, "g", 1) == 1)
				go = true;
		}
		if (p[3].fd >= 0 && p[3].revents) {
			int st;
			while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR)
				;
			exited = true;
			s->pid = 0;
		}
	}
	for (int i = 0; i < 2; i++)
		al_sandbox__close(&pumps[i].fd);
	res->wall_ms = (al_now_ns() - start) / 1000000;
	al_cgroup__stats(&s->cg, &res->oom, &res->peak_memory);
	res->oom = false; /* the VMM's: the command's is the guest's cgroup */
}

/* ---- unpacking the result, in a child with a tmpfs of its own --------------------------- */

static void unpack_child(int sock, int result, uint64_t size, const struct al_limits *l)
{
	struct al_error e = { 0 };
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
		al_fail(&e, AL_ESANDBOX, errno, "vm: unpack the result: user namespace");
		goto out;
	}
	snprintf(map, sizeof(map), "0 %u 1\n", uid);
	if (al_write_string("/proc/self/uid_map", map) < 0 ||
	    (al_write_string("/proc/self/setgroups", "deny") < 0 && errno != ENOENT) ||
	    (snprintf(map, sizeof(map), "0 %u 1\n", gid),
	     al_write_string("/proc/self/gid_map", map) < 0)) {
		al_fail(&e, AL_ESANDBOX, errno, "vm: unpack the result: id maps");
		goto out;
	}
	char opts[96];
	snprintf(opts, sizeof(opts), "mode=0700,size=%llu,nr_inodes=%llu",
		 (unsigned long long)((l->disk ? l->disk : 1ull << 30) + (16u << 20)),
		 (unsigned long long)((l->files ? l->files : 100000) + 64));
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0) {
		al_fail(&e, AL_ESANDBOX, errno, "vm: unpack the result: tmpfs");
		goto out;
	}
	int t = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int up = t >= 0 && mkdirat(t, "upper", 0755) == 0
			 ? openat(t, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			 : -1;
	if (up < 0) {
		al_fail(&e, AL_ESANDBOX, errno, "vm: unpack the result: tmpfs");
		goto out;
	}
	struct al_vm_caps caps = { .bytes = l->disk ? l->disk : size,
				   .entries = 2 * (l->files ? l->files : 100000) + 64 };
	if (al_vm__result_unpack(result, size, up, &caps, &e) == 0 && al_fd_send(sock, t) < 0)
		al_fail(&e, AL_ESANDBOX, errno, "vm: unpack the result: hand it over");
out:
	if (write(sock, &e, sizeof(e)) != (ssize_t)sizeof(e))
		_exit(1);
	_exit(0);
}

static int unpack_result(int result, uint64_t size, const struct al_limits *l, int *tmpfs,
			 struct al_error *err)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return al_fail(err, AL_ESANDBOX, errno, "vm: unpack the result");
	pid_t pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return al_fail(err, AL_ESANDBOX, errno, "vm: unpack the result");
	}
	if (pid == 0) {
		close(sv[0]);
		unpack_child(sv[1], result, size, l);
	}
	close(sv[1]);
	struct al_error e = { 0 };
	/* either the tmpfs then no error, or the error alone */
	int fd = -1;
	char peek;
	if (recv(sv[0], &peek, 1, MSG_PEEK) == 1 && peek == 'u')
		fd = al_fd_recv(sv[0], -1);
	ssize_t n = al_read_full(sv[0], &e, sizeof(e));
	close(sv[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(e) || !WIFEXITED(st) || WEXITSTATUS(st)) {
		if (fd >= 0)
			close(fd);
		return al_fail(err, AL_ESANDBOX, 0, "vm: unpacking the result failed");
	}
	if (e.code < 0) {
		if (fd >= 0)
			close(fd);
		*err = e;
		size_t m = strlen(err->msg);
		char tmp[sizeof(err->msg)];
		snprintf(tmp, sizeof(tmp), "vm: the guest's result stream was refused: %.*s",
			 (int)m, e.msg);
		memcpy(err->msg, tmp, sizeof(err->msg));
		return err->code;
	}
	if (fd < 0)
		return al_fail(err, AL_ESANDBOX, 0, "vm: unpacking the result failed");
	*tmpfs = fd;
	return 0;
}

/* The relay, then the proxy and the integrations' relay behind it (as a
 * namespace run stops them once its last process is dead). */
static void stop_services(const struct al_sandbox_spec *spec, struct al_vm_relay *relay,
			  struct al_sandbox_result *res)
{
	char why[128];
	const char *e = al_vm__relay_stop(relay, why, sizeof(why));
	if (e)
		snprintf(res->vm.relay_error, sizeof(res->vm.relay_error), "%s", e);
	if (spec->egress)
		al_net__proxy_stop(spec->egress);
	if (spec->integ)
		al_integ__relay_stop(spec->integ);
}

static int vm_run(const struct al_sandbox_spec *spec, struct al_sandbox_result *res,
		  struct al_error *err)
{
	if (spec->network == AL_NET_EGRESS && !spec->egress)
		return al_fail(err, AL_EUSAGE, 0, "sandbox: network egress without a proxy");
	struct al_hv_probe hp;
	driver->probe(&hp, spec->host_uid, spec->host_gid);
	if (!hp.binary_ok)
		return al_fail(err, AL_ESANDBOX, 0,
			       "vm: %s is missing (apt-get install qemu-system-x86; see 'airlock "
			       "doctor')",
			       hp.binary);
	if (!spec->argv || !spec->argv[0])
		return al_fail(err, AL_EUSAGE, 0, "sandbox: no command");
	struct vm_state s = { .out = -1,
			      .err = -1,
			      .ctl = -1,
			      .relay = -1,
			      .status = { -1, -1 },
			      .sock = { -1, -1 },
			      .pidfd = -1 };
	for (int i = 0; i < FD_N; i++)
		s.fds[i] = -1;
	const struct vm_state fresh = s;
	uint64_t start = al_now_ns(), boot_ms;
	int r = boot_timeout_ms(hp.kvm, &boot_ms, err);
	if (r < 0)
		return r;
	struct al_vm_relay *relay = NULL;
	char line[520];
	size_t linelen = 0;
	bool killed = false, no_boot = false;
	for (res->vm.boots = 1;; res->vm.boots++) {
		r = vm_start(spec, &s, &hp, err);
		/* the guest's connections to 127.0.0.1:AL_NET_PROXY_PORT and
		 * :AL_INTEG_PORT, to the same proxy and relay as a namespace
		 * run's */
		if (r == 0 && s.relay >= 0) {
			int chan = s.relay;
			s.relay = -1; /* the relay's from here */
			r = al_vm__relay_start(chan, spec->egress, spec->integ, &relay, err);
		}
		if (r < 0) {
			vm_release(&s);
			stop_services(spec, relay, res);
			return r;
		}
		linelen = 0;
		killed = no_boot = false;
		/* no_boot is never a cancelled run's (its cancel, still
		 * pending on cancel_fd, reaches the next VM's wait) */
		vm_wait(spec, &s, res, start, boot_ms, line, &linelen, &killed, &no_boot);
		if (!no_boot || res->vm.boots == BOOTS_MAX)
			break;
		/* it never came up: nothing of the run started in it, and its
		 * relay carried nothing (the agent starts it later) */
		al_vm__relay_stop(relay, NULL, 0);
		relay = NULL;
		vm_release(&s);
		s = fresh;
	}
	/* the VMM is gone: no stream outlives it */
	stop_services(spec, relay, res);
	res->vm.used = true;
	res->vm.kvm = hp.kvm;
	res->vm.vcpus = s.vcpus;
	res->vm.memory_mib = s.memory_mib;
	if (no_boot) {
		vm_release(&s);
		return al_fail(err, AL_ESANDBOX, 0,
			       "vm: the guest did not come up within %llu s, in %u boots (a host "
			       "too loaded, or a guest kernel that hangs; see 'airlock doctor' and "
			       "AIRLOCK_VM_BOOT_TIMEOUT)",
			       (unsigned long long)(boot_ms / 1000), res->vm.boots);
	}
	res->cgroup = al_cgroup__kind(&s.cg);
	struct al_vm_status st;
	struct al_error e = { 0 };
	if (killed) {
		/* killed before it could hand anything back: an empty result */
		res->exit_code = 137;
		memset(&st, 0, sizeof(st));
		st.exit_code = 137;
	} else if (linelen > 512 || al_vm__status_parse(line, linelen, &st, &e) < 0) {
		r = al_fail(err, AL_ESANDBOX, 0,
			    linelen ? "vm: the guest's status line was refused"
				    : "vm: the guest ended without a status (a crash or a "
				      "guest that is not airlock's; see 'airlock doctor')");
	} else if (st.error) {
		r = al_fail(err, AL_ESANDBOX, st.sys_errno, "vm: the guest agent failed: %s",
			    st.stage);
	}
	int tmpfs = -1;
	if (r == 0) {
		uint64_t size = killed ? 0 : s.result_size;
		if (killed) {
			/* nothing to read: unpack an empty stream (two zero blocks) */
			static const char zero[1024];
			if (pwrite(s.fds[FD_RESULT], zero, sizeof(zero), 0) ==
			    (ssize_t)sizeof(zero))
				size = sizeof(zero);
		}
		r = unpack_result(s.fds[FD_RESULT], size, &spec->limits, &tmpfs, err);
	}
	if (r == 0) {
		res->exit_code = st.exit_code;
		res->timed_out |= st.timed_out;
		/* the host's cancel is what counts: a guest cannot claim one */
		res->oom = st.oom;
		res->peak_memory = st.peak;
		res->disk_full = st.disk_full;
		res->files_full = st.files_full;
		res->cpu_user_ms = st.user_ms;
		res->cpu_sys_ms = st.sys_ms;
		res->max_rss_kb = st.max_rss_kb;
		res->vm.left_sockets = st.left_sockets;
		res->vm.left_deep = st.left_deep;
		res->vm.left_links = st.left_links;
		/* enforced by the guest's own cgroup (v2) and the VM's size */
		res->cgroup = "vm";
		res->memory_enforced = res->pids_enforced = res->cpu_enforced = true;
		/* the guest's CPUs; its agent gave the command a time namespace
		 * (a guest that could not has failed with stage timens) */
		res->cpus = s.vcpus;
		res->time_namespace = true;
		res->vm.boot_ms = st.boot_ms;
		res->vm.setup_ms = st.setup_ms;
		res->vm.collect_ms = st.collect_ms;
		res->upper_fd =
			openat(tmpfs, "upper", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (res->upper_fd < 0)
			r = al_fail(err, AL_EIO, errno, "vm: open the result");
	}
	if (tmpfs >= 0)
		close(tmpfs);
	vm_release(&s);
	return r;
}

static int vm_check(enum al_network network, struct al_error *err)
{
	(void)network; /* none, and egress through the relay to the host's proxy */
	(void)err;
	return 0;
}

const struct al_sandbox_backend al_sandbox__vm = {
	.name = "vm",
	.check = vm_check,
	.run = vm_run,
};

/* ---- airlock doctor -------------------------------------------------------------------- */

static void item(struct al_doctor_item *items, int *n, const char *check, bool ok, bool required,
		 const char *detail, const char *fix)
{
	struct al_doctor_item *it = &items[(*n)++];
	it->check = check;
	it->ok = ok;
	it->required = required;
	snprintf(it->detail, sizeof(it->detail), "%s", detail);
	snprintf(it->fix, sizeof(it->fix), "%s", ok ? "" : fix);
}

int al_sandbox_doctor_vm(const char *guest_dir, bool boot,
			 struct al_doctor_item items[AL_DOCTOR_MAX])
{
	int n = 0;
	struct al_hv_probe hp;
	uint32_t uid = geteuid() == 0 ? 1879048192u : geteuid(),
		 gid = geteuid() == 0 ? 1879048192u : getegid(); /* AL_SANDBOX_UID, run.h */
	driver->probe(&hp, uid, gid);
	char d[160];
	snprintf(d, sizeof(d), "%.100s %s", hp.binary, hp.binary_ok ? "is there" : "is missing");
	item(items, &n, "vm: QEMU", hp.binary_ok, true, d,
	     "apt-get install qemu-system-x86 (scripts/deps.sh), or set AIRLOCK_QEMU");
	bool guest = false;
	if (guest_dir) {
		char k[4300], i[4300];
		snprintf(k, sizeof(k), "%s/vmlinux", guest_dir);
		snprintf(i, sizeof(i), "%s/initramfs.cpio", guest_dir);
		guest = access(k, R_OK) == 0 && access(i, R_OK) == 0;
	}
	snprintf(d, sizeof(d), "%.100s/{vmlinux,initramfs.cpio} %s", guest_dir ? guest_dir : "?",
		 guest ? "are there" : "are missing");
	item(items, &n, "vm: guest kernel and initramfs", guest, true, d,
	     "build them: make (scripts/mkguest.sh; needs linux-image-cloud-amd64 and "
	     "busybox-static), or set AIRLOCK_GUEST_DIR");
	item(items, &n, "vm: acceleration", hp.kvm, false, hp.kvm_detail,
	     "TCG emulation works but takes ~2 s a run: for development and CI, not production; "
	     "give airlock a usable /dev/kvm");
	if (!boot || !hp.binary_ok || !guest)
		return n;
	/* one real VM: an empty image and workspace, a command that is not
	 * there: the guest must answer 127 */
	char tmpl[] = "/tmp/airlock-doctor-XXXXXX";
	bool ok = false;
	struct al_error err = { 0 };
	if (mkdtemp(tmpl)) {
		char a[64], b[64];
		snprintf(a, sizeof(a), "%s/i", tmpl);
		snprintf(b, sizeof(b), "%s/w", tmpl);
		int lowers = mkdir(a, 0755) == 0 && mkdir(b, 0755) == 0
				     ? open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
				     : -1;
		const char *argv[] = { "/airlock-doctor-probe", NULL };
		const char *envp[] = { "PATH=/bin", NULL };
		struct al_sandbox_spec spec = { .backend = "vm",
						.lowers_fd = lowers,
						.image_dir = "i",
						.workspace_dir = "w",
						.argv = argv,
						.envp = envp,
						.host_uid =
							geteuid() == 0 ? 1879048192u : geteuid(),
						.host_gid =
							geteuid() == 0 ? 1879048192u : getegid(),
						.best_effort_limits = true,
						.guest_dir = guest_dir };
		al_limits_default(&spec.limits);
		spec.limits.memory = 256 << 20;
		spec.limits.timeout_ms = 60000;
		spec.limits.disk = 16 << 20;
		struct al_sandbox_result res;
		uint64_t t0 = al_now_ns();
		if (lowers >= 0 && al_sandbox_run(&spec, &res, &err) == 0) {
			ok = res.exit_code == 127;
			close(res.upper_fd);
			snprintf(d, sizeof(d),
				 "a guest booted, answered and powered off in %llu ms",
				 (unsigned long long)((al_now_ns() - t0) / 1000000));
		} else {
			snprintf(d, sizeof(d), "%.150s",
				 err.msg[0] ? err.msg : "no VM could be made");
		}
		if (lowers >= 0)
			close(lowers);
		rmdir(a);
		rmdir(b);
		rmdir(tmpl);
	}
	item(items, &n, "vm: a run boots", ok, true, d,
	     "see the message; the host needs user namespaces too (the VMM's jail)");
	return n;
}
